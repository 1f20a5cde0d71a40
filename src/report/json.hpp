// The JSON shape of each errshim type, written once (json_writer.hpp does the
// quoting and separators). The public to_json functions, the audit records,
// scan --json, the C API and the CLI all write through these, so a type looks
// the same wherever it appears.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "errshim/catalog.hpp"
#include "errshim/diagnosis.hpp"
#include "errshim/remediation.hpp"
#include "errshim/scan.hpp"
#include "errshim/value.hpp"
#include "json_writer.hpp"

namespace errshim::detail {

// {"repo", "path", "line", "commit", "symbol", "url"}
void write_json(JsonWriter& w, const SourcePin& pin);
// null, true/false, a number as the catalog spells it, or a string.
void write_json(JsonWriter& w, const Value& value);
// nullopt (an absent key) as null.
void write_json(JsonWriter& w, const std::optional<Value>& value);
// {key: value, ...}, in order.
void write_json(JsonWriter& w, const std::vector<std::pair<std::string, Value>>& assignments);
// {"set"?, "remove"?, "action"?, "requires"?, "conflicts"?, "safety", "reason"?}: the members a fix has.
void write_json(JsonWriter& w, const Fix& fix);
// {"path", "before", "after", "created"}
void write_json(JsonWriter& w, const Change& change);
void write_json(JsonWriter& w, const std::vector<Change>& changes);
// {"time", "attempt", "entry", "step", "fix": FIX | null, "safety", "mode", "outcome", "reason", "changes"}
void write_json(JsonWriter& w, const Decision& decision);
// The members of a diagnosis's object (render.hpp documents them), without
// its braces, so that scan can add the block's members to the same object.
void write_json_members(JsonWriter& w, const Diagnosis& diagnosis);
void write_json(JsonWriter& w, const Diagnosis& diagnosis);
// A diagnosis's members (or "matched": false), then "file", "line", "lines",
// "kind", and for an unmatched block "fingerprint", "template", "text".
void write_json(JsonWriter& w, const ScanBlock& block);
// A catalog entry in a list: {"id", "library", "kind", "source", "tags", "cause": summary}.
void write_json_summary(JsonWriter& w, const Entry& entry, std::string_view summary);
std::string json_of_summary(const Entry& entry, std::string_view summary);

// The whole document of one value.
template <class T>
std::string json_of(const T& value) {
  std::string out;
  JsonWriter w(out);
  write_json(w, value);
  return out;
}

}  // namespace errshim::detail
