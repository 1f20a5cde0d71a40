// Showing a diagnosis to people (text) and to programs (JSON), and fmt
// formatters for both: "{}" gives the text form, "{:j}" the JSON form.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "errshim/diagnosis.hpp"
#include "errshim/error.hpp"

namespace errshim {

struct Entry;
struct SourcePin;

// Several lines, for logs: id and source, cause, trigger, captures, remediation
// steps numbered by index ([0] first). The overload below is the form for a person.
std::string to_text(const Diagnosis& diagnosis);

// How the text form is laid out for a person (the CLI's explain and check).
struct TextOptions {
  bool color = false;  // ANSI colours, and OSC 8 hyperlinks on source pins
  std::size_t width = 0;  // wrap at this many columns; 0: no wrapping
  bool verbose = false;  // every also_at pin and example; else long lists show a count
};

// The form for a person, rustc/miette style: a header line (severity, id,
// kind), the source pin with its link, the message with the captured values
// highlighted, cause, trigger, and the remediation steps numbered by their
// index (0 first: the number `Decision::step`, the JSON, Python and
// `errshim fix --step N` use), each with its fix and safety class.
// Control characters in the message are shown as escapes.
std::string to_text(const Diagnosis& diagnosis, const TextOptions& options);
// One catalog entry in the same form without a message, plus its examples
// (`errshim explain ID`).
std::string to_text(const Entry& entry, const TextOptions& options);

// A pin as JSON, one shape everywhere: {"repo", "path", "line", "commit",
// "symbol", "url"}.
std::string to_json(const SourcePin& pin);

// One JSON object:
// {"matched": true, "id", "source": PIN, "also_at": [PIN...], "raised_at"?:
//  {"library", "path", "line", "function", "form"} (where the message says
//  it was raised, raise_site.hpp), "site"?: {"pin": PIN, "fit": "line" |
//  "file"} (the pin that location confirms), "library", "error_class",
//  "kind", "severity", "cause", "trigger", "remediation": [{"step", "text",
//  "fix"?}], "captures": {name: value}, "message", "exception_class"}. Prose
// fields are folded (fold_prose). Invalid UTF-8 in the input is replaced by
// U+FFFD.
std::string to_json(const Diagnosis& diagnosis);

}  // namespace errshim

namespace errshim::detail {
// Parses the presentation spec shared by the formatters below: '' or 'j'.
struct render_spec {
  bool json = false;
  template <class ParseContext>
  constexpr auto parse(ParseContext& ctx) {
    auto it = ctx.begin();
    if (it != ctx.end() && *it == 'j') {
      json = true;
      ++it;
    }
    if (it != ctx.end() && *it != '}') throw fmt::format_error("errshim: use {} for text or {:j} for JSON");
    return it;
  }
};
}  // namespace errshim::detail

template <>
struct fmt::formatter<errshim::Diagnosis> : errshim::detail::render_spec {
  template <class FormatContext>
  auto format(const errshim::Diagnosis& d, FormatContext& ctx) const {
    const std::string s = json ? errshim::to_json(d) : errshim::to_text(d);
    return fmt::format_to(ctx.out(), "{}", s);
  }
};

template <>
struct fmt::formatter<errshim::translated_error> : errshim::detail::render_spec {
  template <class FormatContext>
  auto format(const errshim::translated_error& e, FormatContext& ctx) const {
    const std::string s = json ? errshim::to_json(e.diagnosis()) : errshim::to_text(e.diagnosis());
    return fmt::format_to(ctx.out(), "{}", s);
  }
};
