// YAML catalog text -> entries. Knows the schema (patterns/README.md) and
// nothing of matching: it fills Entry::pattern from the template and leaves
// compiling the regex to the matcher.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "errshim/catalog.hpp"

namespace errshim::detail {

inline constexpr int kSchemaVersion = 1;

// Parses one catalog file. Every problem found is appended to `problems`
// (the parse goes on past a bad entry, so one run reports them all); entries
// with problems are left out of the result.
std::vector<Entry> parse_catalog(std::string_view text, const std::string& file, std::vector<Problem>& problems);

}  // namespace errshim::detail
