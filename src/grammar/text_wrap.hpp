// Laying text out on a terminal: its width in columns (escape sequences
// take none) and word wrapping. Shared by the renderer and the CLI.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace errshim::detail {

// Columns `s` takes on a terminal: code points, without escape sequences
// (SGR, OSC 8). Wide characters count as one; prose is mostly ASCII.
inline std::size_t columns(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= 0x40 && s[i] <= 0x7E)) ++i;
      ++i;
      continue;
    }
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == ']') {
      const std::size_t st = s.find("\x1b\\", i + 2);
      i = st == std::string_view::npos ? s.size() : st + 2;
      continue;
    }
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++n;
    ++i;
  }
  return n;
}

// `lead` then the words of `text`, broken at spaces to fit `width` columns
// (0: one line); continuation lines start with `hang` spaces. A word longer
// than a line (a URL, a shape) is never split.
inline std::string wrap(std::string_view lead, std::string_view text, std::size_t hang, std::size_t width) {
  std::string out(lead);
  std::size_t col = columns(lead);
  bool first = true;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t sp = std::min(text.find(' ', i), text.size());
    const std::string_view word = text.substr(i, sp - i);
    i = sp + 1;
    if (word.empty()) continue;
    const std::size_t w = columns(word);
    if (!first && width > 0 && col + 1 + w > width && col > hang) {
      out += '\n';
      out.append(hang, ' ');
      col = hang;
    } else if (!first) {
      out += ' ';
      ++col;
    }
    out += word;
    col += w;
    first = false;
  }
  return out + "\n";
}

}  // namespace errshim::detail
