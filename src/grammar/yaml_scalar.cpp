#include "yaml_scalar.hpp"

#include <initializer_list>

#include "chars.hpp"

namespace errshim::detail {
namespace {

bool any_of(std::string_view s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (s == w) return true;
  return false;
}

// Digits from `i` on; returns how many.
std::size_t digits(std::string_view s, std::size_t& i) {
  const std::size_t from = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  return i - from;
}

std::size_t after_sign(std::string_view s) { return !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0; }

}  // namespace

bool core_null(std::string_view s) { return any_of(s, {"", "~", "null", "Null", "NULL"}); }
bool core_true(std::string_view s) { return any_of(s, {"true", "True", "TRUE"}); }
bool core_false(std::string_view s) { return any_of(s, {"false", "False", "FALSE"}); }

bool core_int(std::string_view s) {
  std::size_t i = after_sign(s);
  return digits(s, i) > 0 && i == s.size();
}

bool core_float(std::string_view s) {
  std::size_t i = after_sign(s);
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits(s, i) == 0) return false;
  } else {
    if (digits(s, i) == 0) return false;
    if (i < s.size() && s[i] == '.') digits(s, ++i);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits(s, i) == 0) return false;
  }
  return i == s.size();
}

Value resolve_plain(std::string_view s) {
  if (core_null(s)) return {Value::Type::null, ""};
  if (core_true(s)) return {Value::Type::boolean, "true"};
  if (core_false(s)) return {Value::Type::boolean, "false"};
  if (core_int(s)) return {Value::Type::integer, std::string(s)};
  if (core_float(s)) return {Value::Type::number, std::string(s)};
  return {Value::Type::string, std::string(s)};
}

bool plain_would_retype(std::string_view s) {
  if (s.empty()) return true;
  if (any_of(s,
             {"~",    "null", "Null", "NULL",  "y",     "Y",     "yes", "Yes", "YES", "n",   "N",   "no",  "No", "NO",
              "true", "True", "TRUE", "false", "False", "FALSE", "on",  "On",  "ON",  "off", "Off", "OFF", "=",  "<<"}))
    return true;
  std::string_view body = s;
  if (body.front() == '+' || body.front() == '-') body.remove_prefix(1);
  if (any_of(body, {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"})) return true;
  // Numbers in every base and with `_`, sexagesimals, and timestamps all
  // start with a digit (or `.digit`) and use only these characters.
  const bool numeric_start =
      !body.empty() && (is_digit(body[0]) || (body[0] == '.' && body.size() > 1 && is_digit(body[1])));
  return numeric_start && body.find_first_not_of("0123456789abcdefABCDEFoOxXtTzZ_.:+- ") == std::string_view::npos;
}

}  // namespace errshim::detail
