#include "errshim/observer.hpp"
#include "observer_internal.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace errshim {

struct ObserverHandle::Slot {
  explicit Slot(LookupObserver f) : observer(std::move(f)) {}
  const LookupObserver observer;
  // Calls in flight and whether new ones may start: reset() waits on them so
  // that a C caller may free its user data as soon as it returns.
  std::mutex mutex;
  std::condition_variable idle;
  int calls = 0;
  bool live = true;
};

namespace {

using Slot = ObserverHandle::Slot;
using SlotList = std::vector<std::shared_ptr<Slot>>;

struct Registry {
  std::mutex mutex;  // serialises changes to `list`; never held while an observer runs
  std::shared_ptr<const SlotList> list = std::make_shared<const SlotList>();  // read with atomic_load
  std::atomic<std::size_t> size{0};  // lets a lookup skip the snapshot when nobody observes
};

// Never destroyed: a handle in a host's static may outlive every other static.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// The observer this thread is calling, if any: its own lookups are not
// reported, and its own reset() does not wait for itself.
thread_local const Slot* t_calling = nullptr;

void call(Slot& slot, const MatchEvent& event) {
  {
    std::lock_guard<std::mutex> lock(slot.mutex);
    if (!slot.live) return;
    ++slot.calls;
  }
  t_calling = &slot;
  try {
    slot.observer(event);
  } catch (...) {
    // An observer must not change what the host sees.
  }
  t_calling = nullptr;
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (--slot.calls == 0 && !slot.live) slot.idle.notify_all();
}

void unregister(const std::shared_ptr<Slot>& slot) {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto next = std::make_shared<SlotList>();
    const auto current = std::atomic_load(&r.list);
    next->reserve(current->size());
    for (const auto& s : *current)
      if (s != slot) next->push_back(s);
    r.size.store(next->size(), std::memory_order_release);
    std::atomic_store(&r.list, std::shared_ptr<const SlotList>(std::move(next)));
  }
  std::unique_lock<std::mutex> lock(slot->mutex);
  slot->live = false;
  const int own = t_calling == slot.get() ? 1 : 0;
  slot->idle.wait(lock, [&] { return slot->calls == own; });
}

}  // namespace

std::string_view to_string(LookupSite site) noexcept {
  switch (site) {
    case LookupSite::guard: return "guard";
    case LookupSite::rethrow_translated: return "rethrow_translated";
    case LookupSite::remediate: return "remediate";
    case LookupSite::diagnose: return "diagnose";
    case LookupSite::c_api_diagnose: return "c_api_diagnose";
    case LookupSite::c_api_fix_config: return "c_api_fix_config";
  }
  return "unknown";
}

ObserverHandle& ObserverHandle::operator=(ObserverHandle&& other) noexcept {
  if (this != &other) {
    reset();
    slot_ = std::move(other.slot_);
  }
  return *this;
}

ObserverHandle::~ObserverHandle() { reset(); }

void ObserverHandle::reset() noexcept {
  if (!slot_) return;
  try {
    unregister(slot_);
  } catch (...) {
    // Only allocation or a mutex can fail here; the slot is then at least
    // closed to new calls below.
    try {
      std::lock_guard<std::mutex> lock(slot_->mutex);
      slot_->live = false;
    } catch (...) {}
  }
  slot_.reset();
}

ObserverHandle observe_lookups(LookupObserver observer) {
  if (!observer) return {};
  auto slot = std::make_shared<Slot>(std::move(observer));
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto next = std::make_shared<SlotList>(*std::atomic_load(&r.list));
  next->push_back(slot);
  r.size.store(next->size(), std::memory_order_release);
  std::atomic_store(&r.list, std::shared_ptr<const SlotList>(std::move(next)));
  return ObserverHandle(std::move(slot));
}

namespace detail {

bool lookups_observed() noexcept { return registry().size.load(std::memory_order_acquire) != 0; }

void report_lookup(const MatchEvent& event) noexcept {
  if (!lookups_observed() || t_calling != nullptr) return;
  try {
    const auto list = std::atomic_load(&registry().list);
    for (const auto& slot : *list) call(*slot, event);
  } catch (...) {
    // A mutex that cannot be locked: the lookup goes unreported, nothing else changes.
  }
}

}  // namespace detail
}  // namespace errshim
