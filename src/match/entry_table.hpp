// A built catalog's entries, each decoded already or decoded on first use
// from a lazily read snapshot (snapshot.hpp). The matcher reads an entry
// only when its literal occurs in a message, so a catalog of many generated
// entries decodes the few a process meets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/catalog.hpp"
#include "snapshot.hpp"

namespace errshim::detail {

// Strings viewed elsewhere (ids, literals) -> positions, in one flat table
// with linear probing: a node allocated per key, as std::unordered_map
// does, was a good part of building a catalog of many entries, and again
// of freeing it.
class ViewMap {
 public:
  // 16 bytes, no hash kept: the maps of a build of every layer are
  // megabytes of fresh memory, and a probe compares the length first.
  struct Item {
    const char* data = nullptr;  // null: a free item
    std::uint32_t size = 0;
    std::uint32_t value = 0;
    std::string_view key() const noexcept { return {data, size}; }
    void set_key(std::string_view k) noexcept { data = k.data(), size = static_cast<std::uint32_t>(k.size()); }
  };
  // Room for `n` keys without growing.
  void reserve(std::size_t n);
  // The item of `key`, added with `value` when there is none (fresh).
  // Valid until the next insert; its key may be replaced by an equal view.
  // Keys are shorter than 4 GiB (longer: std::length_error).
  Item& insert(std::string_view key, std::uint32_t value, bool& fresh) { return insert(key, hash(key), value, fresh); }
  // The same with the key's hash given: a caller inserting many keys hashes
  // them ahead and prefetches their slots, each a cache miss in a table of
  // megabytes.
  Item& insert(std::string_view key, std::uint32_t hash, std::uint32_t value, bool& fresh);
  static std::uint32_t hash(std::string_view key) noexcept;
  static constexpr std::size_t kPrefetchAhead = 8;  // inserts: enough to cover a miss
  void prefetch(std::uint32_t hash) const noexcept {
#if defined(__GNUC__)
    if (!items_.empty()) __builtin_prefetch(&items_[hash & (items_.size() - 1)]);
#else
    (void)hash;
#endif
  }
  const Item* find(std::string_view key) const noexcept;
  std::size_t size() const noexcept { return size_; }

 private:
  BigTable<Item> items_;  // a power of two
  std::size_t size_ = 0;
};

class EntryTable {
 public:
  EntryTable() = default;
  explicit EntryTable(std::vector<std::shared_ptr<const Entry>> entries);
  EntryTable(EntryTable&&) noexcept;
  EntryTable& operator=(EntryTable&&) noexcept;
  ~EntryTable();

  // Appends an entry; or entry `pos` of `from`, decoded on first use, with
  // the backtracking-risk check a user catalog gets when `risk_check`.
  void add(std::shared_ptr<const Entry> entry);
  void add(const std::shared_ptr<const LazySnapshot>& from, std::size_t pos, bool risk_check);
  // Room for `n` entries without growing.
  void reserve(std::size_t n);

  std::size_t size() const noexcept { return slots_.size(); }
  // Never decodes.
  std::string_view id(std::size_t i) const noexcept;
  // Whether entry `i` waits for its first use to be decoded (a lazy entry
  // with nothing to compile when the catalog is built).
  bool deferred(std::size_t i) const noexcept;
  // Entry `i`, decoded on first use. An entry whose record is damaged, or
  // whose pattern fails the risk check, is a stand-in that never matches:
  // its id, the snapshot's name, and problem(i) saying why.
  const std::shared_ptr<const Entry>& get(std::size_t i) const;
  // Why entry `i` cannot be matched (empty: it can); read after get(i).
  const std::string& problem(std::size_t i) const noexcept;
  // A hash of every entry's record checksum, in order (Catalog::content_hash):
  // a lazy entry's from its snapshot's index, without decoding it.
  std::uint64_t content_hash() const;
  // Every entry, decoded (Catalog::entries()).
  const std::vector<std::shared_ptr<const Entry>>& all() const;

 private:
  // 40 bytes: a build of every layer writes one per entry to fresh memory.
  struct Slot {
    mutable std::shared_ptr<const Entry> entry;  // set once, under `once` when lazy
    const LazySnapshot* from = nullptr;  // lazy: decoded from here
    std::uint32_t pos = 0;
    bool risk_check = false;
    mutable std::unique_ptr<const std::string> problem;  // rare: only a damaged or refused entry has one
  };
  void decode(std::size_t i) const;

  // Per-slot once flags (a deque: adding one moves none), and all().
  struct Lazy {
    std::deque<std::once_flag> once;
    std::once_flag all_once;
    std::vector<std::shared_ptr<const Entry>> all;
  };
  BigTable<Slot> slots_;
  std::unique_ptr<Lazy> lazy_ = std::make_unique<Lazy>();
  std::vector<std::shared_ptr<const LazySnapshot>> keep_;  // what lazy slots point into
};

}  // namespace errshim::detail
