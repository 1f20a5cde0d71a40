#include "big_tables.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace errshim::detail {

#if defined(__linux__) && defined(MADV_HUGEPAGE)
namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
std::size_t mapped_size(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
}  // namespace

void* allocate_big(std::size_t bytes) {
  if (bytes < kBigTableBytes) return ::operator new(bytes);
  const std::size_t size = mapped_size(bytes);
  // A huge page more than needed, so that the table can start on a huge
  // page boundary; the ends before and after are given back.
  void* const got = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (got == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<std::uintptr_t>(got);
  const std::uintptr_t start = (at + kHugePage - 1) / kHugePage * kHugePage;
  if (start > at) ::munmap(got, start - at);
  if (const std::size_t after = kHugePage - (start - at); after > 0)
    ::munmap(reinterpret_cast<void*>(start + size), after);
  // A request: where the kernel gives no huge pages, ordinary ones.
  ::madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(start);
}

void free_big(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes < kBigTableBytes) return ::operator delete(p);
  ::munmap(p, mapped_size(bytes));
}
#else
void* allocate_big(std::size_t bytes) { return ::operator new(bytes); }
void free_big(void* p, std::size_t) noexcept { ::operator delete(p); }
#endif

}  // namespace errshim::detail
