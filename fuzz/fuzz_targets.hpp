// The bodies of the fuzz targets, shared by the libFuzzer binaries (fuzz/*.cpp)
// and by the regression test that replays saved inputs in the normal suite
// (tests/fuzz_regression_test.cpp). Each body feeds one input to one part of
// errshim and checks what must hold for any input; a broken property calls
// ERRSHIM_FUZZ_FAIL (abort under libFuzzer, so the input is saved as a crash;
// a test failure in the suite). An exception escaping a body is a finding too:
// each catches only the exceptions its API documents.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/regex.hpp>
#include <errshim/errshim.hpp>
#include <errshim/normalize.hpp>

#include "pattern_risk.hpp"
#include "snapshot.hpp"
#include "utf8.hpp"
#include "template.hpp"

#if __has_include(<errshim/importer.hpp>)
#include <errshim/importer.hpp>
#include <errshim/lint.hpp>
#include <errshim/render.hpp>
#define ERRSHIM_FUZZ_HAVE_IMPORTER 1
#else
#define ERRSHIM_FUZZ_HAVE_IMPORTER 0
#endif

#ifndef ERRSHIM_FUZZ_FAIL
#define ERRSHIM_FUZZ_FAIL(message)                                            \
  do {                                                                        \
    std::fprintf(stderr, "errshim fuzz: %s\n", std::string(message).c_str()); \
    std::abort();                                                             \
  } while (false)
#endif

namespace errshim::fuzz {

inline std::string_view bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits an input at its first NUL: two texts from one byte string.
inline std::pair<std::string_view, std::string_view> split_nul(std::string_view in) {
  const std::size_t nul = in.find('\0');
  if (nul == std::string_view::npos) return {in, {}};
  return {in.substr(0, nul), in.substr(nul + 1)};
}

// Text a YAML file holds as it is: strict UTF-8 (yaml-cpp rewrites an
// overlong form as the character it spells) without the noncharacters
// U+FFFE and U+FFFF, which YAML does not allow and yaml-cpp writes as U+FFFD.
inline bool valid_utf8(std::string_view s) {
  return detail::valid_utf8(s) && s.find("\xEF\xBF\xBE") == std::string_view::npos &&
         s.find("\xEF\xBF\xBF") == std::string_view::npos;
}

// ---------------------------------------------------------------- catalog

// What every catalog_error must carry: at least one problem, each with a
// message (and, for YAML, a position that is not negative).
inline void check_problems(const catalog_error& e, bool yaml_positions) {
  if (e.problems().empty()) ERRSHIM_FUZZ_FAIL("catalog_error without a problem");
  for (const Problem& p : e.problems()) {
    if (p.message.empty()) ERRSHIM_FUZZ_FAIL("a problem without a message");
    if (yaml_positions && (p.where.line < 0 || p.where.column < 0))
      ERRSHIM_FUZZ_FAIL("a problem with a negative position");
    (void)p.to_string();
  }
}

// YAML text -> CatalogBuilder::add_yaml().build(). Only catalog_error may
// come out; a catalog that builds answers its own examples without throwing
// and, when small, goes through lint (which runs the backtracking detector).
inline void catalog_one(const std::uint8_t* data, std::size_t size) {
  CatalogPtr catalog;
  try {
    catalog = CatalogBuilder().add_yaml(std::string(bytes(data, size)), "fuzz.yaml").build();
  } catch (const catalog_error& e) {
    check_problems(e, true);
    return;
  }
  if (catalog->size() <= 8) {
    for (const Problem& p : lint(*catalog)) (void)p.to_string();
  }
  for (const auto& e : catalog->entries()) {
    for (const MatchExample& ex : e->match_examples) (void)catalog->match(ex.text, ex.context);
    if (catalog->find(e->id) != e.get()) ERRSHIM_FUZZ_FAIL("find() does not return the entry for its own id");
  }
}

// ---------------------------------------------------------------- snapshot

// Bytes -> sealed as a snapshot body (this errshim's header, a valid
// checksum), so the reader's every other check is reached, then
// CatalogBuilder::add_snapshot().build(). Only catalog_error may come out,
// each problem naming the snapshot; a catalog that builds answers its own
// examples and its literals without throwing, and writes back a snapshot
// that loads as the same entries.
inline void snapshot_one(const std::uint8_t* data, std::size_t size) {
  CatalogPtr catalog;
  try {
    catalog = CatalogBuilder().add_snapshot(detail::seal_snapshot(bytes(data, size)), "fuzz.snapshot").build();
  } catch (const catalog_error& e) {
    check_problems(e, false);  // a snapshot's entries carry whatever positions it holds
    return;
  }
  for (const auto& e : catalog->entries()) {
    for (const MatchExample& ex : e->match_examples) (void)catalog->match(ex.text, ex.context);
    (void)catalog->match(e->template_text);
    if (catalog->find(e->id) == nullptr) ERRSHIM_FUZZ_FAIL("find() misses an entry's own id");
  }
  const std::string written = catalog->snapshot();
  const CatalogPtr again = CatalogBuilder().add_snapshot(written, "again.snapshot").build();
  if (again->size() != catalog->size()) ERRSHIM_FUZZ_FAIL("a snapshot written back loads as another number of entries");
  // Read lazily (as generated layers are), every entry decodes to the one written.
  std::vector<Problem> problems;
  const auto lazy = detail::LazySnapshot::read(written, "again.snapshot", problems);
  if (!lazy || lazy->size() != catalog->size()) ERRSHIM_FUZZ_FAIL("a snapshot written back does not read lazily");
  std::vector<std::shared_ptr<const Entry>> decoded;
  for (std::size_t i = 0; i < lazy->size(); ++i) {
    std::string problem;
    decoded.push_back(lazy->decode(i, problem));
    if (!decoded.back()) ERRSHIM_FUZZ_FAIL("an entry of a snapshot written back does not decode");
  }
  if (detail::write_snapshot(decoded, lazy->plan()) != written)
    ERRSHIM_FUZZ_FAIL("a lazily read snapshot writes back other bytes");
}

// ---------------------------------------------------------------- template

// Template text [NUL comma-separated anonymous names] -> compile_template.
// Only template_error may come out, at an offset inside the template; the
// regex it emits compiles with Boost and is never an exponential shape (a
// template's regex is lazy runs separated by literal text). The raw input is
// also given to the backtracking detector as a regex, which must not crash.
inline void template_one(const std::uint8_t* data, std::size_t size) {
  const auto [tmpl, names_text] = split_nul(bytes(data, size));
  (void)detail::backtracking_risk(tmpl);
  std::vector<std::string> names;
  for (std::size_t start = 0; start < names_text.size();) {
    std::size_t comma = names_text.find(',', start);
    if (comma == std::string_view::npos) comma = names_text.size();
    names.emplace_back(names_text.substr(start, comma - start));
    start = comma + 1;
  }
  detail::CompiledTemplate compiled;
  try {
    compiled = detail::compile_template(tmpl, names);
  } catch (const detail::template_error& e) {
    if (e.offset > tmpl.size()) ERRSHIM_FUZZ_FAIL("template_error offset past the end of the template");
    return;
  }
  try {
    const boost::regex re(compiled.regex, boost::regex::perl);  // as matcher.cpp compiles it
  } catch (const boost::regex_error& e) {
    ERRSHIM_FUZZ_FAIL("template regex does not compile: " + std::string(e.what()) + " in " + compiled.regex);
  }
  const auto risk = detail::backtracking_risk(compiled.regex);
  if (risk && risk->kind != detail::BacktrackingRisk::Kind::adjacent_quantifiers)
    ERRSHIM_FUZZ_FAIL("template regex is an exponential shape: " + risk->why + " in " + compiled.regex);
}

// ---------------------------------------------------------------- match

// Message bytes -> normalise, then match against the embedded catalog (and
// render what matched). Nothing may throw; the work stays inside the bounds
// normalize.hpp states.
inline void match_one(const std::uint8_t* data, std::size_t size) {
  const std::string_view message = bytes(data, size);
  const Normalized norm = normalize(message);
  if (norm.segments.size() > kMaxSegments) ERRSHIM_FUZZ_FAIL("more segments than kMaxSegments");
  for (const Segment& s : norm.segments)
    if (s.text.size() > kMaxSegmentBytes) ERRSHIM_FUZZ_FAIL("a segment over kMaxSegmentBytes");
  const CatalogPtr catalog = Catalog::embedded();
  const MatchResult r = catalog->match(message);
  if (r.diagnosis) {
    const Diagnosis& d = *r.diagnosis;
    if (!d.entry) ERRSHIM_FUZZ_FAIL("a diagnosis without an entry");
    if (d.raw.size() > kMaxInputBytes) ERRSHIM_FUZZ_FAIL("diagnosis keeps more than kMaxInputBytes");
    if (d.captures.size() != d.entry->capture_names.size()) ERRSHIM_FUZZ_FAIL("captures do not follow capture_names");
    (void)to_text(d);
    (void)to_json(d);
  }
  const std::optional<Diagnosis> again = diagnose(message);
  if (again.has_value() != r.diagnosis.has_value() || (again && again->id() != r.diagnosis->id()))
    ERRSHIM_FUZZ_FAIL("diagnose() and Catalog::match() disagree");
}

// ---------------------------------------------------------------- import

// JSON records -> import_records. Only import_error may come out; text it
// returns is a catalog that loads (the importer checks every entry).
inline void import_one(const std::uint8_t* data, std::size_t size) {
#if ERRSHIM_FUZZ_HAVE_IMPORTER
  std::string yaml;
  try {
    yaml = import_records(bytes(data, size), "fuzz.json");
  } catch (const import_error&) {
    return;
  }
  try {
    (void)CatalogBuilder().add_yaml(yaml, "imported.yaml").build();
  } catch (const catalog_error& e) {
    ERRSHIM_FUZZ_FAIL("import_records returned a catalog that does not load: " + std::string(e.what()));
  }
#else
  (void)data;
  (void)size;
#endif
}

// ---------------------------------------------------------------- config fix

// A small catalog whose fixes use every kind of change: set with captured
// values and conversions, remove, bundles with conflicts, a host action.
inline const CatalogPtr& config_catalog() {
  static const CatalogPtr catalog = CatalogBuilder()
                                        .add_yaml(R"(schema: 1
library: fuzz
defaults: {repo: example/repo, commit: 0123456789abcdef0123456789abcdef01234567}
entries:
  - id: fuzz.kv
    template: kv_cache_enabled=true is not supported
    source: {path: a.rs, line: 1}
    error_class: E
    kind: unsupported-feature
    cause: c
    trigger: t
    remediation:
      - text: cache off
        fix: {set: {kv_cache_enabled: false}, create: true, safety: slower}
      - text: remove it
        fix: {remove: [kv_cache_enabled, generation_config.cache], safety: safe}
    examples: {match: [kv_cache_enabled=true is not supported]}
  - id: fuzz.dims
    template: 'head dim {q_head} of {:?} with {dtype} in {where}'
    captures: [dims]
    source: {path: b.rs, line: 2}
    error_class: E
    kind: validation
    cause: c
    trigger: t
    remediation:
      - text: copy the captures
        fix:
          set: {head_dim: '{q_head:int}', dims.second: '{dims:dim1}', dtype: '{dtype:lower}', where: 'at {where:upper}'}
          requires: {model.attention.kind: '{dtype}'}
          conflicts: {strict: true}
          create: true
          safety: safe
      - text: act
        fix: {action: rewrite, safety: safe}
    examples: {match: ['head dim 48 of [1, 2] with F16 in x']}
  - id: fuzz.nested
    template: 'bad key {key} at {path}'
    source: {path: c.py, line: 3}
    error_class: ValueError
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: set the named key
        fix: {set: {'{key}': '{path}', a.b.c: 1, list.0: x}, create: true, safety: changes-output}
    examples: {match: ['bad key k at p']}
)",
                                                  "fuzz-config.yaml")
                                        .build();
  return catalog;
}

// [message NUL] config text -> ConfigTree::parse, then choose_fix and a
// remediate() whose build function fails once with the message. The
// caller's config never changes; a config with a fix applied dumps to text
// that parses again and holds every value the fix set.
inline void config_fix_one(const std::uint8_t* data, std::size_t size) {
  auto [message, config_text] = split_nul(bytes(data, size));
  if (config_text.empty()) std::swap(message, config_text);
  std::optional<ConfigTree> parsed;
  try {
    parsed = ConfigTree::parse(config_text, "fuzz-config");
  } catch (const config_error&) {
    return;
  }
  const ConfigTree& config = *parsed;
  const std::string before = config.dump();
  if (before != config_text) ERRSHIM_FUZZ_FAIL("an untouched config was not written back as given");
  const CatalogPtr& catalog = config_catalog();

  std::optional<Diagnosis> d = catalog->diagnose(message);
  if (!d) {
    // No entry recognised the message: give an entry the message's text as
    // every capture, so arbitrary captured values reach the fixes.
    Diagnosis made;
    made.entry = catalog->entries()[message.size() % catalog->size()];
    for (const std::string& name : made.entry->capture_names) made.captures.push_back({name, std::string(message)});
    d = std::move(made);
  }
  ActionRegistry actions;
  actions.add("rewrite", [](ConfigAccess& c, const Diagnosis&) {
    c.set({"rewritten"}, Value{Value::Type::boolean, "true"});
  });
  Policy policy;
  policy.allowed = {Safety::safe, Safety::slower, Safety::changes_output};
  policy.actions = &actions;

  ConfigTree scratch = config;
  const FixChoice choice = choose_fix(*d, scratch, policy);
  if (config.dump() != before) ERRSHIM_FUZZ_FAIL("choose_fix changed the caller's config");
  const bool utf8_all = valid_utf8(config_text) && valid_utf8(message);
  // The checks below read block YAML whose every line is a key, a
  // list item, a comment or blank: on malformed documents yaml-cpp accepts
  // (a stray word at the end) the splice may give way to the emitter.
  bool well_formed =
      config_text.find('\0') == std::string_view::npos && config_text.find("\xEF\xBB\xBF", 1) == std::string_view::npos;
  for (std::size_t at = 0; at < config_text.size() && well_formed;) {
    const std::size_t nl = std::min(config_text.find('\n', at), config_text.size());
    std::string_view line = config_text.substr(at, nl - at);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    well_formed = line.empty() || line.front() == '#' || line.front() == '-' || line.front() == '{' ||
                  line.front() == '[' || line.back() == ':' || line.find(": ") != std::string_view::npos;
    at = nl + 1;
  }
  // yaml-cpp reads invalid UTF-8 as U+FFFD, so its positions are not
  // bytes; control characters YAML does not allow are left to the emitter.
  const bool printable = std::none_of(config_text.begin(), config_text.end(), [](char c) {
    return (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f;
  });
  // A quoted scalar left open on its line (yaml-cpp reads it on to the
  // next lines, even to the end) is beyond the splice: the emitter writes it.
  bool quotes_close = true;
  for (std::size_t at = 0; at < config_text.size() && quotes_close;) {
    const std::size_t nl = std::min(config_text.find('\n', at), config_text.size());
    const std::string_view line = config_text.substr(at, nl - at);
    quotes_close =
        std::count(line.begin(), line.end(), '"') % 2 == 0 && std::count(line.begin(), line.end(), '\'') % 2 == 0;
    at = nl + 1;
  }
  const bool plain = utf8_all && well_formed && printable && quotes_close;
  std::optional<std::string> written;
  if (choice.step) {
    try {
      written = scratch.dump();
    } catch (const config_error& e) {
      // Refused: a layout errshim cannot write so that it reads back as
      // changed. The write-back contract is that, or a text that does; a
      // plain config is always written.
      if (plain)
        ERRSHIM_FUZZ_FAIL("a fixed plain config was not written: " + std::string(e.what()) + "\n--- config:\n" +
                          std::string(config_text));
    }
  }
  if (written) {
    const std::string& out = *written;
    std::optional<ConfigTree> again;
    try {
      again = ConfigTree::parse(out, "fixed");
    } catch (const config_error& e) {
      ERRSHIM_FUZZ_FAIL("a fixed config does not parse again: " + std::string(e.what()) + "\n--- config:\n" +
                        std::string(config_text) + "\n--- fixed:\n" + out);
    }
    // It reads back as the tree the fix made, not only at the keys it set.
    if (!again->same_values(scratch))
      ERRSHIM_FUZZ_FAIL("a fixed config does not read back as the fixed tree\n--- config:\n" +
                        std::string(config_text) + "\n--- fixed:\n" + out);
    // One scalar changed in place: the bytes around it are the original's,
    // so what differs lies on one line (checked where the old value's text
    // is written once, on one line, and no alias or block scalar is near).
    if (plain && choice.changes.size() == 1 && choice.changes[0].before && choice.changes[0].after &&
        choice.changes[0].before->type != Value::Type::null &&
        choice.changes[0].before->text.find('\n') == std::string::npos && !choice.changes[0].before->text.empty() &&
        config_text.find_first_of("*|>&") == std::string_view::npos) {
      const std::string& old_text = choice.changes[0].before->text;
      const std::size_t first = config_text.find(old_text);
      if (first != std::string_view::npos && config_text.find(old_text, first + 1) == std::string_view::npos) {
        std::size_t p = 0, q = 0;
        while (p < out.size() && p < config_text.size() && out[p] == config_text[p]) ++p;
        while (q < out.size() - p && q < config_text.size() - p &&
               out[out.size() - 1 - q] == config_text[config_text.size() - 1 - q])
          ++q;
        const std::string_view changed = config_text.substr(p, config_text.size() - p - q);
        if (changed.find('\n') != std::string_view::npos)
          ERRSHIM_FUZZ_FAIL("a fix of one value rewrote other lines\n--- config:\n" + std::string(config_text) +
                            "\n--- fixed:\n" + out);
      }
    }
    for (const Change& c : choice.changes) {
      const std::optional<Value> now = again->get(c.path);
      // A value or key that is not valid UTF-8 (a capture from a binary
      // message, a config that is not UTF-8) may come back with U+FFFD in
      // place of the bad bytes: yaml-cpp writes quoted scalars that way.
      bool utf8 = !c.after || valid_utf8(c.after->text);
      for (const std::string& part : c.path) utf8 = utf8 && valid_utf8(part);
      if (!utf8) continue;
      if (c.after && (!now || now->text != c.after->text))
        ERRSHIM_FUZZ_FAIL("a fixed config lost the value of " + to_string(c.path) + "\n--- fixed:\n" + out);
    }
  }

  int calls = 0;
  const std::string thrown =
      std::string(message.empty() ? std::string_view("kv_cache_enabled=true is not supported") : message);
  try {
    auto r = remediate(
        config,
        [&](const ConfigTree&) {
          if (++calls == 1) throw std::runtime_error(thrown);
          return calls;
        },
        policy, *catalog);
    if (r.report.calls != calls) ERRSHIM_FUZZ_FAIL("the report lost a call");
  } catch (const remediation_error& e) {
    if (e.report().errors.empty()) ERRSHIM_FUZZ_FAIL("remediation_error without the original error");
  } catch (const std::runtime_error& e) {
    // Not recognised: the build function's own exception, unchanged.
    if (thrown != e.what()) ERRSHIM_FUZZ_FAIL("remediate() replaced an unrecognised error");
  }
  if (config.dump() != before) ERRSHIM_FUZZ_FAIL("remediate() changed the caller's config");
}

}  // namespace errshim::fuzz
