#include "errshim/render.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "errshim/catalog.hpp"
#include "errshim/raise_site.hpp"
#include "escape.hpp"
#include "json.hpp"
#include "text.hpp"
#include "text_wrap.hpp"
#include "utf8.hpp"
#include "render_internal.hpp"

namespace errshim {

namespace {

using detail::columns;
using detail::wrap;

std::string_view safety_name(Safety s) { return to_string(s); }

std::string fix_changes(const Fix& f) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : f.set)
    parts.push_back(fmt::format("set {}={}", k, v.type == Value::Type::string ? detail::json_quote(v.text) : v.text));
  for (const auto& [k, v] : f.requires_set)
    parts.push_back(fmt::format("set {}={}", k, v.type == Value::Type::string ? detail::json_quote(v.text) : v.text));
  for (const auto& k : f.remove) parts.push_back(fmt::format("remove {}", k));
  if (!f.action.empty()) parts.push_back(fmt::format("action {}", f.action));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string fix_text(const Fix& f) { return fmt::format("{} ({})", fix_changes(f), safety_name(f.safety)); }

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
    // Numbered by index, as Decision::step, the JSON and `errshim fix --step` number them.
    out += fmt::format("    [{}] {}\n", i, indented(r.text, 8));
    if (r.fix) out += fmt::format("        fix: {}\n", fix_text(*r.fix));
  }
  return out;
}

std::string to_json(const SourcePin& p) { return detail::json_of(p); }

std::string to_json(const Diagnosis& d) { return detail::json_of(d); }

std::string unmatched_json() {
  std::string out;
  detail::JsonWriter(out).begin_object().field("matched", false).end_object();
  return out;
}

std::string source_url(const SourcePin& p) {
  std::string url =
      fmt::format("https://github.com/{}/blob/{}/{}", p.repo, p.commit.empty() ? "HEAD" : p.commit, p.path);
  if (p.line > 0) url += fmt::format("#L{}", p.line);
  return url;
}

namespace {

bool is_list_item(std::string_view line) {
  if (line.size() >= 2 && (line[0] == '-' || line[0] == '*') && line[1] == ' ') return true;
  std::size_t i = 0;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  return i > 0 && i + 1 < line.size() && (line[i] == '.' || line[i] == ')') && line[i + 1] == ' ';
}

using detail::trim;

std::size_t indent_of(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  return i;
}

}  // namespace

std::string fold_prose(std::string_view prose) {
  std::string out;
  bool in_paragraph = false, blank_before = false;
  std::size_t base_indent = 0;
  for (std::size_t start = 0; start <= prose.size();) {
    std::size_t end = prose.find('\n', start);
    if (end == std::string_view::npos) end = prose.size();
    const std::string_view raw = prose.substr(start, end - start);
    const std::string_view line = trim(raw);
    start = end + 1;
    if (line.empty()) {
      blank_before = in_paragraph || blank_before;
      in_paragraph = false;
      if (end == prose.size()) break;
      continue;
    }
    if (!in_paragraph) {
      if (!out.empty()) out += blank_before ? "\n\n" : "\n";
      base_indent = indent_of(raw);
      in_paragraph = true;
      blank_before = false;
    } else if (is_list_item(line) || indent_of(raw) > base_indent) {
      out += '\n';  // a list item or an indented (code) line keeps its own line
      if (indent_of(raw) > base_indent) out.append(indent_of(raw) - base_indent, ' ');
    } else {
      out += ' ';
    }
    out += line;
    if (end == prose.size()) break;
  }
  return out;
}

std::string first_sentence(std::string_view prose) {
  const std::string folded = fold_prose(prose);
  const std::string_view t = std::string_view(folded).substr(0, folded.find("\n\n"));
  bool code = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '`') code = !code;
    if (code || (c != '.' && c != '!' && c != '?')) continue;
    if (i + 1 < t.size() && t[i + 1] != ' ' && t[i + 1] != '\n') continue;
    const std::string_view before = t.substr(0, i + 1);
    bool abbreviation = false;
    for (std::string_view a : {" e.g.", " i.e.", " etc.", " vs.", " cf.", "(e.g.", "(i.e.", "(cf."})
      abbreviation = abbreviation || (before.size() >= a.size() && before.substr(before.size() - a.size()) == a);
    if (!abbreviation) return std::string(before);
  }
  return std::string(t);
}

namespace {

// Terminal styling: SGR colours and OSC 8 links, or plain text.
struct Painter {
  bool on = false;
  std::string operator()(std::string_view sgr, std::string_view text) const {
    if (!on || text.empty()) return std::string(text);
    return fmt::format("\x1b[{}m{}\x1b[0m", sgr, text);
  }
  std::string link(std::string_view url, std::string_view text) const {
    if (!on) return std::string(text);
    return fmt::format("\x1b]8;;{}\x1b\\{}\x1b]8;;\x1b\\", url, text);
  }
};

constexpr std::string_view kBold = "1", kCapture = "1;33", kDim = "2", kLabel = "1;36";

std::string_view severity_sgr(std::string_view severity) {
  if (severity == "warning") return "1;33";
  if (severity == "info" || severity == "note") return "1;36";
  return "1;31";
}

std::string_view safety_sgr(Safety s) {
  switch (s) {
    case Safety::safe: return "32";
    case Safety::slower: return "36";
    case Safety::changes_output: return "33";
    case Safety::manual: return "35";
  }
  return "0";
}

// Folded prose, each paragraph and list item wrapped at `indent`; the first
// line starts with `lead` instead when one is given (a step number).
std::string prose_block(std::string_view prose, std::size_t indent, std::size_t width, const std::string& lead = {}) {
  const std::string folded = fold_prose(prose);
  std::string out;
  const std::string pad(indent, ' ');
  for (std::size_t start = 0; start < folded.size();) {
    std::size_t end = folded.find('\n', start);
    if (end == std::string::npos) end = folded.size();
    const std::string_view line = std::string_view(folded).substr(start, end - start);
    start = end + 1;
    if (line.empty()) {
      out += '\n';
      continue;
    }
    const std::size_t extra = is_list_item(line) ? line.find(' ') + 1 : 0;
    out += wrap(out.empty() && !lead.empty() ? lead : pad, detail::escape_controls(line), indent + extra, width);
  }
  return out;
}

std::string pin_line(const SourcePin& p, const Painter& paint, std::string_view lead, std::size_t width) {
  std::string where = p.path;
  if (p.line > 0) where += fmt::format(":{}", p.line);
  std::string s = fmt::format("{} {}", paint(kDim, p.repo), paint.link(source_url(p), paint(kBold, where)));
  if (!p.symbol.empty()) s += fmt::format(" in {}", p.symbol);
  s = wrap(lead, s, columns(lead), width);
  // Without colour there is no hyperlink: the address is printed.
  if (!paint.on) s += fmt::format("{}{}\n", std::string(columns(lead), ' '), source_url(p));
  return s;
}

std::string header(const Entry& e, const Painter& paint, const TextOptions& o) {
  std::string out =
      wrap("", fmt::format("{}: {} [{}]", paint(severity_sgr(e.severity), e.severity), paint(kBold, e.id), e.kind), 4,
           o.width);
  out += pin_line(e.source, paint, "  --> ", o.width);
  constexpr std::size_t kFoldAlsoAt = 2;
  if (!e.also_at.empty() && (o.verbose || e.also_at.size() <= kFoldAlsoAt)) {
    for (const SourcePin& p : e.also_at) out += pin_line(p, paint, "  also at ", o.width);
  } else if (!e.also_at.empty()) {
    out +=
        wrap("  ", paint(kDim, fmt::format("also raised at {} other places (--verbose lists them)", e.also_at.size())),
             2, o.width);
  }
  return out;
}

std::string body(const Entry& e, const Painter& paint, const TextOptions& o) {
  std::string out = fmt::format("\n{}\n", paint(kLabel, "cause:"));
  out += prose_block(e.cause, 2, o.width);
  out += fmt::format("\n{}\n", paint(kLabel, "trigger:"));
  out += prose_block(e.trigger, 2, o.width);
  out += "\n" +
         wrap("", paint(kLabel, "remediation (most likely first; 'errshim fix --step N' applies step N):"), 0, o.width);
  for (std::size_t i = 0; i < e.remediation.size(); ++i) {
    const Remediation& r = e.remediation[i];
    const std::string num = fmt::format("[{}]", i);
    out += prose_block(r.text, 6, o.width,
                       fmt::format("  {}{}", paint(kBold, num), std::string(num.size() < 4 ? 4 - num.size() : 1, ' ')));
    if (r.fix) {
      std::string safety = paint(safety_sgr(r.fix->safety), std::string(safety_name(r.fix->safety)));
      if (!r.fix->reason.empty()) safety += ": " + fold_prose(r.fix->reason);
      out += wrap("      fix: ", fmt::format("{}  ({})", detail::escape_controls(fix_changes(*r.fix)), safety), 11,
                  o.width);
    }
  }
  return out;
}

}  // namespace

std::string to_text(const Diagnosis& d, const TextOptions& o) {
  if (!d.entry) return "no diagnosis\n";
  const Entry& e = *d.entry;
  const Painter paint{o.color};
  std::string out = header(e, paint, o);
  // The message, with each captured value highlighted where the match found it.
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::size_t from = std::min(d.offset, d.segment.size());
  const std::size_t match_end = std::min(d.segment.size(), from + d.matched.size());
  for (const Capture& c : d.captures) {
    if (c.value.empty()) continue;
    const std::size_t at = d.segment.find(c.value, from);
    if (at == std::string::npos || at + c.value.size() > match_end) continue;
    spans.emplace_back(at, at + c.value.size());
    from = at + c.value.size();
  }
  std::vector<std::string> lines(1);
  auto add = [&](std::string_view piece, bool highlight) {
    for (std::size_t i = 0; i <= piece.size();) {
      const std::size_t nl = std::min(piece.find('\n', i), piece.size());
      const std::string text = detail::escape_controls(piece.substr(i, nl - i));
      lines.back() += highlight ? paint(kCapture, text) : text;
      if (nl == piece.size()) break;
      lines.emplace_back();
      i = nl + 1;
    }
  };
  std::size_t at = 0;
  for (const auto& [b, e2] : spans) {
    add(std::string_view(d.segment).substr(at, b - at), false);
    add(std::string_view(d.segment).substr(b, e2 - b), true);
    at = e2;
  }
  add(std::string_view(d.segment).substr(at), false);
  out += '\n';
  for (std::size_t i = 0; i < lines.size(); ++i)
    out += wrap(i == 0 ? paint(kLabel, "message:") + "  " : std::string(10, ' '), lines[i], 10, o.width);
  if (!d.captures.empty()) {
    std::vector<std::string> caps;
    for (const Capture& c : d.captures)
      caps.push_back(fmt::format("{}={}", c.name, paint(kCapture, detail::escape_controls(c.value))));
    out += wrap(paint(kLabel, "captured:") + " ", fmt::format("{}", fmt::join(caps, ", ")), 10, o.width);
  }
  return out + body(e, paint, o);
}

std::string to_text(const Entry& e, const TextOptions& o) {
  const Painter paint{o.color};
  std::string out = header(e, paint, o);
  if (!e.template_text.empty())
    out += wrap(paint(kLabel, "message:") + "  ", detail::escape_controls(e.template_text), 10, o.width);
  out += body(e, paint, o);
  if (!e.tags.empty())
    out += wrap(fmt::format("\n{} ", paint(kLabel, "tags:")), fmt::format("{}", fmt::join(e.tags, ", ")), 6, o.width);
  if (!e.match_examples.empty()) {
    constexpr std::size_t kFoldExamples = 3;
    const std::size_t shown = o.verbose ? e.match_examples.size() : std::min(kFoldExamples, e.match_examples.size());
    out += fmt::format("\n{}\n", paint(kLabel, "examples (messages this entry explains):"));
    for (std::size_t i = 0; i < shown; ++i) {
      const std::string& text = e.match_examples[i].text;
      std::size_t line_no = 0;
      for (std::size_t start = 0; start < text.size(); ++line_no) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        out +=
            wrap(line_no == 0 ? "  - " : "    ", detail::escape_controls(text.substr(start, end - start)), 4, o.width);
        start = end + 1;
      }
    }
    if (shown < e.match_examples.size())
      out += fmt::format("  {}\n", paint(kDim, fmt::format("... and {} more (--verbose shows them)",
                                                           e.match_examples.size() - shown)));
  }
  return out;
}

}  // namespace errshim
