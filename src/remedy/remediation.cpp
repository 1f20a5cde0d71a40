#include "errshim/remediation.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>

#include <fmt/format.h>

#include "errshim/guard.hpp"
#include "errshim/metrics.hpp"
#include "errshim/normalize.hpp"
#include "errshim/render.hpp"
#include "fix_values.hpp"
#include "json.hpp"
#include "vocabulary.hpp"
#include "observer_internal.hpp"
#include "error_internal.hpp"
#include "remediation_internal.hpp"

namespace errshim {

std::string_view to_string(Mode m) noexcept {
  switch (m) {
    case Mode::off: return "off";
    case Mode::explain: return "explain";
    case Mode::suggest: return "suggest";
    case Mode::automatic: return "auto";
  }
  return "auto";
}

std::optional<Mode> parse_mode(std::string_view s) noexcept {
  for (Mode m : {Mode::off, Mode::explain, Mode::suggest, Mode::automatic})
    if (to_string(m) == s) return m;
  return std::nullopt;
}

std::string_view to_string(Decision::Outcome o) noexcept {
  switch (o) {
    case Decision::Outcome::applied: return "applied";
    case Decision::Outcome::suggested: return "suggested";
    case Decision::Outcome::refused: return "refused";
    case Decision::Outcome::failed: return "failed";
    case Decision::Outcome::explained: return "explained";
    case Decision::Outcome::succeeded: return "succeeded";
    case Decision::Outcome::gave_up: return "gave-up";
    case Decision::Outcome::passed_through: return "passed-through";
  }
  return "explained";
}

ActionRegistry& ActionRegistry::add(std::string name, Action action) {
  actions_[std::move(name)] = std::move(action);
  return *this;
}

const Action* ActionRegistry::find(std::string_view name) const noexcept {
  auto it = actions_.find(name);
  return it == actions_.end() ? nullptr : &it->second;
}

Mode Policy::mode_for(std::string_view entry_id) const {
  auto it = entry_modes.find(std::string(entry_id));
  return it == entry_modes.end() ? mode : it->second;
}

namespace {

std::string value_text(const std::optional<Value>& v) {
  if (!v) return "(absent)";
  return v->type == Value::Type::string ? detail::json_quote(v->text)
                                        : (v->type == Value::Type::null ? "null" : v->text);
}

// Whether a key named in a policy list ("dtype", "generation_config.dtype")
// refers to `path`: a bare name matches the last part at any depth.
bool key_matches(const std::string& spec, const KeyPath& path) {
  if (path.empty()) return false;
  if (spec.find('.') == std::string::npos) return spec == path.back();
  return spec == to_string(path);
}

bool any_key_matches(const std::set<std::string>& specs, const KeyPath& path) {
  return std::any_of(specs.begin(), specs.end(), [&](const std::string& s) { return key_matches(s, path); });
}

// Where a fix's key lives in this config. A dotted key is an explicit path;
// a bare key is looked up at any depth and must be found at most once.
struct Resolved {
  std::optional<KeyPath> path;
  std::string problem;
};

Resolved resolve_key(const ConfigAccess& config, const std::string& key, bool create_if_absent) {
  if (key.find('.') != std::string::npos) return {parse_key_path(key), {}};
  const std::vector<KeyPath> found = config.find(key);
  if (found.size() > 1) {
    std::vector<std::string> where;
    for (const auto& p : found) where.push_back(to_string(p));
    return {std::nullopt, fmt::format("key '{}' is ambiguous: it is found at {}; name the path in the fix or the "
                                      "config",
                                      key, fmt::join(where, " and "))};
  }
  if (found.size() == 1) return {found.front(), {}};
  if (create_if_absent) return {KeyPath{key}, {}};
  return {std::nullopt, {}};
}

bool same_value(const std::optional<Value>& have, const Value& want) {
  if (!have) return false;
  if (have->type == want.type) return have->text == want.text;
  // A config may spell a boolean or number as text ("true", "1").
  return have->text == want.text && (have->type == Value::Type::string || want.type == Value::Type::string);
}

bool same_diagnosis(const Diagnosis& a, const Diagnosis& b) { return a.id() == b.id() && a.captures == b.captures; }

// A fix value the policy refuses (it failed its key's check): the step is
// refused with this reason, and the next one tried.
struct value_refused : config_error {
  using config_error::config_error;
};

// The kind of config a fix is looking at: the caller's word (context key
// `config`, e.g. "config=generate-kwargs" from Python or the C API) first,
// then what the config knows of itself.
ConfigKind kind_of(const ConfigAccess& config, const Policy& policy) {
  if (const std::string* said = policy.context.get("config"))
    if (const auto k = parse_config_kind(*said)) return *k;
  return config.kind();
}

bool fix_lists(const std::vector<std::string>& keys, const std::string& fix_key, const KeyPath& path) {
  return std::any_of(keys.begin(), keys.end(),
                     [&](const std::string& k) { return k == "*" || k == fix_key || k == to_string(path); });
}

// The vocabulary `fix_key` is written in: the fix's own word, else the
// registry of well-known keys.
std::optional<detail::Vocabulary> vocabulary_for(const Fix& fix, const std::string& fix_key, const KeyPath& path) {
  for (const auto& [k, v] : fix.vocabulary)
    if (k == fix_key || k == to_string(path)) return detail::parse_vocabulary(v.text);
  return detail::vocabulary_of_key(to_string(path));
}

// A value of the same vocabulary the config already holds, which says how
// this config spells one: the key itself, else a sibling key of its kind.
std::optional<std::string> spelling_hint(const ConfigAccess& config, const KeyPath& path,
                                         detail::Vocabulary vocabulary) {
  const auto text_at = [&](const KeyPath& p) -> std::optional<std::string> {
    const std::optional<Value> v = config.get(p);
    if (v && v->type == Value::Type::string && !v->text.empty()) return v->text;
    return std::nullopt;
  };
  if (auto own = text_at(path)) return own;
  std::vector<std::string_view> siblings;
  switch (vocabulary) {
    case detail::Vocabulary::dtype:
      siblings = {"torch_dtype", "dtype", "compute_dtype", "cache_dtype", "kv_cache_dtype"};
      break;
    case detail::Vocabulary::device: siblings = {"device", "cache_device"}; break;
    default: break;
  }
  for (std::string_view k : siblings)
    for (const KeyPath& p : config.find(k))
      if (auto v = text_at(p)) return v;
  return std::nullopt;
}

// `raw` with its captures filled in, checked and typed for `path`. A value
// read from the message is text from production, possibly a user's prompt:
// where the config holds a key of the capture's own name, the message must
// report that key's value (else it is not about this config); the result
// must pass the key's validator; a key without one keeps the type the config
// gives it, never one guessed from the text.
Value checked_value(const KeyPath& path, const std::string& fix_key, const Value& raw, const Fix& fix,
                    const Diagnosis& d, const ConfigAccess& config, ConfigKind kind) {
  Value v = resolve_value(raw, d);
  const std::vector<detail::CaptureUse> uses = detail::capture_uses(raw);
  for (const detail::CaptureUse& use : uses) {
    const std::string* said = d.capture(use.name);
    // Lint holds a shipped catalog's captures to this; a catalog that was not
    // linted gets the same rule here, on the text itself.
    if (said && !use.numeric() && !detail::value_spelling(*said))
      throw value_refused(
          fmt::format("capture '{}' holds '{}', which is not spelled like a config value (letters, "
                      "digits and '_.:+-' only)",
                      use.name, said->substr(0, 80)));
    const std::vector<KeyPath> found = config.find(use.name);
    if (found.size() != 1) continue;
    const std::optional<Value> held = config.get(found.front());
    if (held && held->type != Value::Type::null && said && *said != held->text)
      throw value_refused(
          fmt::format("the message says {} is '{}' but the config holds {} = {}: the error is not "
                      "about this config",
                      use.name, said->substr(0, 80), to_string(found.front()), value_text(held)));
  }
  const std::string key = to_string(path);
  // Into the config's own vocabulary before anything else: a libtorch
  // message says `Float` where the config says "float32". A value that has
  // no spelling there refuses the step; it is never written as captured.
  if (const auto vocabulary = vocabulary_for(fix, fix_key, path); vocabulary && v.type == Value::Type::string) {
    const std::optional<std::string> hint = spelling_hint(config, path, *vocabulary);
    std::string why;
    const std::optional<std::string> mapped =
        detail::map_value(*vocabulary, v.text, hint ? &*hint : nullptr, kind, why);
    if (!mapped)
      throw value_refused(fmt::format("value '{}' for '{}' is refused: {}; it is not written as the message spelled it",
                                      v.text.substr(0, 80), key, why));
    v.text = *mapped;
  }
  if (detail::key_rule(key)) {
    std::string why;
    std::optional<Value> ok = detail::check_value(key, v, &config, why);
    if (!ok) throw value_refused(why);
    return *ok;
  }
  if (uses.empty()) return v;
  const std::optional<Value> have = config.get(path);
  if (!have || v.type != Value::Type::string || have->type == Value::Type::string || have->type == Value::Type::null)
    return v;
  std::optional<Value> typed = detail::as_type(have->type, v.text);
  if (!typed)
    throw value_refused(fmt::format("value '{}' for '{}' is refused: the config holds a {} there", v.text.substr(0, 80),
                                    key, have->type == Value::Type::boolean ? "boolean" : "number"));
  return *typed;
}

// Applies one remediation step's fix to `config`. Returns the changes, or
// throws config_error (the step is then refused or failed by the caller).
std::vector<Change> apply_fix(const Fix& fix, const Diagnosis& d, ConfigAccess& config, const Policy& policy) {
  std::vector<Change> changes;
  const ConfigKind kind = kind_of(config, policy);
  auto set_one = [&](const std::string& key, const Value& raw) {
    Resolved r = resolve_key(config, key, true);
    if (!r.path) throw config_error(r.problem);
    std::optional<Value> before = config.get(*r.path);
    if (!before) {
      // A key the config lacks: created only where the fix says so, and
      // never in a kind of config that is not read for it.
      if (detail::kind_reads(kind, to_string(*r.path)) == false)
        throw value_refused(
            fmt::format("'{}' is not read from a {} config, so creating it there would change "
                        "nothing; set it where it is read",
                        to_string(*r.path), to_string(kind)));
      if (!fix_lists(fix.create, key, *r.path))
        throw value_refused(
            fmt::format("the config has no key '{}', and this fix changes only keys the config has "
                        "(it does not say 'create')",
                        to_string(*r.path)));
    }
    const Value v = checked_value(*r.path, key, raw, fix, d, config, kind);
    Change c{*r.path, std::move(before), v, false};
    c.created = !c.before;
    config.set(*r.path, v);
    changes.push_back(std::move(c));
  };
  for (const auto& [key, v] : fix.set) set_one(key, v);
  for (const auto& [key, v] : fix.requires_set) set_one(key, v);
  for (const std::string& key : fix.remove) {
    Resolved r = resolve_key(config, key, false);
    if (!r.problem.empty()) throw config_error(r.problem);
    if (!r.path || !config.get(*r.path)) continue;  // nothing to remove
    Change c{*r.path, config.get(*r.path), std::nullopt};
    config.remove(*r.path);
    changes.push_back(std::move(c));
  }
  if (!fix.action.empty()) {
    const Action* action = policy.actions ? policy.actions->find(fix.action) : nullptr;
    if (!action) throw config_error(fmt::format("host action '{}' is not registered", fix.action));
    try {
      (*action)(config, d);
    } catch (const std::exception&) {
      throw;
    } catch (...) {
      // The host may throw anything; as a failed step it is reported and the
      // next step tried, instead of replacing the host's original error.
      throw config_error(fmt::format("host action '{}' threw an exception that is not a std::exception", fix.action));
    }
  }
  return changes;
}

// Why the policy rules a step out before touching the config, or "".
std::string policy_refusal(const Fix& fix, const Diagnosis& d, const ConfigAccess& config, const Policy& policy) {
  if (fix.safety == Safety::manual) return "this remedy needs a person (safety: manual)";
  if (const ConfigKind kind = kind_of(config, policy);
      kind != ConfigKind::unknown && !fix.config_kinds.empty() &&
      std::find(fix.config_kinds.begin(), fix.config_kinds.end(), to_string(kind)) == fix.config_kinds.end())
    return fmt::format("this fix applies to {} configs, and this is a {} config", fmt::join(fix.config_kinds, ", "),
                       to_string(kind));
  if (!policy.allowed.count(fix.safety))
    return fmt::format("safety class '{}' is not allowed by the policy", to_string(fix.safety));
  std::vector<std::string> keys;
  for (const auto& kv : fix.set) keys.push_back(kv.first);
  for (const auto& kv : fix.requires_set) keys.push_back(kv.first);
  for (const auto& k : fix.remove) keys.push_back(k);
  for (const std::string& key : keys) {
    Resolved r = resolve_key(config, key, true);
    if (!r.path) return r.problem;
    if (any_key_matches(policy.pinned_keys, *r.path))
      return fmt::format("key '{}' is pinned: the user set it on purpose", to_string(*r.path));
    if (any_key_matches(policy.deny_keys, *r.path))
      return fmt::format("key '{}' is denied by the policy", to_string(*r.path));
    if (!policy.allow_keys.empty() && !any_key_matches(policy.allow_keys, *r.path))
      return fmt::format("key '{}' is not in the policy's allowed keys", to_string(*r.path));
  }
  for (const auto& [key, v] : fix.conflicts) {
    Resolved r = resolve_key(config, key, false);
    if (r.path && same_value(config.get(*r.path), v))
      return fmt::format("conflicts with {} = {}", to_string(*r.path), value_text(v));
  }
  (void)d;
  return {};
}

Decision make_decision(const Diagnosis& d, Mode mode) {
  Decision x;
  x.time = std::chrono::system_clock::now();
  x.entry_id = d.id();
  x.mode = mode;
  return x;
}

FixChoice choose(const Diagnosis& d, ConfigAccess& scratch, const Policy& policy,
                 const std::set<std::pair<std::string, std::size_t>>& skip) {
  FixChoice choice;
  const Mode mode = policy.mode_for(d.id());
  if (!d.entry) return choice;
  const auto refuse_entry = [&](std::string reason) {
    Decision x = make_decision(d, mode);
    x.outcome = Decision::Outcome::refused;
    x.reason = std::move(reason);
    choice.decisions.push_back(std::move(x));
    return choice;
  };
  if (policy.deny_entries.count(d.id())) return refuse_entry("entry is denied by the policy");
  if (!policy.allow_entries.empty() && !policy.allow_entries.count(d.id()))
    return refuse_entry("entry is not in the policy's allowed entries");

  // Applying needs the error to be the root cause of what was raised, not
  // text inside it (an echoed prompt, a quoted string, a later chained
  // exception): such text is anyone's to write. Suggest mode still shows it.
  const std::string not_root = mode == Mode::automatic ? root_cause_problem(d) : std::string();
  const auto& steps = d.entry->remediation;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].fix || skip.count({d.id(), i})) continue;
    const Fix& fix = *steps[i].fix;
    Decision x = make_decision(d, mode);
    x.step = i;
    x.fix = fix;
    std::string why = not_root;
    if (why.empty()) {
      try {
        why = policy_refusal(fix, d, scratch, policy);
      } catch (const std::exception& e) {
        // A key the config cannot resolve (catalogs are checked at load; a
        // Fix built in code is not) rules this step out, not the others.
        why = e.what();
      }
    }
    const bool only_suggest = !policy.allowed.count(fix.safety) && policy.suggest_classes.count(fix.safety) &&
                              fix.safety != Safety::manual && why.rfind("safety class", 0) == 0;
    if (only_suggest) {
      // Show what it would change, on a throwaway clone, and go on looking
      // for a step that may be applied.
      std::unique_ptr<ConfigAccess> trial = scratch.clone();
      try {
        x.changes = apply_fix(fix, d, *trial, policy);
        x.outcome = Decision::Outcome::suggested;
        x.reason = fmt::format("safety class '{}' is suggested, not applied, by the policy", to_string(fix.safety));
      } catch (const value_refused& e) {
        x.outcome = Decision::Outcome::refused;
        x.reason = e.what();
      } catch (const std::exception& e) {
        x.outcome = Decision::Outcome::failed;
        x.reason = e.what();
      }
      choice.decisions.push_back(std::move(x));
      continue;
    }
    if (!why.empty()) {
      x.outcome = Decision::Outcome::refused;
      x.reason = std::move(why);
      choice.decisions.push_back(std::move(x));
      continue;
    }
    // The bundle goes to a clone first: it is kept only when all of it worked.
    std::unique_ptr<ConfigAccess> trial = scratch.clone();
    try {
      x.changes = apply_fix(fix, d, *trial, policy);
      scratch.assign_from(*trial);
    } catch (const value_refused& e) {
      x.outcome = Decision::Outcome::refused;
      x.reason = e.what();
      choice.decisions.push_back(std::move(x));
      continue;
    } catch (const std::exception& e) {
      x.outcome = Decision::Outcome::failed;
      x.reason = e.what();
      choice.decisions.push_back(std::move(x));
      continue;
    }
    x.outcome = mode == Mode::automatic ? Decision::Outcome::applied : Decision::Outcome::suggested;
    choice.suggest_only = mode != Mode::automatic;
    choice.step = i;
    choice.changes = x.changes;
    choice.decisions.push_back(std::move(x));
    return choice;
  }
  return choice;
}

}  // namespace

std::string to_json(const Change& c) { return detail::json_of(c); }

std::string to_json(const std::vector<Change>& changes) { return detail::json_of(changes); }

Value resolve_value(const Value& value, const Diagnosis& d) {
  if (value.type != Value::Type::string || value.text.find('{') == std::string::npos) return value;
  const std::string& s = value.text;
  const std::vector<detail::ValuePiece> pieces = detail::parse_fix_value(s);
  std::string out;
  for (const detail::ValuePiece& piece : pieces) {
    if (!piece.capture) {
      out += piece.literal;
      continue;
    }
    const detail::CaptureUse& use = *piece.capture;
    const std::string& name = use.name;
    const std::string* captured = d.capture(name);
    if (!captured)
      throw config_error(fmt::format("fix value '{}' uses capture '{}', which the message did not give", s, name));
    std::string v = *captured;
    const std::string& conv = use.conversion;
    if (conv == "lower" || conv == "upper") {
      for (char& c : v)
        c = static_cast<char>(conv == "lower" ? std::tolower(static_cast<unsigned char>(c))
                                              : std::toupper(static_cast<unsigned char>(c)));
    } else if (conv == "int") {
      const auto b =
          std::find_if(v.begin(), v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      const auto e = std::find_if(b, v.end(), [](char c) { return !std::isdigit(static_cast<unsigned char>(c)); });
      if (b == v.end()) throw config_error(fmt::format("capture '{}' = '{}' holds no number", name, v));
      v.assign(b, e);
    } else if (use.numeric()) {
      // "[1, 32, 7, 48]" -> element N
      const std::size_t n = std::stoul(conv.substr(3));
      std::vector<std::string> parts;
      std::string cur;
      for (char c : v) {
        if (std::isdigit(static_cast<unsigned char>(c))) {
          cur += c;
        } else if (!cur.empty()) {
          parts.push_back(cur);
          cur.clear();
        }
      }
      if (!cur.empty()) parts.push_back(cur);
      if (n >= parts.size()) throw config_error(fmt::format("capture '{}' = '{}' has no dimension {}", name, v, n));
      v = parts[n];
    }
    out += v;
  }
  // Only an explicit number conversion makes a number: a capture that
  // happens to hold digits stays text here, and the key it is written to
  // decides its type (checked_value).
  const bool one_number = pieces.size() == 1 && pieces[0].capture && pieces[0].capture->numeric();
  return {one_number ? Value::Type::integer : Value::Type::string, out};
}

std::string root_cause_problem(const Diagnosis& d) {
  if (d.segment_index != 0)
    return fmt::format(
        "not applied: the error was found in part {} of the message (a later chained error), not at "
        "its root cause; text there may come from a prompt",
        d.segment_index + 1);
  std::string_view before = std::string_view(d.segment).substr(0, std::min(d.offset, d.segment.size()));
  // Rust's todo!/unimplemented!/unreachable! put these before the message
  // they were given: the upstream's own text follows.
  for (std::string_view macro :
       {"not implemented: ", "not yet implemented: ", "internal error: entered unreachable code: "})
    if (before.substr(0, macro.size()) == macro) before.remove_prefix(macro.size());
  if (before.find('\n') != std::string_view::npos)
    return "not applied: the error text starts on a later line of the message, not at its start; text there may "
           "come from a prompt";
  // The message's own words may lead in ("This model does not support ...");
  // a label, a quote or a bracket means what follows is text it shows.
  constexpr std::size_t kMaxLeadIn = 80;
  const bool plain = std::all_of(before.begin(), before.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '_' || c == ',' || c == '.' || c == '-';
  });
  if (before.size() > kMaxLeadIn || !plain)
    return fmt::format(
        "not applied: the error text is preceded by '{}' in the message, so it is quoted or echoed "
        "text (a prompt, say), not the error raised",
        before.substr(0, 60));
  return {};
}

std::optional<Diagnosis> root_cause_diagnosis(const Catalog& catalog, const Diagnosis& d, const Context& context) {
  if (root_cause_problem(d).empty()) return std::nullopt;
  Normalized norm = normalize(d.raw);
  if (norm.segments.empty()) return std::nullopt;
  Segment& root = norm.segments.front();
  // The root segment matched on its own: the winner rule then cannot prefer
  // text from later segments, and what wins must still start that message.
  // Its segment must be that whole message again, so "the start" means the
  // start of the root message, not of a wrapper found inside it.
  std::optional<Diagnosis> own = catalog.diagnose(root.text, context);
  if (!own || own->segment != root.text || !root_cause_problem(*own).empty()) return std::nullopt;
  own->exception_class = std::move(root.exception_class);
  own->raw = d.raw;
  return own;
}

FixChoice choose_fix(const Diagnosis& diagnosis, ConfigAccess& scratch, const Policy& policy) {
  return choose(diagnosis, scratch, policy, {});
}

FixChoice choose_fix(const Diagnosis& diagnosis, ConfigAccess& scratch, const Policy& policy,
                     const std::set<std::size_t>& skip_steps) {
  std::set<std::pair<std::string, std::size_t>> skip;
  for (std::size_t step : skip_steps) skip.insert({diagnosis.id(), step});
  return choose(diagnosis, scratch, policy, skip);
}

std::string Decision::to_json() const { return detail::json_of(*this); }

std::vector<Change> RemediationReport::applied_changes() const {
  std::vector<Change> all;
  for (const Decision& d : decisions)
    if (d.outcome == Decision::Outcome::applied) all.insert(all.end(), d.changes.begin(), d.changes.end());
  return all;
}

std::string RemediationReport::to_json() const {
  std::string out;
  detail::JsonWriter w(out);
  w.begin_object().field("calls", calls).key("decisions").begin_array();
  for (const Decision& d : decisions) detail::write_json(w, d);
  w.end_array().end_object();
  return out;
}

remediation_error::remediation_error(Diagnosis diagnosis, RemediationReport report, std::string summary)
    : translated_error(std::move(diagnosis)),
      report_(std::make_shared<const RemediationReport>(std::move(report))),
      summary_(std::move(summary)) {}

namespace detail {

RemediationSession::RemediationSession(const Catalog& catalog, const Policy& policy)
    : catalog_(catalog), policy_(policy) {}

void RemediationSession::record(Decision d) {
  d.attempt = report_.calls;
  // Observers must not break the host's recovery: their exceptions stop here.
  try {
    if (policy_.on_decision) policy_.on_decision(d);
  } catch (...) {}
  try {
    if (policy_.metrics) policy_.metrics->count(d);
  } catch (...) {}
  report_.decisions.push_back(std::move(d));
}

void RemediationSession::give_up(const Diagnosis& d, std::string reason) {
  Decision x = make_decision(d, policy_.mode_for(d.id()));
  x.outcome = Decision::Outcome::gave_up;
  x.reason = reason;
  record(std::move(x));
  std::string summary = fmt::format("{} [errshim gave up after {} fix(es): {}]", one_line_summary(d), applied_, reason);
  throw remediation_error(d, std::move(report_), std::move(summary));
}

void RemediationSession::on_success() {
  if (applied_ == 0) return;  // nothing to report on a first-time success
  Decision x;
  x.time = std::chrono::system_clock::now();
  x.entry_id = last_ ? last_->id() : std::string();
  x.mode = last_ ? policy_.mode_for(last_->id()) : policy_.mode;
  x.outcome = Decision::Outcome::succeeded;
  x.changes = report_.applied_changes();
  record(std::move(x));
}

bool RemediationSession::on_failure(ConfigAccess& next) {
  const std::exception_ptr error = std::current_exception();
  report_.errors.push_back(error);

  std::optional<Diagnosis> d;
  try {
    std::rethrow_exception(error);
  } catch (const translated_error& t) {
    d = t.diagnosis();  // a guard further in already explained it
  } catch (...) {
    const std::string text = exception_text(error);
    const auto start = std::chrono::steady_clock::now();
    MatchResult m = catalog_.match(text, policy_.context);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    d = std::move(m.diagnosis);
    const MatchEvent event{text, d ? &*d : nullptr, elapsed, LookupSite::remediate, &m.problems};
    // Like on_decision: an observer's exception must not replace the host's error.
    try {
      if (policy_.on_match) policy_.on_match(event);
    } catch (...) {}
    detail::report_lookup(event);
  }

  if (!d || policy_.mode_for(d->id()) == Mode::off) {
    if (d) {
      Decision x = make_decision(*d, Mode::off);
      x.outcome = Decision::Outcome::passed_through;
      record(std::move(x));
    }
    if (last_ && applied_ > 0) {
      // A fix got past the first error and the call then failed with one
      // errshim does not know: report it with the history, not bare.
      Decision x = make_decision(*last_, policy_.mode_for(last_->id()));
      x.outcome = Decision::Outcome::gave_up;
      x.reason = "after the fix the call failed with an error errshim does not recognise: " +
                 exception_text(error).substr(0, 300);
      record(x);
      throw remediation_error(
          *last_, std::move(report_),
          fmt::format("{} [errshim applied {} fix(es); then: {}]", one_line_summary(*last_), applied_, x.reason));
    }
    std::rethrow_exception(error);
  }

  if (policy_.mode_for(d->id()) == Mode::automatic) {
    try {
      if (auto root = root_cause_diagnosis(catalog_, *d, policy_.context)) d = std::move(root);
    } catch (const std::exception&) {
      // Out of memory at worst: keep the first diagnosis, whose fixes choose() refuses.
    }
  }
  const Mode mode = policy_.mode_for(d->id());
  if (last_ && last_was_fixed_ && same_diagnosis(*d, *last_))
    give_up(*d, "the fix did not help: the same error came back");
  last_ = d;
  last_was_fixed_ = false;

  if (mode == Mode::explain) {
    Decision x = make_decision(*d, mode);
    x.outcome = Decision::Outcome::explained;
    record(std::move(x));
    throw remediation_error(*d, std::move(report_), one_line_summary(*d));
  }
  if (applied_ >= policy_.max_retries) give_up(*d, fmt::format("the retry bound ({}) is reached", policy_.max_retries));

  // A config type of the host's may throw anything while a fix is chosen;
  // give up with the original error rather than let that replace it. (Given
  // up outside the handler, so the build's error is the one nested.)
  FixChoice choice;
  std::string choose_failed;
  try {
    choice = choose(*d, next, policy_, tried_);
  } catch (const std::exception& e) {
    choose_failed = e.what();
  } catch (...) {
    choose_failed = "an exception that is not a std::exception";
  }
  if (!choose_failed.empty()) give_up(*d, "choosing a fix failed: " + choose_failed);
  for (Decision& x : choice.decisions) record(std::move(x));
  if (!choice.step) give_up(*d, "no remediation step is allowed by the policy and usable on this config");
  if (choice.suggest_only) {
    throw remediation_error(*d, std::move(report_),
                            fmt::format("{} [errshim suggests step {}; mode {} changes nothing]", one_line_summary(*d),
                                        *choice.step + 1, to_string(mode)));
  }
  tried_.insert({d->id(), *choice.step});
  ++applied_;
  last_was_fixed_ = true;
  return true;
}

}  // namespace detail
}  // namespace errshim
