#include "errshim/context.hpp"

#include "text.hpp"
#include "context_internal.hpp"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace errshim {

namespace {
using detail::trim;

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

// Leading numeric parts of a version; `pre` is set when a non-numeric tail
// (rc1, .dev0, a1) follows, which sorts before the plain release.
std::vector<unsigned long> numeric_parts(std::string_view v, bool& pre) {
  std::vector<unsigned long> parts;
  pre = false;
  std::size_t i = 0;
  if (!v.empty() && (v[0] == 'v' || v[0] == 'V')) i = 1;
  while (i < v.size()) {
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) {
      pre = true;
      break;
    }
    unsigned long n = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
      n = n * 10 + static_cast<unsigned long>(v[i] - '0');
      if (n > 1000000000ul) n = 1000000000ul;  // bound a silly number
      ++i;
    }
    parts.push_back(n);
    if (i < v.size() && v[i] == '.' && i + 1 < v.size() && std::isdigit(static_cast<unsigned char>(v[i + 1])))
      ++i;
    else if (i < v.size()) {
      pre = true;
      break;
    }
  }
  return parts;
}
}  // namespace

const std::string* Context::get(std::string_view key) const noexcept {
  auto it = values.find(std::string(key));
  return it == values.end() ? nullptr : &it->second;
}

Context Context::parse(std::string_view text) {
  Context c;
  if (trim(text).empty()) return c;
  for (std::string_view item : split(text, ',')) {
    item = trim(item);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || trim(item.substr(0, eq)).empty() || trim(item.substr(eq + 1)).empty())
      throw std::invalid_argument(
          fmt::format("context item '{}' is not KEY=VALUE (e.g. transformers=4.57,device=metal)", item));
    c.values[std::string(trim(item.substr(0, eq)))] = std::string(trim(item.substr(eq + 1)));
  }
  return c;
}

ScopeFit scope_fit(const std::vector<ScopeCondition>& scope, const Context& context) noexcept {
  if (scope.empty()) return ScopeFit::general;
  bool all_known = true;
  for (const ScopeCondition& c : scope) {
    const std::string* have = context.get(c.key);
    if (!have) {
      all_known = false;
      continue;
    }
    bool ok = false;
    if (!c.range.empty()) {
      try {
        ok = version_in_range(*have, c.range);
      } catch (...) {
        ok = false;  // ranges are validated at load; a bad one never fits
      }
    } else {
      for (const std::string& v : c.any_of) ok = ok || v == *have;
    }
    if (!ok) return ScopeFit::contradicted;
  }
  return all_known ? ScopeFit::confirmed : ScopeFit::unknown;
}

int compare_versions(std::string_view a, std::string_view b) noexcept {
  bool pre_a = false, pre_b = false;
  std::vector<unsigned long> pa, pb;
  try {
    pa = numeric_parts(a, pre_a);
    pb = numeric_parts(b, pre_b);
  } catch (...) {
    return 0;
  }
  const std::size_t n = std::max(pa.size(), pb.size());
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned long x = i < pa.size() ? pa[i] : 0, y = i < pb.size() ? pb[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  if (pre_a != pre_b) return pre_a ? -1 : 1;
  return 0;
}

bool version_in_range(std::string_view version, std::string_view range) {
  for (std::string_view cond : split(range, ',')) {
    cond = trim(cond);
    std::string_view op;
    for (std::string_view candidate : {">=", "<=", "==", "!=", ">", "<"})
      if (cond.substr(0, candidate.size()) == candidate) {
        op = candidate;
        break;
      }
    const std::string_view bound = trim(cond.substr(op.size()));
    if (op.empty() || bound.empty() || !std::isdigit(static_cast<unsigned char>(bound[0])))
      throw std::invalid_argument(
          fmt::format("version condition '{}' needs an operator and a version, like '>=4.45' or '<4.54'", cond));
    const int c = compare_versions(version, bound);
    const bool ok = op == ">="   ? c >= 0
                    : op == "<=" ? c <= 0
                    : op == ">"  ? c > 0
                    : op == "<"  ? c < 0
                    : op == "==" ? c == 0
                                 : c != 0;
    if (!ok) return false;
  }
  return true;
}

}  // namespace errshim
