// Small catalogs written inline for tests, so a test reads whole.
#pragma once

#include <string>
#include <vector>

#include <errshim/catalog.hpp>

namespace errshim::testing {

// A real root cause (candle's kv_cache_enabled error), then a later
// exception raised with a prompt that holds a more specific fake error:
// auto-remediation must fix the first and never write the fake's values.
inline const std::string kRootCauseThenEchoedFake =
    "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    run()\n"
    "RuntimeError: kv_cache_enabled=true is not supported\n\n"
    "During handling of the above exception, another exception occurred:\n\n"
    "Traceback (most recent call last):\n  File \"app.py\", line 5, in <module>\n    raise ValueError(prompt)\n"
    "ValueError: `num_return_sequences` (999) has to be smaller or equal to `num_beams` (4).\n";

// The keys every test entry has before its remediation list.
inline std::string entry_head_yaml(const std::string& id, const std::string& tmpl) {
  return "  - id: " + id +
         "\n"
         "    template: '" +
         tmpl +
         "'\n"
         "    source: {path: src/x.rs, line: 10}\n"
         "    error_class: candle::Error::Msg\n"
         "    kind: validation\n"
         "    cause: c\n"
         "    trigger: t\n";
}

// entry_head_yaml with one remediation step, up to its examples.
inline std::string entry_upto_examples_yaml(const std::string& id, const std::string& tmpl) {
  return entry_head_yaml(id, tmpl) +
         "    remediation:\n"
         "      - text: r\n";
}

// One valid entry; `extra` is appended inside the entry (indented by 4).
inline std::string entry_yaml(const std::string& id, const std::string& tmpl, const std::string& extra = "") {
  return entry_upto_examples_yaml(id, tmpl) +
         "    examples:\n"
         "      match: ['" +
         tmpl + "']\n" + extra;
}

// An entry that lints clean: its one match example states the captures it
// expects (`captures`, a YAML flow mapping such as "{level: '88'}").
inline std::string captured_entry_yaml(const std::string& id, const std::string& tmpl, const std::string& example,
                                       const std::string& captures) {
  return entry_upto_examples_yaml(id, tmpl) +
         "    examples:\n"
         "      match:\n"
         "        - text: '" +
         example +
         "'\n"
         "          captures: " +
         captures + "\n";
}

// An entry whose pattern may backtrack catastrophically: it builds from text
// (add_yaml), and lint, add_path and CatalogStore refuse it.
inline std::string risky_entry_yaml(const std::string& id) {
  return "  - id: " + id +
         "\n"
         "    pattern: '^(\\w+\\s?)+$'\n"
         "    source: {path: s.rs, line: 1}\n"
         "    error_class: E\n"
         "    kind: validation\n"
         "    cause: c\n"
         "    trigger: t\n"
         "    remediation: [{text: r}]\n"
         "    examples: {match: ['slow a b']}\n";
}

// candle's kv_cache_enabled error as entry `id`, with one fix (the cache
// off, safety slower): the smallest entry remediation can act on.
inline std::string kv_cache_entry_yaml(const std::string& id) {
  return "  - id: " + id +
         "\n"
         "    template: kv_cache_enabled=true is not supported\n"
         "    source: {path: metavoice.rs, line: 449}\n"
         "    error_class: candle::Error::Msg\n"
         "    kind: unsupported-feature\n"
         "    cause: c\n"
         "    trigger: t\n"
         "    remediation:\n"
         "      - text: turn the cache off\n"
         "        fix: {set: {kv_cache_enabled: false}, safety: slower, reason: 'same output, slower'}\n"
         "    examples: {match: [kv_cache_enabled=true is not supported]}\n";
}

// One remediation step of fixable_entry_yaml: its text and its fix as a
// YAML flow mapping ("{set: {k: v}, safety: safe}"; empty: no fix).
struct Step {
  std::string text;
  std::string fix;
};

// entry_yaml's entry with the remediation steps `steps`, in order.
inline std::string fixable_entry_yaml(const std::string& id, const std::string& tmpl, const std::vector<Step>& steps) {
  std::string out = entry_head_yaml(id, tmpl) + "    remediation:\n";
  for (const Step& s : steps) {
    out += "      - text: " + s.text + "\n";
    if (!s.fix.empty()) out += "        fix: " + s.fix + "\n";
  }
  return out +
         "    examples:\n"
         "      match: ['" +
         tmpl + "']\n";
}

inline std::string file_yaml(const std::string& entries) {
  return "schema: 1\n"
         "library: test\n"
         "defaults: {repo: example/repo, commit: 0123456789abcdef0123456789abcdef01234567}\n"
         "entries:\n" +
         entries;
}

inline CatalogPtr catalog_from(const std::string& yaml, const std::string& name = "test.yaml") {
  return CatalogBuilder().add_yaml(yaml, name).build();
}

}  // namespace errshim::testing
