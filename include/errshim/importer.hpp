// Importing error-database records (the JSON format of schemaVersion 2:
// errorMessage, messagePattern, filePath, lineNumber, githubUrl, analyzedSha,
// documentation, triggerScenarios, solutions, exampleFix, tags, ...) as
// catalog entries.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace errshim {

// A record that cannot be imported; the message names the input, the record
// (index and id) and the field.
class import_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Converts the records in `json` (one record, {"record": {...}}, an array of
// either, or one per line) into a catalog file (schema 1) as YAML text. The
// records' regex dialect (JavaScript/PCRE) is converted to Boost's; each
// entry keeps its provenance (repository, path, line, commit, URL, record id)
// and is marked `imported: true`, since its prose is the database's, not
// ours. Every entry is checked: its pattern compiles and matches the
// record's own message. Throws import_error on the first bad record.
std::string import_records(std::string_view json, const std::string& name = "<input>");

}  // namespace errshim
