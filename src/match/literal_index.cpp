#include "literal_index.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
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
  std::size_t total = 0;
  for (const std::string_view k : keys) total += k.size();
  if (total >= std::numeric_limits<std::uint32_t>::max() || keys.size() >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("literal index: keys too large");
  if (anchors.size() != keys.size()) throw std::invalid_argument("literal index: one anchor per key expected");
  key_bytes_.reserve(total);
  key_begin_.reserve(keys.size() + 1);

  for (std::size_t l = 0; l < 3; ++l) lanes_[l].width = kLanes[l].width, lanes_[l].stride = kLanes[l].stride;
  static_assert(kMainLaneKey == 8 + 4 - 1, "the main lane's shortest key");
  std::vector<std::pair<std::uint64_t, Posting>> lane_anchors[3];
  {  // sized up front: grown by doubling they were touched twice over
    std::size_t per_lane[3] = {0, 0, 0};
    for (const std::string_view key : keys)
      if (const std::size_t l = lane_for(key.size()); l < 3) per_lane[l] += kLanes[l].stride;
    for (std::size_t l = 0; l < 3; ++l) lane_anchors[l].reserve(per_lane[l]);
  }
  for (std::size_t id = 0; id < keys.size(); ++id) {
    const std::string_view key = keys[id];
    key_begin_.push_back(static_cast<std::uint32_t>(key_bytes_.size()));
    key_bytes_ += key;
    const std::size_t l = lane_for(key.size());
    if (l == 3) {
      unindexed_.push_back(id);
      continue;
    }
    const Lane& lane = lanes_[l];
    // `stride` consecutive windows from the anchor must fit in the key.
    const std::size_t o = anchors[id] + lane.min_key() <= key.size() ? anchors[id] : 0;
    // The 8 bytes at the end of the key farther from the anchor.
    std::uint64_t check = 0, check_mask = 0;
    const std::size_t check_len = std::min<std::size_t>(key.size(), 8);
    const std::size_t anchor_middle = o + (lane.width + lane.stride - 1) / 2;
    const std::size_t check_at = key.size() > 8 && 2 * anchor_middle < key.size() ? key.size() - 8 : 0;
    std::memcpy(&check, key.data() + check_at, check_len);
    std::memset(&check_mask, 0xFF, check_len);
    for (std::size_t j = 0; j < lane.stride; ++j)
      lane_anchors[l].push_back({load_gram(key.data() + o + j, lane.width),
                                 {static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(o + j), check, check_mask,
                                  static_cast<std::uint32_t>(check_at)}});
  }
  key_begin_.push_back(static_cast<std::uint32_t>(key_bytes_.size()));
  for (std::size_t l = 0; l < 3; ++l) lanes_[l].build(std::move(lane_anchors[l]));
}

void LiteralIndex::Lane::build(std::vector<std::pair<std::uint64_t, Posting>> anchors) {
  if (anchors.empty()) return;
  std::sort(anchors.begin(), anchors.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.key < b.second.key;
  });
  std::size_t distinct = 0;
  for (std::size_t i = 0; i < anchors.size(); ++i) distinct += (i == 0 || anchors[i].first != anchors[i - 1].first);

  // 16 filter bits per distinct anchor (3 set per anchor): ~1% false
  // positives; capped at 2 MiB so the filter stays in L2 even at 100k keys.
  const unsigned word_bits = std::clamp(log2_ceil(distinct * 16 / 64), 4u, 18u);
  filter.assign(std::size_t{1} << word_bits, 0);
  filter_shift = 64 - word_bits;
  const unsigned table_bits = std::max(4u, log2_ceil(distinct * 2));
  table.assign(std::size_t{1} << table_bits, Slot{});
  table_shift = 64 - table_bits;

  postings.reserve(anchors.size());
  const std::size_t mask = table.size() - 1;
  for (std::size_t i = 0; i < anchors.size();) {
    const std::uint64_t gram = anchors[i].first;
    const auto begin = static_cast<std::uint32_t>(postings.size());
    for (; i < anchors.size() && anchors[i].first == gram; ++i) postings.push_back(anchors[i].second);
    const std::uint64_t h = filter_hash(gram);
    filter[h >> filter_shift] |= filter_mask(h);
    std::size_t s = table_hash(gram) >> table_shift;
    while (table[s].end != table[s].begin) s = (s + 1) & mask;
    table[s] = {gram, begin, static_cast<std::uint32_t>(postings.size())};
  }
}

std::size_t LiteralIndex::memory_bytes() const noexcept {
  std::size_t bytes = key_bytes_.capacity() + key_begin_.capacity() * sizeof(std::uint32_t);
  for (const Lane& l : lanes_)
    bytes += l.filter.capacity() * sizeof(std::uint64_t) + l.table.capacity() * sizeof(Slot) +
             l.postings.capacity() * sizeof(Posting);
  return bytes;
}

}  // namespace errshim::detail
