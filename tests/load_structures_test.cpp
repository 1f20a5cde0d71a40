// The structures a catalog build fills for every entry: the flat map of
// ids and literals (ViewMap) and the literal index's table, filled in hash
// order with runs that wrap round its end.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "entry_table.hpp"
#include "literal_index.hpp"

namespace errshim::detail {
namespace {

TEST(ViewMap, FindsEveryKeyInsertedAcrossGrowthAndNoOther) {
  std::vector<std::string> keys;
  for (int i = 0; i < 5000; ++i) keys.push_back("entry.id." + std::to_string(i * 7919 % 100003));
  ViewMap map;  // no reserve: it grows many times
  for (std::size_t i = 0; i < keys.size(); ++i) {
    bool fresh = false;
    EXPECT_EQ(map.insert(keys[i], static_cast<std::uint32_t>(i), fresh).value, i);
    EXPECT_TRUE(fresh) << keys[i];
  }
  EXPECT_EQ(map.size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const ViewMap::Item* it = map.find(keys[i]);
    ASSERT_NE(it, nullptr) << keys[i];
    EXPECT_EQ(it->value, i);
    EXPECT_EQ(it->key(), keys[i]);
  }
  EXPECT_EQ(map.find("entry.id.100004"), nullptr);
  EXPECT_EQ(map.find("entry.id."), nullptr);
  EXPECT_EQ(map.find(""), nullptr);
}

TEST(ViewMap, InsertingAKeyAgainKeepsItsFirstValue) {
  ViewMap map;
  map.reserve(2);
  bool fresh = false;
  map.insert("a.b", 3, fresh);
  const std::string again = "a.b";  // equal text at another address
  ViewMap::Item& it = map.insert(again, 9, fresh);
  EXPECT_FALSE(fresh);
  EXPECT_EQ(it.value, 3u);
  EXPECT_EQ(map.size(), 1u);
}

TEST(ViewMap, AKeyRepointedToAnEqualViewOutlivesTheFirst) {
  // The catalog repoints an id replaced by a later layer to that layer's
  // copy: the first copy may then go.
  ViewMap map;
  auto first = std::make_unique<std::string>("candle.metal.not_implemented");
  const std::string second = *first;
  bool fresh = false;
  map.insert(*first, 1, fresh);
  map.insert(second, 2, fresh).set_key(second);
  first->assign(first->size(), 'x');
  first.reset();
  const ViewMap::Item* it = map.find(second);
  ASSERT_NE(it, nullptr);
  EXPECT_EQ(it->value, 1u);
  EXPECT_EQ(it->key().data(), second.data());
}

TEST(ViewMap, AnEmptyKeyIsAKeyLikeAnyOther) {
  ViewMap map;
  bool fresh = false;
  map.insert(std::string_view(), 4, fresh);
  EXPECT_TRUE(fresh);
  map.insert("", 5, fresh);
  EXPECT_FALSE(fresh);
  ASSERT_NE(map.find(""), nullptr);
  EXPECT_EQ(map.find(std::string_view())->value, 4u);
  EXPECT_EQ(map.size(), 1u);
}

TEST(LiteralIndex, FindsEveryKeyWhateverSlotsItsAnchorsTake) {
  // Many small sets of keys over a small alphabet: shared anchors (one slot,
  // many postings), full runs of slots, and runs pushed past the table's
  // end that wrap round to its start (in many of these rounds).
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> keys(1 + rng() % 300);
    for (std::string& k : keys) {
      k.resize(4 + rng() % 14);
      for (char& c : k) c = "abcdefgh"[rng() % 8];
    }
    std::string text;
    std::vector<std::size_t> at;
    for (const std::string& k : keys) at.push_back(text.size()), text += k + "|";
    const LiteralIndex index(keys);
    std::set<std::pair<std::size_t, std::size_t>> hits;
    index.scan(text, [&](std::size_t key, std::size_t pos) { hits.insert({key, pos}); });
    for (std::size_t k = 0; k < keys.size(); ++k)
      ASSERT_TRUE(hits.count({k, at[k]})) << "round " << round << ": key " << k << " '" << keys[k] << "'";
    for (const auto& [key, pos] : hits) ASSERT_EQ(text.compare(pos, keys[key].size(), keys[key]), 0);
  }
}

}  // namespace
}  // namespace errshim::detail
