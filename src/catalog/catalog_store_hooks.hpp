// A seam for tests that interleave reloads deterministically (see
// tests/catalog_store_test.cpp). Null in production: one atomic load per
// reload.
#pragma once

#include <atomic>

namespace errshim::detail {

enum class StoreHookPoint {
  reload_decided,  // reload_if_changed() saw a change and is about to load
  lock_contended,  // a reload found another one running and will wait for it
};

using StoreHook = void (*)(StoreHookPoint);
extern std::atomic<StoreHook> catalog_store_hook;

}  // namespace errshim::detail
