// Visible escapes for text written where control characters do harm: a
// terminal (an escape sequence from a log can retitle the window, clear the
// screen or forge output) or a YAML comment (a line break ends the comment
// and turns the rest into YAML; YAML 1.1 readers such as PyYAML also break
// lines at NEL, LS and PS, and refuse C0 and C1 controls anywhere).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "utf8.hpp"

namespace errshim::detail {

// `s` with each C0 control but tab, DEL, C1 control (NEL among them), LS, PS,
// U+FFFE and U+FFFF written as \xHH or \uHHHH, and each byte that is not
// UTF-8 as \xHH; everything else is copied. Line breaks are among the
// escaped, so the result is one line.
inline std::string escape_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0 || (n == 1 && ((c < 0x20 && c != '\t') || c == 0x7F))) {
      out += fmt::format("\\x{:02X}", c);
      ++i;
      continue;
    }
    std::uint32_t cp = c;
    const auto cont = [&](std::size_t k) {
      return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i + k]) & 0x3Fu);
    };
    if (n == 2) cp = ((c & 0x1Fu) << 6) | cont(1);
    if (n == 3) cp = ((c & 0x0Fu) << 12) | (cont(1) << 6) | cont(2);
    if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFFFE || cp == 0xFFFF)
      out += fmt::format("\\u{:04X}", cp);
    else
      out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace errshim::detail
