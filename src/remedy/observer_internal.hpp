// Reporting a lookup to the observers of errshim/observer.hpp: used by
// errshim's own lookup sites (guard, remediate, the C API), not by hosts.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/diagnosis.hpp"
#include "errshim/observer.hpp"

namespace errshim::detail {

// True when an observer is registered: lookup sites skip timing otherwise.
bool lookups_observed() noexcept;
// Calls every registered observer with `event`; never throws.
void report_lookup(const MatchEvent& event) noexcept;

// Started just before a lookup (by errshim's own lookup sites, the C API
// among them): reads the clock only when someone observes.
class LookupClock {
 public:
  LookupClock() noexcept : on_(lookups_observed()) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  void report(LookupSite site, std::string_view text, const Diagnosis* diagnosis,
              const std::vector<std::string>* problems = nullptr) const noexcept {
    if (on_) report_lookup(MatchEvent{text, diagnosis, std::chrono::steady_clock::now() - start_, site, problems});
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace errshim::detail
