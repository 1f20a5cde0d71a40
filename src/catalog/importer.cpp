#include "errshim/importer.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include <boost/regex.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "errshim/catalog.hpp"
#include "escape.hpp"
#include "template.hpp"
#include "utf8.hpp"
#include "importer_internal.hpp"

namespace errshim {

std::string convert_regex(std::string_view p) {
  std::string out;
  out.reserve(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == '/') {  // JavaScript escapes the delimiter; Boost needs no escape
        out += '/';
        ++i;
      } else if (n == 'u' && i + 5 < p.size() && std::isxdigit(static_cast<unsigned char>(p[i + 2])) &&
                 std::isxdigit(static_cast<unsigned char>(p[i + 3])) &&
                 std::isxdigit(static_cast<unsigned char>(p[i + 4])) &&
                 std::isxdigit(static_cast<unsigned char>(p[i + 5]))) {
        out += "\\x{" + std::string(p.substr(i + 2, 4)) + "}";
        i += 5;
      } else if (n == 'u' && i + 2 < p.size() && p[i + 2] == '{') {  // \u{1F600}
        const std::size_t close = p.find('}', i + 3);
        if (close == std::string_view::npos) throw import_error("unterminated \\u{...} escape");
        out += "\\x{" + std::string(p.substr(i + 3, close - i - 3)) + "}";
        i = close;
      } else {
        out += c;
        out += n;
        ++i;
      }
    } else if (p.substr(i, 4) == "(?P<") {  // Python-style named group
      out += "(?<";
      i += 3;
    } else if (p.substr(i, 4) == "(?P=") {  // Python-style named backreference
      const std::size_t close = p.find(')', i);
      if (close == std::string_view::npos) throw import_error("unterminated (?P=name) backreference");
      out += "\\k<" + std::string(p.substr(i + 4, close - i - 4)) + ">";
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

struct RecordRef {
  const std::string& input;
  std::size_t index;
  std::string id;
  std::string where() const {
    return fmt::format("{}: record {}{}", input, index + 1, id.empty() ? "" : fmt::format(" (id {})", id));
  }
};

[[noreturn]] void fail(const RecordRef& r, std::string_view field, const std::string& message) {
  throw import_error(fmt::format("{}: field '{}': {}", r.where(), field, message));
}

// Catalog text must survive a YAML round trip: valid UTF-8, no control
// characters but tab and newline.
bool clean_text(std::string_view s) {
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) return false;
  }
  return detail::valid_utf8(s);
}

using Json = nlohmann::json;

// The member `field` of a record, or null when it is absent.
const Json& member(const Json& rec, const char* field) {
  static const Json absent;
  const auto it = rec.find(field);
  return it == rec.end() ? absent : *it;
}

bool is_scalar(const Json& n) { return n.is_string() || n.is_number() || n.is_boolean(); }

// A scalar as the record spells it: a string's text, a number's digits.
std::string scalar_text(const Json& n) { return n.is_string() ? n.get<std::string>() : n.dump(); }

std::string text(const Json& rec, const RecordRef& r, const char* field, bool required = true) {
  const Json& n = member(rec, field);
  if (n.is_null()) {
    if (required) fail(r, field, "missing; it is required");
    return {};
  }
  if (!is_scalar(n)) fail(r, field, "must be a string");
  const std::string s = scalar_text(n);
  if (required && s.empty()) fail(r, field, "must not be empty");
  if (!clean_text(s)) fail(r, field, "is not valid UTF-8 text (or holds control characters)");
  return s;
}

std::vector<std::string> texts(const Json& rec, const RecordRef& r, const char* field, bool required) {
  std::vector<std::string> out;
  const Json& n = member(rec, field);
  if (n.is_null()) {
    if (required) fail(r, field, "missing; it is required (a list of strings)");
    return out;
  }
  if (!n.is_array()) fail(r, field, "must be a list of strings");
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!is_scalar(n[i])) fail(r, fmt::format("{}[{}]", field, i), "must be a string");
    const std::string s = scalar_text(n[i]);
    if (s.empty() || !clean_text(s)) fail(r, fmt::format("{}[{}]", field, i), "must be non-empty, valid UTF-8 text");
    out.push_back(s);
  }
  if (required && out.empty()) fail(r, field, "must list at least one entry");
  return out;
}

std::string slug_of(std::string s) {
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u))
      out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "record" : out.substr(0, 64);
}

std::string kind_of(const std::string& type) {
  const std::string t = slug_of(type);
  for (const char* k : {"validation", "configuration", "resource", "shape-mismatch", "dtype-mismatch",
                        "missing-dependency", "unsupported-feature", "internal"})
    if (t == k) return k;
  if (t.find("unsupported") != std::string::npos) return "unsupported-feature";
  if (t.find("memory") != std::string::npos || t.find("oom") != std::string::npos) return "resource";
  if (t.find("shape") != std::string::npos) return "shape-mismatch";
  if (t.find("dtype") != std::string::npos || t == "type") return "dtype-mismatch";
  if (t.find("dependency") != std::string::npos || t.find("import") != std::string::npos) return "missing-dependency";
  if (t.find("config") != std::string::npos) return "configuration";
  return "internal";
}

std::string severity_of(const std::string& s) {
  const std::string t = slug_of(s);
  for (const char* k : {"info", "warning", "error", "fatal"})
    if (t == k) return k;
  if (t == "critical") return "fatal";
  if (t == "warn") return "warning";
  return "error";
}

void emit_entry(YAML::Emitter& out, const Json& rec, const RecordRef& ref, std::vector<std::string>& seen_ids) {
  if (!rec.is_object()) fail(ref, "record", "must be a JSON object");
  if (const Json& v = member(rec, "schemaVersion"); is_scalar(v) && scalar_text(v) != "2")
    fail(ref, "schemaVersion", fmt::format("is {}; this importer reads schemaVersion 2", scalar_text(v)));

  const std::string repo = text(rec, ref, "repo");
  const std::string message = text(rec, ref, "errorMessage");
  const std::string path = text(rec, ref, "filePath");
  const std::string sha = text(rec, ref, "analyzedSha");
  const std::string error_class = text(rec, ref, "errorClass");
  const std::string documentation = text(rec, ref, "documentation");
  const std::string trigger = text(rec, ref, "triggerScenarios");
  const std::vector<std::string> solutions = texts(rec, ref, "solutions", true);
  const std::vector<std::string> tags = texts(rec, ref, "tags", false);
  const std::string example_fix = text(rec, ref, "exampleFix", false);
  const std::string url = text(rec, ref, "githubUrl", false);
  int line = 0;
  if (const Json& n = member(rec, "lineNumber"); !n.is_null()) {
    // A whole number, or a string that spells one.
    const std::string spelled = is_scalar(n) ? scalar_text(n) : "?";
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(spelled, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (n.is_boolean() || n.is_number_float() || used == 0 || used != spelled.size() || v > (1LL << 30))
      fail(ref, "lineNumber", fmt::format("expected a whole number, got '{}'", spelled));
    line = static_cast<int>(v);
    if (line <= 0) fail(ref, "lineNumber", fmt::format("must be positive, got {}", line));
  }

  // The pattern: the record's own regex converted, else its message escaped.
  std::string pattern;
  const std::string source_pattern = text(rec, ref, "messagePattern", false);
  try {
    pattern = source_pattern.empty() ? detail::regex_escape(message) : convert_regex(source_pattern);
  } catch (const import_error& e) {
    fail(ref, "messagePattern", e.what());
  }
  try {
    const boost::regex re(pattern, boost::regex::perl);
    if (!boost::regex_search(message, re))
      fail(ref, "messagePattern", fmt::format("does not match the record's own errorMessage '{}'", message));
  } catch (const boost::regex_error& e) {
    fail(ref, "messagePattern", fmt::format("does not compile after conversion: {} ('{}')", e.what(), pattern));
  }

  const std::string library = slug_of(repo.substr(repo.find('/') == std::string::npos ? 0 : repo.find('/') + 1));
  std::string id = fmt::format("{}.imported.{}", library,
                               slug_of(is_scalar(member(rec, "slug")) ? scalar_text(member(rec, "slug")) : message));
  for (int n = 2; std::find(seen_ids.begin(), seen_ids.end(), id) != seen_ids.end(); ++n)
    id = fmt::format("{}.imported.{}-{}", library, slug_of(message), n);
  seen_ids.push_back(id);

  out << YAML::BeginMap;
  out << YAML::Key << "id" << YAML::Value << id;
  // The id and URL are the record's: escaped, they cannot end the comment.
  out << YAML::Comment(detail::escape_controls(
      fmt::format("imported from record {}{}", ref.id.empty() ? "?" : ref.id, url.empty() ? "" : " " + url)));
  out << YAML::Key << "pattern" << YAML::Value << YAML::DoubleQuoted << pattern;
  out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "repo" << YAML::Value << repo << YAML::Key << "path" << YAML::Value << path;
  if (line > 0) out << YAML::Key << "line" << YAML::Value << line;
  out << YAML::Key << "commit" << YAML::Value << sha;
  if (line == 0) out << YAML::Key << "symbol" << YAML::Value << "(unknown: the record gives no line)";
  out << YAML::EndMap;
  out << YAML::Key << "library" << YAML::Value << library;
  out << YAML::Key << "error_class" << YAML::Value << error_class;
  out << YAML::Key << "kind" << YAML::Value << kind_of(text(rec, ref, "errorType", false));
  out << YAML::Key << "severity" << YAML::Value << severity_of(text(rec, ref, "severity", false));
  out << YAML::Key << "cause" << YAML::Value << YAML::Literal << documentation;
  out << YAML::Key << "trigger" << YAML::Value << YAML::Literal << trigger;
  out << YAML::Key << "remediation" << YAML::Value << YAML::BeginSeq;
  for (const std::string& s : solutions)
    out << YAML::BeginMap << YAML::Key << "text" << YAML::Value << s << YAML::EndMap;
  if (!example_fix.empty())
    out << YAML::BeginMap << YAML::Key << "text" << YAML::Value << YAML::Literal
        << ("Example of the change:\n" + example_fix) << YAML::EndMap;
  out << YAML::EndSeq;
  out << YAML::Key << "tags" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& t : tags) out << t;
  out << "imported" << YAML::EndSeq;
  out << YAML::Key << "examples" << YAML::Value << YAML::BeginMap << YAML::Key << "match" << YAML::Value
      << YAML::BeginSeq << YAML::DoubleQuoted << message << YAML::EndSeq << YAML::EndMap;
  out << YAML::Key << "imported" << YAML::Value << true;
  out << YAML::EndMap;
}

// The records of an input: a record, a {"record": ...} wrapper, an array of
// either, or JSON lines.
std::vector<Json> records_of(std::string_view json, const std::string& name) {
  std::vector<Json> docs;
  // "NAME:LINE:COLUMN: not valid JSON: WHAT", for the byte at `at` of `text`.
  auto fail = [&](std::string_view text, std::size_t line, std::size_t at, const std::string& what) {
    at = std::min(at, text.size());
    const std::string_view before = text.substr(0, at);
    const auto row = static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t nl = before.rfind('\n');
    const std::size_t column = nl == std::string_view::npos ? at + 1 : at - nl;
    throw import_error(fmt::format("{}:{}:{}: not valid JSON: {}", name, line + row + 1, column, what));
  };
  auto parse = [&](std::string_view text, std::size_t line) {
    try {
      docs.push_back(Json::parse(text.begin(), text.end()));
    } catch (const Json::parse_error& e) {
      // parse_error's byte: how many bytes were read, up to the end of the
      // offending token; the message gives that byte's line:column.
      std::string what = e.what();
      if (const std::size_t colon = what.find(": syntax error"); colon != std::string::npos) what.erase(0, colon + 2);
      fail(text, line, e.byte > 0 ? e.byte - 1 : 0, what);
    } catch (const Json::exception& e) {
      // Valid syntax nlohmann cannot hold (a number no double holds): its
      // message quotes the token, which gives the position.
      std::string what = e.what();
      if (const std::size_t bracket = what.find("] "); bracket != std::string::npos) what.erase(0, bracket + 2);
      const std::size_t open = what.find('\''), close = what.rfind('\'');
      const std::size_t at = open != std::string::npos && close > open
                                 ? text.find(std::string_view(what).substr(open + 1, close - open - 1))
                                 : std::string_view::npos;
      fail(text, line, at == std::string_view::npos ? 0 : at, what);
    }
  };
  const std::size_t first = json.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) throw import_error(fmt::format("{}: no records", name));
  // JSON lines: several top-level objects, one per line.
  std::size_t lines = 0, objects = 0;
  for (std::size_t pos = 0; pos < json.size();) {
    std::size_t end = json.find('\n', pos);
    if (end == std::string_view::npos) end = json.size();
    const std::string_view l = json.substr(pos, end - pos);
    const std::size_t nb = l.find_first_not_of(" \t\r");
    if (nb != std::string_view::npos && l[nb] == '{' && l.find_last_not_of(" \t\r") != std::string_view::npos &&
        l[l.find_last_not_of(" \t\r")] == '}')
      ++objects;
    ++lines;
    pos = end + 1;
  }
  if (objects > 1) {
    std::size_t n = 0;
    for (std::size_t pos = 0; pos < json.size(); ++n) {
      std::size_t end = json.find('\n', pos);
      if (end == std::string_view::npos) end = json.size();
      const std::string_view l = json.substr(pos, end - pos);
      if (l.find_first_not_of(" \t\r") != std::string_view::npos) parse(l, n);
      pos = end + 1;
    }
  } else {
    parse(json, 0);
  }
  std::vector<Json> out;
  for (Json& d : docs) {
    if (d.is_array())
      for (Json& item : d) out.push_back(std::move(item));
    else
      out.push_back(std::move(d));
  }
  for (Json& n : out)
    if (n.is_object() && member(n, "record").is_object()) n = Json(member(n, "record"));
  (void)lines;
  return out;
}

}  // namespace

std::string import_records(std::string_view json, const std::string& name) {
  const std::vector<Json> records = records_of(json, name);
  YAML::Emitter out;
  out << YAML::Comment(
      detail::escape_controls(fmt::format("Imported by errshim import from {}. The cause, trigger and remediation "
                                          "text is the error database's (imported: true), not errshim's.",
                                          name)));
  out << YAML::BeginMap;
  out << YAML::Key << "schema" << YAML::Value << 1;
  out << YAML::Key << "entries" << YAML::Value << YAML::BeginSeq;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Json& rec = records[i];
    RecordRef ref{name, i, rec.is_object() && is_scalar(member(rec, "id")) ? scalar_text(member(rec, "id")) : ""};
    // Each converted entry is loaded back before it is accepted, so what the
    // importer writes is always a catalog errshim can use.
    std::vector<std::string> probe_ids = ids;
    YAML::Emitter one;
    one << YAML::BeginMap << YAML::Key << "schema" << YAML::Value << 1 << YAML::Key << "entries" << YAML::Value
        << YAML::BeginSeq;
    emit_entry(one, rec, ref, probe_ids);
    one << YAML::EndSeq << YAML::EndMap;
    try {
      if (!one.good()) throw import_error(one.GetLastError());
      CatalogBuilder().add_yaml(one.c_str(), "converted").build();
    } catch (const std::exception& e) {
      fail(ref, "record", fmt::format("cannot be written as a catalog entry: {}", e.what()));
    }
    emit_entry(out, rec, ref, ids);
  }
  out << YAML::EndSeq << YAML::EndMap;
  if (!out.good()) throw import_error(fmt::format("{}: could not write YAML: {}", name, out.GetLastError()));
  return std::string(out.c_str()) + "\n";
}

}  // namespace errshim
