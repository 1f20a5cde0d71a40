// Memory for the large tables a catalog builds once and then only reads (the
// literal index, the id and key tables, a snapshot's index and plan): from
// transparent huge pages where the kernel gives them on request. Filling
// megabytes of fresh 4 KiB pages was a large part of loading every generated
// layer (README.md, "Generated layers: what they cost"). Smaller blocks, and
// systems without madvise(), use the global allocator.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace errshim::detail {

// At least this many bytes go to their own mapping, rounded up to whole huge
// pages: with lower thresholds the rounding cost more memory than the pages
// saved time (README.md, as above).
inline constexpr std::size_t kBigTableBytes = std::size_t{1} << 20;

void* allocate_big(std::size_t bytes);
void free_big(void* p, std::size_t bytes) noexcept;

template <class T>
struct BigTableAllocator {
  using value_type = T;
  BigTableAllocator() = default;
  template <class U>
  BigTableAllocator(const BigTableAllocator<U>&) noexcept {}  // NOLINT: converting, as allocators are
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_big(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { free_big(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const BigTableAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const BigTableAllocator<U>&) const noexcept {
    return false;
  }
};

// A table sized once (assign, resize or reserve), not grown an element at a
// time: each growth past kBigTableBytes maps anew.
template <class T>
using BigTable = std::vector<T, BigTableAllocator<T>>;

// Bytes read from a file and kept (a snapshot's index).
struct BigBytesDeleter {
  std::size_t size = 0;
  void operator()(char* p) const noexcept { free_big(p, size); }
};
using BigBytes = std::unique_ptr<char[], BigBytesDeleter>;
inline BigBytes make_big_bytes(std::size_t n) { return BigBytes(static_cast<char*>(allocate_big(n)), {n}); }

}  // namespace errshim::detail
