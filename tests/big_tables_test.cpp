// The memory of a catalog's large tables: huge pages asked for where a table
// is large, the global allocator below that, the contents whole either way.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "big_tables.hpp"

namespace {

using errshim::detail::BigTable;
using errshim::detail::kBigTableBytes;

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

#if defined(__linux__)
// The VmFlags of the mapping holding `p`, from /proc/self/smaps ("" when
// none holds it). "hg": madvise(MADV_HUGEPAGE) was asked for it.
std::string vm_flags_at(const void* p) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8);
  }
  return "";
}

bool asks_for_huge_pages(const void* p) { return (" " + vm_flags_at(p) + " ").find(" hg ") != std::string::npos; }
#endif

TEST(BigTables, ALargeTableStartsOnAHugePageAndAsksForHugePages) {
  BigTable<std::uint64_t> table(kBigTableBytes / sizeof(std::uint64_t) + 1000, 7);
  ASSERT_GT(table.size() * sizeof(std::uint64_t), kBigTableBytes);
#if defined(__linux__)
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(table.data()) % kHugePage, 0u);
  EXPECT_TRUE(asks_for_huge_pages(table.data())) << vm_flags_at(table.data());
  EXPECT_TRUE(asks_for_huge_pages(&table.back())) << "the whole table, to its last element";
#endif
  for (const std::uint64_t v : table) ASSERT_EQ(v, 7u);
}

TEST(BigTables, ASmallTableComesFromTheGlobalAllocator) {
  BigTable<std::uint64_t> table(1000, 7);
#if defined(__linux__)
  EXPECT_FALSE(asks_for_huge_pages(table.data())) << vm_flags_at(table.data());
#endif
  for (const std::uint64_t v : table) ASSERT_EQ(v, 7u);
}

TEST(BigTables, GrowingAcrossTheThresholdKeepsEveryElement) {
  const std::size_t small = kBigTableBytes / sizeof(std::uint32_t) / 4;
  BigTable<std::uint32_t> table;
  for (std::uint32_t i = 0; i < small; ++i) table.push_back(i * 3);
  table.resize(4 * small + 12345);  // past the threshold: moved to a mapping
  for (std::uint32_t i = 0; i < small; ++i) ASSERT_EQ(table[i], i * 3) << i;
  for (std::size_t i = small; i < table.size(); ++i) ASSERT_EQ(table[i], 0u) << i;
  BigTable<std::uint32_t> copy = table;  // and a copy of a mapped one
  table.clear();
  table.shrink_to_fit();  // unmapped: the copy holds its own memory
  ASSERT_EQ(copy.size(), 4 * small + 12345);
  for (std::uint32_t i = 0; i < small; ++i) ASSERT_EQ(copy[i], i * 3) << i;
}

TEST(BigTables, BytesReadIntoALargeBufferAreKept) {
  const std::size_t n = kBigTableBytes + 17;
  errshim::detail::BigBytes bytes = errshim::detail::make_big_bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i % 251);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bytes[i], static_cast<char>(i % 251)) << i;
#if defined(__linux__)
  EXPECT_TRUE(asks_for_huge_pages(bytes.get()));
#endif
}

}  // namespace
