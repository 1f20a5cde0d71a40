// ASCII character classes for the scanners (normaliser, log scanner, config
// reader). Not <cctype>: those depend on the C locale and are
// undefined for negative chars, and bytes >= 0x80 here are UTF-8, never letters.
#pragma once

namespace errshim::detail {

constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
constexpr bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool is_alpha(char c) { return is_upper(c) || is_lower(c); }
constexpr bool is_ident(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
constexpr bool is_blank(char c) { return c == ' ' || c == '\t'; }

}  // namespace errshim::detail
