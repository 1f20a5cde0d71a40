#include "errshim/metrics.hpp"

#include <fmt/format.h>

namespace errshim {

void Metrics::count(const Decision& d) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[{d.entry_id, d.outcome}];
}

std::uint64_t Metrics::value(const std::string& entry_id, Decision::Outcome outcome) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = counts_.find({entry_id, outcome});
  return it == counts_.end() ? 0 : it->second;
}

std::uint64_t Metrics::total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::uint64_t n = 0;
  for (const auto& kv : counts_) n += kv.second;
  return n;
}

namespace {
// Label values escape backslash, quote and newline (exposition format rules).
std::string label(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

std::string Metrics::prometheus() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out =
      "# HELP errshim_decisions_total Decisions errshim made about inference errors, by catalog entry and outcome.\n"
      "# TYPE errshim_decisions_total counter\n";
  for (const auto& [key, n] : counts_)
    out += fmt::format("errshim_decisions_total{{entry=\"{}\",outcome=\"{}\"}} {}\n", label(key.first),
                       to_string(key.second), n);
  return out;
}

}  // namespace errshim
