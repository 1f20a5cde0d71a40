// Finding many literal strings in a text with one pass: the prefilter in
// front of the regexes.
//
// How it works (a hashed-anchor matcher, of the Rabin-Karp / Wu-Manber
// family; it answers the same question as an Aho-Corasick automaton):
//  * Each key is indexed by "anchors": W-byte windows of the key at chosen
//    offsets. A key of >= 11 bytes goes into the main lane, 8-byte windows
//    tested at every 4th text position, with 4 consecutive anchors (offsets
//    o..o+3): any occurrence starting at p puts exactly one of p+o..p+o+3 on
//    a multiple of 4, so none is skipped. Shorter keys go into lanes of
//    4-byte windows, stride 4 (7-10 bytes) or 1 (4-6 bytes), scanned only
//    when they hold keys; when the stride-1 lane holds any, it takes the
//    7-10 byte keys too (one pass of 4-byte windows, not two).
//  * A test is one load, a multiply and one word of a blocked Bloom filter
//    that fits in L2; positions are independent of each other (no state
//    carried from byte to byte as in an automaton), so the CPU overlaps
//    them. A pass goes to an exact table (window -> keys) and each key there
//    is compared in full: nothing is reported that is not in the text.
//  * 8-byte windows matter: catalog keys are built from a shared vocabulary
//    (op, model and parameter names), so a 4-byte window is shared by
//    hundreds of keys and occurs all over the log text around an error.
// Why not Aho-Corasick: a dense automaton over 100,000 keys needs hundreds
// of MB, a sparse one costs several ns per byte along a chain of dependent
// loads; this index is small and scans log text with one probe per
// position (figures in bench/README.md).
//
// The caller chooses anchors well by passing `gram_weight`: an estimate of
// how common each window is, so a key is found by its rarest stretch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "big_tables.hpp"

namespace errshim::detail {

class LiteralIndex {
 public:
  static constexpr std::size_t kMinKey = 4;  // shorter keys cannot be indexed
  static constexpr std::size_t kMainLaneKey = 11;  // keys this long use 8-byte windows, stride 4

  // How common the `width`-byte window at `p` is (higher: more common); used
  // to pick each key's anchors. Null: all windows count the same.
  using GramWeight = std::function<std::uint32_t(const char* p, std::size_t width)>;

  LiteralIndex() = default;
  // `keys` are the strings to find; a key's id is its index. Keys shorter
  // than kMinKey bytes are left out and listed by unindexed().
  explicit LiteralIndex(const std::vector<std::string>& keys, const GramWeight& gram_weight = nullptr);
  // The same with each key's anchor offset given (anchors[k], as from
  // anchor_offset()): an index rebuilt from stored offsets skips weighing
  // windows. Any offset finds every occurrence; an offset past the key's
  // last usable window is taken as 0.
  LiteralIndex(const std::vector<std::string_view>& keys, const std::vector<std::uint32_t>& anchors);
  // The same, viewing the keys' bytes rather than copying them: they must
  // outlive the index (a catalog's keys are megabytes its layers hold anyway).
  static LiteralIndex viewing(const std::vector<std::string_view>& keys, const std::vector<std::uint32_t>& anchors);
  LiteralIndex(const std::vector<std::string>& keys, const std::vector<std::uint32_t>& anchors)
      : LiteralIndex(std::vector<std::string_view>(keys.begin(), keys.end()), anchors) {}

  // Where in `key` the index anchors it: the offset of its rarest stretch
  // of windows at the width of the lane the key goes to (0 for a key too
  // short to index, or without weights).
  static std::uint32_t anchor_offset(std::string_view key, const GramWeight& gram_weight);

  // Calls on_hit(key_id, position) for every occurrence of every indexed key
  // in `text`, at least once each (an occurrence can be reported twice when
  // a key repeats one of its own anchors), never for a non-occurrence, in no
  // particular order.
  template <class OnHit>
  void scan(std::string_view text, OnHit&& on_hit) const;

  const std::vector<std::size_t>& unindexed() const noexcept { return unindexed_; }
  std::size_t key_count() const noexcept { return keys_.size(); }
  std::string_view key(std::size_t id) const noexcept { return keys_[id]; }
  std::size_t memory_bytes() const noexcept;

  // The `width` (4 or 8) bytes at p, as a number.
  static std::uint64_t load_gram(const char* p, std::size_t width) noexcept {
    if (width == 8) {
      std::uint64_t g;
      std::memcpy(&g, p, 8);
      return g;
    }
    std::uint32_t g;
    std::memcpy(&g, p, 4);
    return g;
  }

 private:
  // 16 bytes: the postings are most of the index's memory, and a catalog
  // load writes them all to fresh pages.
  struct Posting {
    // Eight bytes of the key (all of a shorter one) at check_at(), away from
    // the anchor: keys sharing an anchor mostly share the text around it
    // (" for kv_len", " for kv_lora") and differ further off, so one compare
    // rejects them without touching the key bytes.
    std::uint64_t check;
    std::uint32_t key;
    std::uint16_t offset;  // of the anchor inside the key
    std::uint16_t check_where;  // check_at in the low 12 bits, the bytes checked (4-8) above

    std::size_t check_at() const noexcept { return check_where & 0xFFF; }
    std::uint64_t check_mask() const noexcept { return ~0ull >> (64 - 8 * (check_where >> 12)); }
  };
  static_assert(sizeof(Posting) == 16, "four postings a cache line");
  static constexpr std::size_t kMaxOffset = 0xFFFF;  // of an anchor; one farther in is anchored at 0
  static constexpr std::size_t kMaxCheckAt = 0xFFF;  // a key longer is checked at its start
  struct Slot {
    std::uint64_t gram = 0;
    std::uint32_t begin = 0;  // postings[begin, end)
    std::uint32_t end = 0;  // == begin: empty slot
  };
  // One window width and stride: a filter and the exact table behind it.
  struct Lane {
    std::size_t width = 4;
    std::size_t stride = 1;
    unsigned filter_shift = 64;  // 64 - log2(filter words)
    BigTable<std::uint64_t> filter;  // blocked Bloom filter of the anchors
    // Open addressing by anchor, any size: a hash goes to slot
    // hash * size / 2^64, so the table is sized to its load, not to a power
    // of two (which left it a quarter full at some sizes, megabytes of fresh
    // memory a load wrote).
    BigTable<Slot> table;
    BigTable<Posting> postings;

    std::size_t min_key() const noexcept { return width + stride - 1; }
    bool empty() const noexcept { return postings.empty(); }
    const Slot* find(std::uint64_t gram) const noexcept {
      const std::size_t size = table.size();
      for (std::size_t s = slot_of(table_hash(gram), size);; s = s + 1 == size ? 0 : s + 1) {
        const Slot& slot = table[s];
        if (slot.end == slot.begin) return nullptr;
        if (slot.gram == gram) return &slot;
      }
    }
  };

  static std::uint64_t filter_hash(std::uint64_t gram) noexcept {
    return (gram ^ (gram >> 29)) * 0x9E3779B97F4A7C15ull;
  }
  // Three bits of one 64-bit word per anchor: one load per test, and about
  // 1% false positives at 16 bits per anchor (a single bit would give 6%).
  static std::uint64_t filter_mask(std::uint64_t h) noexcept {
    return (1ull << ((h >> 20) & 63)) | (1ull << ((h >> 26) & 63)) | (1ull << ((h >> 32) & 63));
  }
  static std::size_t slot_of(std::uint64_t hash, std::size_t size) noexcept {
    __extension__ using u128 = unsigned __int128;  // GCC and Clang, on every 64-bit target
    return static_cast<std::size_t>((static_cast<u128>(hash) * size) >> 64);
  }
  static constexpr std::uint64_t kTableMul = 0xD6E8FEB86659FD93ull;
  static std::uint64_t table_hash(std::uint64_t gram) noexcept { return (gram ^ (gram >> 31)) * kTableMul; }
  // Its inverse (table_hash is a bijection): the gram back from its hash.
  static constexpr std::uint64_t odd_inverse(std::uint64_t a) noexcept {
    std::uint64_t x = a;  // right in 3 bits; each step doubles them
    for (int i = 0; i < 5; ++i) x *= 2 - a * x;
    return x;
  }
  static std::uint64_t table_gram(std::uint64_t hash) noexcept {
    const std::uint64_t x = hash * odd_inverse(kTableMul);
    return x ^ (x >> 31) ^ (x >> 62);
  }
  static void prefetch(const void* p) noexcept {
#if defined(__GNUC__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
  }

  void build_lane(std::size_t l, std::size_t n, const std::vector<std::string_view>& keys,
                  const std::vector<std::uint8_t>& lane_of, const std::vector<std::uint32_t>& offset);
  template <std::size_t Width, class OnHit>
  void scan_lane(const Lane& lane, std::string_view text, OnHit& on_hit) const;

  void build(const std::vector<std::string_view>& keys, const std::vector<std::uint32_t>& anchors, bool copy);

  std::unique_ptr<char[]> owned_;  // the keys' bytes, unless the caller keeps them (viewing)
  std::vector<std::string_view> keys_;
  std::vector<std::size_t> unindexed_;
  Lane lanes_[3];  // 8-byte windows stride 4; 4-byte stride 4; 4-byte stride 1
};

template <std::size_t Width, class OnHit>
void LiteralIndex::scan_lane(const Lane& lane, std::string_view text, OnHit& on_hit) const {
  const std::size_t n = text.size();
  if (n < Width) return;
  const char* const data = text.data();
  const std::uint64_t* const filter = lane.filter.data();
  const unsigned shift = lane.filter_shift;
  const std::size_t stride = lane.stride;
  const std::size_t last = n - Width;  // last position a window fits at
  // In batches: the filter tests of a batch first, each pass prefetching
  // its table slot, then the lookups, each prefetching its postings, then
  // the postings. The table and postings are MBs, far from the core; one
  // position after the other, every pass waited for two cache misses in turn.
  constexpr std::size_t kBatch = 16;
  std::size_t at[kBatch];
  std::uint64_t grams[kBatch];
  const Slot* slots[kBatch];
  for (std::size_t i = 0; i <= last;) {
    std::size_t count = 0;
    for (; i <= last && count < kBatch; i += stride) {
      const std::uint64_t gram = load_gram(data + i, Width);
      const std::uint64_t h = filter_hash(gram);
      const std::uint64_t mask = filter_mask(h);
      if ((filter[h >> shift] & mask) != mask) continue;
      prefetch(&lane.table[slot_of(table_hash(gram), lane.table.size())]);
      at[count] = i;
      grams[count++] = gram;
    }
    for (std::size_t b = 0; b < count; ++b) {
      slots[b] = lane.find(grams[b]);
      if (slots[b]) prefetch(&lane.postings[slots[b]->begin]);
    }
    for (std::size_t b = 0; b < count; ++b) {
      const Slot* slot = slots[b];
      if (!slot) continue;
      const std::size_t pos = at[b];
      for (std::uint32_t k = slot->begin; k < slot->end; ++k) {
        const Posting& p = lane.postings[k];
        if (pos < p.offset) continue;
        const std::size_t start = pos - p.offset;
        if (start + p.check_at() + 8 <= n && (load_gram(data + start + p.check_at(), 8) & p.check_mask()) != p.check)
          continue;
        const std::string_view key = keys_[p.key];
        if (start + key.size() > n) continue;
        if (std::memcmp(data + start, key.data(), key.size()) == 0) on_hit(static_cast<std::size_t>(p.key), start);
      }
    }
  }
}

template <class OnHit>
void LiteralIndex::scan(std::string_view text, OnHit&& on_hit) const {
  if (!lanes_[0].empty()) scan_lane<8>(lanes_[0], text, on_hit);
  if (!lanes_[1].empty()) scan_lane<4>(lanes_[1], text, on_hit);
  if (!lanes_[2].empty()) scan_lane<4>(lanes_[2], text, on_hit);
}

}  // namespace errshim::detail
