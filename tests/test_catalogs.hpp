// Small catalogs written inline for tests, so a test reads whole.
#pragma once

#include <string>

#include <errshim/catalog.hpp>

namespace errshim::testing {

// One valid entry; `extra` is appended inside the entry (indented by 4).
inline std::string entry_yaml(const std::string& id, const std::string& tmpl, const std::string& extra = "") {
  return "  - id: " + id + "\n"
         "    template: '" + tmpl + "'\n"
         "    source: {path: src/x.rs, line: 10}\n"
         "    error_class: candle::Error::Msg\n"
         "    kind: validation\n"
         "    cause: c\n"
         "    trigger: t\n"
         "    remediation:\n"
         "      - text: r\n"
         "    examples:\n"
         "      match: ['" + tmpl + "']\n" + extra;
}

inline std::string file_yaml(const std::string& entries) {
  return "schema: 1\n"
         "library: test\n"
         "defaults: {repo: example/repo, commit: 0123456789abcdef0123456789abcdef01234567}\n"
         "entries:\n" + entries;
}

inline CatalogPtr catalog_from(const std::string& yaml, const std::string& name = "test.yaml") {
  return CatalogBuilder().add_yaml(yaml, name).build();
}

}  // namespace errshim::testing
