// Timing and reporting one catalog lookup to the observers of
// errshim/observer.hpp, at the sites that make lookups for the host.
#pragma once

#include <chrono>
#include <string_view>

#include "errshim/observer.hpp"

namespace errshim::detail {

// Started just before a lookup: reads the clock only when someone observes.
class LookupClock {
 public:
  LookupClock() noexcept : on_(lookups_observed()) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  void report(LookupSite site, std::string_view text, const Diagnosis* diagnosis) const noexcept {
    if (!on_) return;
    report_lookup(MatchEvent{text, diagnosis, std::chrono::steady_clock::now() - start_, site});
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace errshim::detail
