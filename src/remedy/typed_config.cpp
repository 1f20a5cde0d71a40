// The parts of typed_config_impl.hpp that do not depend on a member type:
// out of line, so that the public header does not pull in <charconv>,
// <cmath> and <algorithm>.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "errshim/config.hpp"

namespace errshim::detail::config_impl {

bool path_matches(const KeyPath& path, std::string_view key) {
  if (path.empty()) return false;
  if (path.back() == key) return true;
  if (key.find('.') == std::string_view::npos) return false;
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (parts.back().empty()) return false;  // "a..b" names no path
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts.size() <= path.size() && std::equal(parts.rbegin(), parts.rend(), path.rbegin());
}

Parsed parse_magnitude(std::string_view s, bool& negative, unsigned long long& magnitude) {
  negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return Parsed::malformed;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude);
  if (ec == std::errc::result_out_of_range) return Parsed::out_of_range;
  if (ec != std::errc() || end != s.data() + s.size()) return Parsed::malformed;
  return Parsed::ok;
}

namespace {

template <class M>
Parsed parse_floating_as(std::string_view s, M& out) {
  bool negative = false;
  std::string_view body = s;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  if (body == ".inf" || body == ".Inf" || body == ".INF") {
    out = negative ? -std::numeric_limits<M>::infinity() : std::numeric_limits<M>::infinity();
    return Parsed::ok;
  }
  if (body == ".nan" || body == ".NaN" || body == ".NAN") {
    out = std::numeric_limits<M>::quiet_NaN();
    return Parsed::ok;
  }
  // from_chars reads a leading '-' but not '+'; and, unlike strtod, ignores the locale.
  const std::string_view text = !s.empty() && s.front() == '+' ? body : s;
  if (text.empty()) return Parsed::malformed;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec == std::errc::result_out_of_range) return Parsed::out_of_range;
  return ec == std::errc() && end == text.data() + text.size() ? Parsed::ok : Parsed::malformed;
}

template <class M>
std::string format_floating_as(M v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v < 0 ? "-.inf" : ".inf";
  char buf[128];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string text(buf, ec == std::errc() ? end : buf);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

Parsed parse_floating(std::string_view s, float& out) { return parse_floating_as(s, out); }
Parsed parse_floating(std::string_view s, double& out) { return parse_floating_as(s, out); }
Parsed parse_floating(std::string_view s, long double& out) { return parse_floating_as(s, out); }

std::string format_floating(float v) { return format_floating_as(v); }
std::string format_floating(double v) { return format_floating_as(v); }
std::string format_floating(long double v) { return format_floating_as(v); }

}  // namespace errshim::detail::config_impl
