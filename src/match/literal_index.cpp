#include "literal_index.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>

namespace errshim::detail {

namespace {

unsigned log2_ceil(std::size_t n) {
  unsigned b = 0;
  while ((std::size_t{1} << b) < n) ++b;
  return b;
}

// The offset of the `count` consecutive `width`-byte windows of `key` with
// the least total weight: the key's rarest stretch, where the scan looks.
std::size_t rarest_windows(std::string_view key, std::size_t width, std::size_t count,
                           const LiteralIndex::GramWeight& weight) {
  const std::size_t windows = key.size() - width + 1;
  if (!weight || windows <= count) return 0;
  std::vector<std::uint64_t> w(windows);
  for (std::size_t i = 0; i < windows; ++i) w[i] = weight(key.data() + i, width);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < count; ++i) sum += w[i];
  std::uint64_t best = sum;
  std::size_t at = 0;
  for (std::size_t o = 1; o + count <= windows; ++o) {
    sum += w[o + count - 1] - w[o - 1];
    if (sum < best) best = sum, at = o;
  }
  return at;
}

}  // namespace

namespace {
// The window width and stride of the lane a key of `size` bytes goes to,
// fastest first (see the header); {0, 0}: too short to index.
struct LaneShape {
  std::size_t width, stride;
};
constexpr LaneShape kLanes[3] = {{8, 4}, {4, 4}, {4, 1}};
std::size_t lane_for(std::size_t size) {
  std::size_t l = 0;
  while (l < 3 && size < kLanes[l].width + kLanes[l].stride - 1) ++l;
  return l;
}
}  // namespace

std::uint32_t LiteralIndex::anchor_offset(std::string_view key, const GramWeight& gram_weight) {
  const std::size_t l = lane_for(key.size());
  if (l == 3) return 0;
  return static_cast<std::uint32_t>(rarest_windows(key, kLanes[l].width, kLanes[l].stride, gram_weight));
}

LiteralIndex::LiteralIndex(const std::vector<std::string>& keys, const GramWeight& gram_weight)
    : LiteralIndex(keys, [&] {
        std::vector<std::uint32_t> anchors(keys.size());
        for (std::size_t k = 0; k < keys.size(); ++k) anchors[k] = anchor_offset(keys[k], gram_weight);
        return anchors;
      }()) {}

LiteralIndex::LiteralIndex(const std::vector<std::string_view>& keys, const std::vector<std::uint32_t>& anchors) {
  build(keys, anchors, true);
}

LiteralIndex LiteralIndex::viewing(const std::vector<std::string_view>& keys,
                                   const std::vector<std::uint32_t>& anchors) {
  LiteralIndex index;
  index.build(keys, anchors, false);
  return index;
}

void LiteralIndex::build(const std::vector<std::string_view>& keys, const std::vector<std::uint32_t>& anchors,
                         bool copy) {
  if (keys.size() >= std::numeric_limits<std::uint32_t>::max()) throw std::length_error("literal index: too many keys");
  if (anchors.size() != keys.size()) throw std::invalid_argument("literal index: one anchor per key expected");
  keys_ = keys;
  if (copy) {
    std::size_t total = 0;
    for (const std::string_view k : keys) total += k.size();
    owned_.reset(new char[total + 1]);
    char* at = owned_.get();
    for (std::string_view& k : keys_) {
      if (!k.empty()) std::memcpy(at, k.data(), k.size());
      k = std::string_view(at, k.size());
      at += k.size();
    }
  }

  for (std::size_t l = 0; l < 3; ++l) lanes_[l].width = kLanes[l].width, lanes_[l].stride = kLanes[l].stride;
  static_assert(kMainLaneKey == 8 + 4 - 1, "the main lane's shortest key");
  std::vector<std::uint8_t> lane_of(keys.size());
  std::vector<std::uint32_t> offset(keys.size());  // of each indexed key's anchor
  std::size_t per_lane[3] = {0, 0, 0};  // anchors
  // When keys of 4-6 bytes make the stride-1 lane scan every position
  // anyway, the 7-10 byte keys go there too, on one anchor each (their
  // stretch's first window): a second 4-byte lane's pass over the text would
  // test again windows the first already hashed.
  bool every_position = false;
  for (const std::string_view key : keys) every_position = every_position || lane_for(key.size()) == 2;
  for (std::size_t id = 0; id < keys.size(); ++id) {
    const std::string_view key = keys[id];
    std::size_t l = lane_for(key.size());
    if (l == 1 && every_position) l = 2;
    lane_of[id] = static_cast<std::uint8_t>(l);
    if (l == 3) {
      unindexed_.push_back(id);
      continue;
    }
    // `stride` consecutive windows from the anchor must fit in the key.
    offset[id] = anchors[id] + lanes_[l].min_key() <= key.size() && anchors[id] + lanes_[l].stride <= kMaxOffset
                     ? anchors[id]
                     : 0;
    per_lane[l] += lanes_[l].stride;
  }
  for (std::size_t l = 0; l < 3; ++l)
    if (per_lane[l] > 0) build_lane(l, per_lane[l], keys_, lane_of, offset);
}

// Lane `l`'s postings, filter and table, from its `n` anchors.
//
// The postings are put in the order of their anchor's table hash, not by
// gram: table_hash is a bijection, so equal hashes are equal grams and each
// gram's postings end up together; and a slot is the hash's top bits, so
// the table fills front to back (random inserts into a table of MBs waited
// on a cache miss each). A counting sort on the hash's top bits writes each
// posting straight to its place (the anchors in a list of their own, then
// sorted, were most of the memory a build touched), then each small bucket
// is put in hash order; the keys come in order and each gram's postings
// keep it.
void LiteralIndex::build_lane(std::size_t l, std::size_t n, const std::vector<std::string_view>& keys,
                              const std::vector<std::uint8_t>& lane_of, const std::vector<std::uint32_t>& offset) {
  static_assert(odd_inverse(kTableMul) * kTableMul == 1, "table_gram inverts table_hash");
  Lane& lane = lanes_[l];
  if (n >= std::numeric_limits<std::uint32_t>::max()) throw std::length_error("literal index: too many anchors");
  const std::size_t width = lane.width, stride = lane.stride;
  auto gram_at = [&](std::size_t id, std::size_t j) { return load_gram(keys[id].data() + offset[id] + j, width); };
  const unsigned bucket_bits = std::clamp(log2_ceil(n / 4), 4u, 18u);  // a few anchors a bucket
  const unsigned bucket_shift = 64 - bucket_bits;
  std::vector<std::uint32_t> bucket((std::size_t{1} << bucket_bits) + 1, 0);
  for (std::size_t id = 0; id < keys.size(); ++id)
    if (lane_of[id] == l)
      for (std::size_t j = 0; j < stride; ++j) ++bucket[(table_hash(gram_at(id, j)) >> bucket_shift) + 1];
  for (std::size_t b = 1; b < bucket.size(); ++b) bucket[b] += bucket[b - 1];

  BigTable<Posting>& postings = lane.postings;
  postings.resize(n);
  std::unique_ptr<std::uint64_t[]> hash(new std::uint64_t[n]);  // of each posting's anchor
  {
    std::vector<std::uint32_t> fill(bucket.begin(), bucket.end() - 1);
    for (std::size_t id = 0; id < keys.size(); ++id) {
      if (lane_of[id] != l) continue;
      const std::string_view key = keys[id];
      const std::size_t o = offset[id];
      // The 8 bytes at the end of the key farther from the anchor.
      std::uint64_t check = 0;
      const std::size_t check_len = std::min<std::size_t>(key.size(), 8);
      const std::size_t anchor_middle = o + (width + stride - 1) / 2;
      const std::size_t check_at =
          key.size() > 8 && 2 * anchor_middle < key.size() && key.size() - 8 <= kMaxCheckAt ? key.size() - 8 : 0;
      std::memcpy(&check, key.data() + check_at, check_len);
      const auto check_where = static_cast<std::uint16_t>(check_at | check_len << 12);
      for (std::size_t j = 0; j < stride; ++j) {
        const std::uint64_t h = table_hash(gram_at(id, j));
        const std::uint32_t at = fill[h >> bucket_shift]++;
        postings[at] = {check, static_cast<std::uint32_t>(id), static_cast<std::uint16_t>(o + j), check_where};
        hash[at] = h;
      }
    }
  }
  for (std::size_t b = 0; b + 1 < bucket.size(); ++b) {
    const std::size_t first = bucket[b], last = bucket[b + 1];
    if (last - first > 32) {  // a gram many keys share: rare, sorted aside
      std::vector<std::pair<std::uint64_t, Posting>> part;
      part.reserve(last - first);
      for (std::size_t i = first; i < last; ++i) part.push_back({hash[i], postings[i]});
      std::stable_sort(part.begin(), part.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (std::size_t i = first; i < last; ++i) hash[i] = part[i - first].first, postings[i] = part[i - first].second;
      continue;
    }
    for (std::size_t i = first + 1; i < last; ++i)  // insertion: a bucket holds a few
      for (std::size_t j = i; j > first && hash[j] < hash[j - 1]; --j) {
        std::swap(hash[j], hash[j - 1]);
        std::swap(postings[j], postings[j - 1]);
      }
  }
  bucket = {};
  std::size_t distinct = 0;
  for (std::size_t i = 0; i < n; ++i) distinct += (i == 0 || hash[i] != hash[i - 1]);

  // 16 filter bits per distinct anchor (3 set per anchor): ~1% false
  // positives; capped at 2 MiB so the filter stays in L2 even at 100k keys.
  const unsigned word_bits = std::clamp(log2_ceil(distinct * 16 / 64), 4u, 18u);
  lane.filter.assign(std::size_t{1} << word_bits, 0);
  lane.filter_shift = 64 - word_bits;
  // Three fifths full: linear probing stays short.
  const std::size_t table_size = std::max<std::size_t>(16, distinct * 5 / 3 + 1);
  lane.table.assign(table_size, Slot{});

  // Linear probing filled in slot order: a gram goes to the first free slot
  // from its own, and every slot between them is taken (the run before it
  // ends at `next`). Those pushed past the end wrap round, placed last.
  std::size_t next = 0;
  std::vector<Slot> wrapped;
  for (std::size_t i = 0; i < n;) {
    const std::uint64_t h = hash[i];
    const auto begin = static_cast<std::uint32_t>(i);
    const std::uint64_t gram = table_gram(h);  // not from the key's bytes: a cache miss each, in hash order
    while (i < n && hash[i] == h) ++i;
    const std::uint64_t f = filter_hash(gram);
    lane.filter[f >> lane.filter_shift] |= filter_mask(f);
    const Slot slot{gram, begin, static_cast<std::uint32_t>(i)};
    const std::size_t s = std::max<std::size_t>(slot_of(h, table_size), next);
    if (s >= table_size) {
      wrapped.push_back(slot);
      continue;
    }
    lane.table[s] = slot;
    next = s + 1;
  }
  for (const Slot& slot : wrapped) {
    std::size_t s = 0;
    while (lane.table[s].end != lane.table[s].begin) s = s + 1 == table_size ? 0 : s + 1;
    lane.table[s] = slot;
  }
}

std::size_t LiteralIndex::memory_bytes() const noexcept {
  std::size_t bytes = keys_.capacity() * sizeof(std::string_view);
  if (owned_)
    for (const std::string_view k : keys_) bytes += k.size();
  for (const Lane& l : lanes_)
    bytes += l.filter.capacity() * sizeof(std::uint64_t) + l.table.capacity() * sizeof(Slot) +
             l.postings.capacity() * sizeof(Posting);
  return bytes;
}

}  // namespace errshim::detail
