#include "errshim/lint.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "errshim/config.hpp"
#include "errshim/preflight.hpp"
#include "errshim/render.hpp"
#include "chars.hpp"
#include "fix_values.hpp"
#include "pattern_risk.hpp"
#include "text_wrap.hpp"
#include "preflight_internal.hpp"
#include "render_internal.hpp"

namespace errshim {

namespace {

// Examples of one entry that a rival entry also claims (ignoring who wins).
using Claims = std::map<std::string, std::set<std::string>>;  // rival id -> this entry's examples it claims

void check_examples(const Catalog& catalog, const Entry& e, std::vector<Problem>& problems, std::size_t& won,
                    std::size_t& lost) {
  for (const MatchExample& ex : e.match_examples) {
    const MatchResult r = catalog.match(ex.text, ex.context);
    for (const std::string& p : r.problems) problems.push_back({ex.where, e.id, p});
    if (!r.diagnosis) {
      problems.push_back({ex.where, e.id, fmt::format("match example is not matched by any entry: '{}'", ex.text)});
      continue;
    }
    if (r.diagnosis->id() != e.id) {
      ++lost;
      const bool claimed = catalog.claims(e.id, ex.text);
      problems.push_back(
          {ex.where, e.id,
           claimed ? fmt::format("match example is won by '{}' (raise this entry's priority, or "
                                 "make one of them stricter)",
                                 r.diagnosis->id())
                   : fmt::format("match example is not matched by this entry (it goes to '{}')", r.diagnosis->id())});
      continue;
    }
    ++won;
    for (const Capture& want : ex.captures) {
      const std::string* got = r.diagnosis->capture(want.name);
      if (!got)
        problems.push_back({ex.where, e.id, fmt::format("expected capture '{}' is missing", want.name)});
      else if (*got != want.value)
        problems.push_back(
            {ex.where, e.id,
             fmt::format("capture '{}' is '{}', the example expects '{}'", want.name, *got, want.value)});
    }
  }
  for (const NoMatchExample& ex : e.no_match_examples)
    if (catalog.claims(e.id, ex.text))
      problems.push_back({ex.where, e.id, fmt::format("no_match example is claimed by this entry: '{}'", ex.text)});
}

// Regex shapes that backtrack catastrophically (pattern_risk.hpp).
void check_backtracking(const Entry& e, std::vector<Problem>& problems) {
  detail::append_backtracking_problems(e, problems);
}

// Work that grows faster than the text on near misses: matching such a
// message costs the host the step budget (and the entry then matches
// nothing there). Work is counted in regex steps (MatchResult::steps),
// not time, so the check is deterministic; it is linear when the work at
// four times the length stays within about four times the work.
void check_growth(const Catalog& catalog, const Entry& e, std::vector<Problem>& problems) {
  constexpr std::size_t kSmall = 1024, kLarge = 4096;
  constexpr std::size_t kFloor = 20'000;  // below this, constant costs dominate
  MatchOptions options;
  options.max_steps = 4'000'000;
  const std::vector<std::string> small = detail::near_misses(e, kSmall), large = detail::near_misses(e, kLarge);
  for (std::size_t k = 0; k < small.size() && k < large.size(); ++k) {
    const MatchResult a = catalog.match(small[k], {}, options), b = catalog.match(large[k], {}, options);
    bool gave_up = false;
    for (const std::string& p : b.problems)
      gave_up = gave_up || p.find("gave up") != std::string::npos || p.find("budget exhausted") != std::string::npos;
    if (gave_up || (b.steps > kFloor && b.steps > 8 * std::max<std::size_t>(a.steps, 1))) {
      problems.push_back({e.where, e.id,
                          fmt::format("matching a near miss of this entry (its literals with one left out, the "
                                      "others repeated) takes work that grows faster than the text: {} regex "
                                      "steps at {} bytes, {} at {} bytes{}; use possessive runs or atomic groups, "
                                      "or runs that cannot match the literal after them: '{}...'",
                                      a.steps, small[k].size(), b.steps, large[k].size(), gave_up ? " (gave up)" : "",
                                      small[k].substr(0, 60))});
      return;
    }
  }
}

// A message can carry user text (prompts), so a value a fix reads from it
// goes only through a capture whose regex admits nothing but a value's
// spelling, into a key errshim validates (fix_values.hpp). A literal value of
// such a key must pass the key's validator.
void check_fix_values(const Entry& e, std::vector<Problem>& problems) {
  for (std::size_t step = 0; step < e.remediation.size(); ++step) {
    const auto& fix = e.remediation[step].fix;
    if (!fix) continue;
    for (const auto* assignments : {&fix->set, &fix->requires_set}) {
      for (const auto& [key, value] : *assignments) {
        const std::string where = fmt::format("remediation step {}: fix key '{}'", step + 1, key);
        std::vector<detail::CaptureUse> uses;
        try {
          uses = detail::capture_uses(value);
        } catch (const std::exception& err) {
          problems.push_back({e.where, e.id, fmt::format("{}: {}", where, err.what())});
          continue;
        }
        if (uses.empty()) {
          std::string why;
          if (!detail::check_value(key, value, nullptr, why)) problems.push_back({e.where, e.id, where + ": " + why});
          continue;
        }
        if (!detail::key_rule(key))
          problems.push_back({e.where, e.id,
                              fmt::format("{} reads a value from the message, but errshim has no validator for that "
                                          "key (a message may carry user text): write a literal value, or use one "
                                          "of the keys it checks: {}",
                                          where, detail::known_keys())});
        for (const detail::CaptureUse& use : uses) {
          if (use.numeric()) continue;  // only digits reach the config
          const std::optional<std::string> body = detail::capture_body(e.pattern, use.name);
          const std::string loose = body ? detail::loose_capture(*body) : "its group is not in the pattern";
          if (loose.empty()) continue;
          problems.push_back(
              {e.where, e.id,
               fmt::format("{} writes capture '{}', whose regex '{}' is not tight enough to feed a config ({}): "
                           "give it a 'capture_patterns' entry that admits only the value's spelling, such as "
                           "{{{}: '\\d+'}} or '[a-z]+(?:[:][0-9]+)?' for a device",
                           where, use.name, body ? body->substr(0, 60) : "", loose, use.name)});
        }
      }
    }
  }
}

// examples.preflight against the entry's preflight conditions (defined below).
void check_preflight_examples(const Entry& e, std::vector<Problem>& problems);
// Notes for catalog authors (what could not be tried, what is left to do)
// belong in YAML comments: in a cause, trigger or remediation the user reads
// them as facts about their own failure.
void check_authoring_notes(const Entry& e, std::vector<Problem>& problems) {
  if (e.imported) return;  // generated and imported prose quotes upstream facts (a condition may say TODO)
  static constexpr std::string_view kPhrases[] = {
      "not reproducible",    "could not reproduce", "couldn't reproduce", "cannot be reproduced", "we could not",
      "we couldn't",         "we did not",          "we have not",        "on this build",        "to be checked",
      "this cpu-only build", "needs checking",      "to be written"};
  static constexpr std::string_view kMarkers[] = {"TODO", "FIXME", "XXX", "TBD"};
  auto scan = [&](std::string_view field, const std::string& text) {
    std::string lower(text);
    for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    std::string_view found;
    for (std::string_view p : kPhrases)
      if (found.empty() && lower.find(p) != std::string::npos) found = p;
    for (std::string_view m : kMarkers) {
      for (std::size_t at = text.find(m); found.empty() && at != std::string::npos; at = text.find(m, at + 1)) {
        const bool word_start = at == 0 || !detail::is_ident(text[at - 1]);
        const std::size_t end = at + m.size();
        if (word_start && (end == text.size() || !detail::is_ident(text[end]))) found = m;
      }
    }
    if (!found.empty())
      problems.push_back({e.where, e.id,
                          fmt::format("{} holds an authoring note ('{}'), which users would read as a fact about "
                                      "their error: state what happens, and move the note to a YAML comment",
                                      field, found)});
  };
  scan("cause", e.cause);
  scan("trigger", e.trigger);
  for (std::size_t i = 0; i < e.remediation.size(); ++i) {
    scan(fmt::format("remediation step {} text", i), e.remediation[i].text);
    if (e.remediation[i].fix) scan(fmt::format("remediation step {} fix reason", i), e.remediation[i].fix->reason);
  }
}

// `errshim list` shows each entry as its id and the first sentence of its
// cause, one entry per line when piped: a first sentence longer than this
// is a paragraph there, not a summary.
constexpr std::size_t kMaxSummaryColumns = 240;

// Written by hand only: a generated or imported cause states facts in a
// fixed shape (where, under what condition), and its rules are the
// extractor's and the importer's.
void check_summary(const Entry& e, std::vector<Problem>& problems) {
  if (e.imported) return;
  const std::string summary = first_sentence(e.cause);
  const std::size_t width = detail::columns(summary);
  if (width > kMaxSummaryColumns)
    problems.push_back({e.where, e.id,
                        fmt::format("the cause's first sentence takes {} columns, more than the {} of a line of "
                                    "'errshim list' (which shows it as the entry's summary): end it sooner ('{}...')",
                                    width, kMaxSummaryColumns, summary.substr(0, 60))});
}

// A generated entry (`generated: true`, tagged `generated` by the
// extractor) needs no hand-written remediation, but its rendered examples
// stand for it: the match examples are checked like any entry's, and it
// must name a near neighbour it does not claim (the extractor's one-letter
// change), or nothing shows that its template is not too loose.
void check_generated(const Entry& e, std::vector<Problem>& problems) {
  if (!e.imported || std::find(e.tags.begin(), e.tags.end(), "generated") == e.tags.end()) return;
  if (e.no_match_examples.empty())
    problems.push_back({e.where, e.id,
                        "generated entry has no no_match example: give it the near neighbour it must not claim "
                        "(regenerate the layer, or add one under examples.no_match)"});
}

}  // namespace

std::vector<Problem> lint(const Catalog& catalog) {
  // Matching compiles regexes lazily; lint compiles all of them, so a pattern
  // no example reaches is still checked.
  std::vector<Problem> problems = catalog.compile_all();
  const auto& entries = catalog.entries();

  // Which entries claim which other entries' examples. The claimants come
  // from the literal index, so this stays linear in examples times
  // claimants (asking every entry of every example was quadratic).
  std::map<std::string, Claims> claims;  // entry id -> claims on its examples
  for (const auto& ep : entries) {
    for (const MatchExample& ex : ep->match_examples)
      for (std::string_view rival : catalog.claimants(ex.text))
        if (rival != ep->id) claims[ep->id][std::string(rival)].insert(ex.text);
  }

  for (const auto& ep : entries) {
    const Entry& e = *ep;
    std::size_t won = 0, lost = 0;
    check_backtracking(e, problems);
    check_fix_values(e, problems);
    check_growth(catalog, e, problems);
    check_examples(catalog, e, problems, won, lost);
    check_preflight_examples(e, problems);
    check_authoring_notes(e, problems);
    check_summary(e, problems);

    check_generated(e, problems);

    if (lost > 0 && won == 0) {
      // Every example went elsewhere: the entry can never be the answer.
      problems.push_back({e.where, e.id,
                          "entry can never win: each of its match examples goes to another entry "
                          "(shadowed; give it a priority or a stricter template)"});
    }
    if (!e.capture_names.empty()) {
      bool pinned = false;
      for (const MatchExample& ex : e.match_examples) pinned = pinned || !ex.captures.empty();
      if (!pinned)
        problems.push_back({e.where, e.id,
                            fmt::format("no match example states the captures it expects ({}); list them on one "
                                        "example",
                                        fmt::join(e.capture_names, ", "))});
    }
    // Mutual overlap: each claims one of the other's examples, and nothing
    // but specificity and id order decides. Scopes that differ settle it too.
    auto mine = claims.find(e.id);
    if (mine == claims.end()) continue;
    for (const auto& [rival_id, texts] : mine->second) {
      if (rival_id < e.id) continue;  // report each pair once
      auto theirs = claims.find(rival_id);
      if (theirs == claims.end() || !theirs->second.count(e.id)) continue;
      const Entry* rival = catalog.find(rival_id);
      if (!rival || rival->priority != e.priority || !rival->applies_to.empty() || !e.applies_to.empty()) continue;
      problems.push_back({e.where, e.id,
                          fmt::format("overlaps with '{}': each claims one of the other's examples ('{}') and no "
                                      "priority settles it",
                                      rival_id, *texts.begin())});
    }
  }
  return problems;
}

namespace {

// A preflight condition is a claim about configs; its examples show it holds
// for one config that hits the error and not for a near one that does not
// (the false alarm it must not raise). Each example runs the entry alone.
void check_preflight_examples(const Entry& e, std::vector<Problem>& problems) {
  if (e.preflight.empty()) {
    if (!e.preflight_examples.empty())
      problems.push_back({e.preflight_examples.front().where, e.id,
                          "examples.preflight is given but the entry has no 'preflight' condition to check it "
                          "against (add the condition or drop the examples)"});
    return;
  }
  bool fires = false, quiet = false;
  for (const PreflightExample& ex : e.preflight_examples) {
    (ex.fires ? fires : quiet) = true;
    std::optional<ConfigTree> config, model, generation;
    try {
      if (!ex.config.empty()) config = ConfigTree::parse(ex.config, "config");
      if (!ex.model_config.empty()) model = ConfigTree::parse(ex.model_config, "model_config");
      if (!ex.generation_config.empty()) generation = ConfigTree::parse(ex.generation_config, "generation_config");
    } catch (const config_error& err) {
      problems.push_back({ex.where, e.id, fmt::format("preflight example config does not parse: {}", err.what())});
      continue;
    }
    PreflightConfigs in;
    in.config = config ? &*config : nullptr;
    in.model = model ? &*model : nullptr;
    in.generation = generation ? &*generation : nullptr;
    if (preflight_fires(e, in, ex.context) != ex.fires)
      problems.push_back({ex.where, e.id,
                          ex.fires ? "preflight example under 'fires' does not meet any preflight condition of the "
                                     "entry (fix the condition or the example config)"
                                   : "preflight example under 'quiet' meets a preflight condition of the entry: "
                                     "a false alarm (narrow the condition)"});
  }
  if (!fires || !quiet)
    problems.push_back({e.where, e.id,
                        fmt::format("preflight needs examples.preflight with at least one 'fires' and one 'quiet' "
                                    "config (missing: {})",
                                    !fires && !quiet ? "both"
                                    : !fires         ? "fires"
                                                     : "quiet")});
}

}  // namespace

}  // namespace errshim
