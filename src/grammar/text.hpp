// Small string_view helpers shared by the scanners, ASCII only (chars.hpp).
#pragma once

#include <string_view>

#include "chars.hpp"

namespace errshim::detail {

constexpr bool is_space(char c) { return is_blank(c) || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// The first byte decides most tests on a line; only then is memcmp called.
constexpr bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && (p.empty() || s[0] == p[0]) && s.compare(0, p.size(), p) == 0;
}
constexpr bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
// Blanks off the front (indentation), any space off the back (a line's "\r").
constexpr std::string_view ltrim(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && is_blank(s[i])) ++i;
  return s.substr(i);
}
constexpr std::string_view rtrim(std::string_view s) {
  std::size_t n = s.size();
  while (n > 0 && is_space(s[n - 1])) --n;
  return s.substr(0, n);
}
constexpr std::string_view trim(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return rtrim(s.substr(i));
}

}  // namespace errshim::detail
