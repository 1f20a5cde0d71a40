// Observing catalog lookups: every time errshim looks an error up for the
// host (guard, rethrow_translated, remediate, diagnose, the C API), the
// lookup is reported to the observers the host registered, for metrics of
// what the catalog misses and how long lookups take.
//
//   auto handle = errshim::observe_lookups([](const errshim::MatchEvent& e) {
//     if (!e.diagnosis) log_unknown(errshim::fingerprint(e.text).id, e.text);
//   });
//   ...                                   // every thread's lookups reach the lambda
//   handle.reset();                       // or let it go out of scope
//
// Observers are process-wide and called on the thread that made the lookup,
// possibly by several threads at once. A throw from an observer is swallowed:
// what the host gets (the translated error, the original rethrown unchanged,
// the diagnosis) is the same as with no observer. Lookups an observer makes
// itself (it calls guard or diagnose) are not reported, so an observer never
// recurses into itself. An error already translated (translated_error) needs
// no lookup and gives none.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "errshim/diagnosis.hpp"

namespace errshim {

// Where a lookup was made.
enum class LookupSite {
  guard,  // errshim::guard(f, ...)
  rethrow_translated,  // errshim::rethrow_translated(...) called by the host in its own catch block
  remediate,  // errshim::remediate(): the error of a failed call
  diagnose,  // errshim::diagnose(message, ...)
  c_api_diagnose,  // errshim_diagnose() (the Python package's diagnose, explain and translate)
  c_api_fix_config,  // errshim_fix_config()
};
// "guard", "rethrow_translated", "remediate", "diagnose", "c_api_diagnose", "c_api_fix_config".
std::string_view to_string(LookupSite site) noexcept;

// One catalog lookup. Everything it points to is valid during the observer's
// call only: copy what you keep.
struct MatchEvent {
  std::string_view text;  // what was matched: what() and its nested chain, or the message
  const Diagnosis* diagnosis = nullptr;  // null: the catalog does not know the error
  std::chrono::nanoseconds elapsed{0};  // the lookup alone
  LookupSite site = LookupSite::remediate;
  // What went wrong while matching without stopping it (an entry hit the
  // regex complexity limit, the input was cut to the size cap): the host's
  // one way to hear of it from guard() and diagnose(), whose results do not
  // carry it. Null or empty: nothing.
  const std::vector<std::string>* problems = nullptr;
};

using LookupObserver = std::function<void(const MatchEvent&)>;

// Keeps an observer registered; destroying or reset() unregisters it. Once
// reset() returns the observer is not running on any other thread and is not
// called again (reset() from inside the observer itself does not wait for
// its own call). Move-only.
class ObserverHandle {
 public:
  ObserverHandle() noexcept = default;
  ObserverHandle(ObserverHandle&& other) noexcept = default;
  ObserverHandle& operator=(ObserverHandle&& other) noexcept;
  ObserverHandle(const ObserverHandle&) = delete;
  ObserverHandle& operator=(const ObserverHandle&) = delete;
  ~ObserverHandle();

  void reset() noexcept;
  explicit operator bool() const noexcept { return slot_ != nullptr; }

  struct Slot;  // the registry's record of one observer (src/remedy/observer.cpp)

 private:
  friend ObserverHandle observe_lookups(LookupObserver observer);
  explicit ObserverHandle(std::shared_ptr<Slot> slot) noexcept : slot_(std::move(slot)) {}
  std::shared_ptr<Slot> slot_;
};

// Registers `observer` for every lookup in the process, on every thread,
// until the handle goes. Thread-safe; observers are called in the order they
// were registered. An empty function registers nothing (an empty handle).
[[nodiscard]] ObserverHandle observe_lookups(LookupObserver observer);

}  // namespace errshim
