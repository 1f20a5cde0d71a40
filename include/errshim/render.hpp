// Showing a diagnosis to people (text) and to programs (JSON), and fmt
// formatters for both: "{}" gives the text form, "{:j}" the JSON form.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "errshim/diagnosis.hpp"
#include "errshim/error.hpp"

namespace errshim {

// Several lines: id and source, cause, trigger, captures, numbered remediation.
std::string to_text(const Diagnosis& diagnosis);

// One JSON object:
// {"matched": true, "id", "source": {"repo","path","line","commit"}, "cause",
//  "trigger", "remediation": [{"text", "fix"?}], "captures": {name: value},
//  "message"}. Invalid UTF-8 in the input is replaced by U+FFFD.
std::string to_json(const Diagnosis& diagnosis);
// {"matched": false}
std::string unmatched_json();

// A JSON string literal (with quotes) for `text`. Exposed for tools that
// print JSON next to errshim's own.
std::string json_quote(std::string_view text);

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
