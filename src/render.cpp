#include "errshim/render.hpp"

#include <fmt/format.h>

#include "errshim/catalog.hpp"
#include "utf8.hpp"

namespace errshim {

namespace {

std::string_view safety_name(Safety s) { return to_string(s); }

std::string value_json(const Value& v) {
  switch (v.type) {
    case Value::Type::null: return "null";
    case Value::Type::boolean:
    case Value::Type::integer:
    case Value::Type::number: return v.text;
    case Value::Type::string: return json_quote(v.text);
  }
  return "null";
}

std::string assignments_json(const std::vector<std::pair<std::string, Value>>& kv) {
  std::string out = "{";
  for (std::size_t i = 0; i < kv.size(); ++i)
    out += fmt::format("{}{}: {}", i ? ", " : "", json_quote(kv[i].first), value_json(kv[i].second));
  return out + "}";
}

std::string fix_json(const Fix& f) {
  std::string out = "{";
  auto field = [&](std::string_view key, const std::string& value) {
    out += fmt::format("{}\"{}\": {}", out.size() > 1 ? ", " : "", key, value);
  };
  if (!f.set.empty()) field("set", assignments_json(f.set));
  if (!f.remove.empty()) {
    std::string list = "[";
    for (std::size_t i = 0; i < f.remove.size(); ++i) list += (i ? ", " : "") + json_quote(f.remove[i]);
    field("remove", list + "]");
  }
  if (!f.action.empty()) field("action", json_quote(f.action));
  if (!f.requires_set.empty()) field("requires", assignments_json(f.requires_set));
  if (!f.conflicts.empty()) field("conflicts", assignments_json(f.conflicts));
  field("safety", json_quote(safety_name(f.safety)));
  if (!f.reason.empty()) field("reason", json_quote(f.reason));
  return out + "}";
}

std::string fix_text(const Fix& f) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : f.set) parts.push_back(fmt::format("set {}={}", k, v.type == Value::Type::string ? json_quote(v.text) : v.text));
  for (const auto& [k, v] : f.requires_set) parts.push_back(fmt::format("set {}={}", k, v.type == Value::Type::string ? json_quote(v.text) : v.text));
  for (const auto& k : f.remove) parts.push_back(fmt::format("remove {}", k));
  if (!f.action.empty()) parts.push_back(fmt::format("action {}", f.action));
  return fmt::format("{} ({})", fmt::join(parts, ", "), safety_name(f.safety));
}

// Continuation lines of a multi-line catalog text line up under its first line.
std::string indented(std::string_view text, std::size_t indent) {
  std::string out;
  const std::string pad(indent, ' ');
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

std::string pin_text(const SourcePin& p) {
  std::string s = fmt::format("{} {}", p.repo, p.path);
  if (p.line > 0) s += fmt::format(":{}", p.line);
  if (!p.commit.empty()) s += fmt::format(" @{}", p.commit.substr(0, 12));
  if (!p.symbol.empty()) s += fmt::format(" in {}", p.symbol);
  return s;
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    // A run of printable ASCII other than '"' and '\\' is copied whole (log
    // blocks are mostly that; byte by byte, quoting dominated `scan --json`).
    std::size_t j = i;
    while (j < s.size() && s[j] >= 0x20 && s[j] < 0x7F && s[j] != '"' && s[j] != '\\') ++j;
    if (j > i) {
      out.append(s.data() + i, j - i);
      i = j;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\u{:04x}", c);
      ++i;
      continue;
    }
    const std::size_t n = detail::utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not valid UTF-8
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  out += '"';
  return out;
}

std::string to_text(const Diagnosis& d) {
  if (!d.entry) return "no diagnosis";
  const Entry& e = *d.entry;
  std::string out = fmt::format("{}  [{}, {}]\n", e.id, e.kind, e.severity);
  out += fmt::format("  message:  {}\n", indented(d.segment, 12));
  out += fmt::format("  source:   {}\n", pin_text(e.source));
  for (const SourcePin& p : e.also_at) out += fmt::format("  also at:  {}\n", pin_text(p));
  if (!d.captures.empty()) {
    std::vector<std::string> caps;
    for (const Capture& c : d.captures) caps.push_back(fmt::format("{}={}", c.name, c.value));
    out += fmt::format("  captured: {}\n", fmt::join(caps, ", "));
  }
  out += fmt::format("  cause:    {}\n", indented(e.cause, 12));
  out += fmt::format("  trigger:  {}\n", indented(e.trigger, 12));
  out += "  remediation (most likely first):\n";
  for (std::size_t i = 0; i < e.remediation.size(); ++i) {
    const Remediation& r = e.remediation[i];
    out += fmt::format("    {}. {}\n", i + 1, indented(r.text, 7));
    if (r.fix) out += fmt::format("       fix: {}\n", fix_text(*r.fix));
  }
  return out;
}

std::string to_json(const Diagnosis& d) {
  if (!d.entry) return unmatched_json();
  const Entry& e = *d.entry;
  std::string out = fmt::format("{{\"matched\": true, \"id\": {}, ", json_quote(e.id));
  out += fmt::format("\"source\": {{\"repo\": {}, \"path\": {}, \"line\": {}, \"commit\": {}, \"symbol\": {}}}, ",
                     json_quote(e.source.repo), json_quote(e.source.path), e.source.line, json_quote(e.source.commit),
                     json_quote(e.source.symbol));
  out += fmt::format("\"library\": {}, \"error_class\": {}, \"kind\": {}, \"severity\": {}, ", json_quote(e.library),
                     json_quote(e.error_class), json_quote(e.kind), json_quote(e.severity));
  out += fmt::format("\"cause\": {}, \"trigger\": {}, \"remediation\": [", json_quote(e.cause), json_quote(e.trigger));
  for (std::size_t i = 0; i < e.remediation.size(); ++i) {
    const Remediation& r = e.remediation[i];
    out += fmt::format("{}{{\"text\": {}", i ? ", " : "", json_quote(r.text));
    if (r.fix) out += fmt::format(", \"fix\": {}", fix_json(*r.fix));
    out += "}";
  }
  out += "], \"captures\": {";
  for (std::size_t i = 0; i < d.captures.size(); ++i)
    out += fmt::format("{}{}: {}", i ? ", " : "", json_quote(d.captures[i].name), json_quote(d.captures[i].value));
  out += fmt::format("}}, \"message\": {}, \"exception_class\": {}}}", json_quote(d.segment), json_quote(d.exception_class));
  return out;
}

std::string unmatched_json() { return "{\"matched\": false}"; }

}  // namespace errshim
