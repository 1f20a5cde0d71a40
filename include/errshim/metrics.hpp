// Counters of what errshim did, per catalog entry and outcome, for a
// production server's metrics endpoint. Thread-safe; share one instance.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "errshim/remediation.hpp"

namespace errshim {

class Metrics {
 public:
  void count(const Decision& decision);
  std::uint64_t value(const std::string& entry_id, Decision::Outcome outcome) const;
  std::uint64_t total() const;

  // Prometheus text exposition format:
  //   errshim_decisions_total{entry="candle.metavoice.kv_cache_enabled",outcome="applied"} 3
  std::string prometheus() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, Decision::Outcome>, std::uint64_t> counts_;
};

}  // namespace errshim
