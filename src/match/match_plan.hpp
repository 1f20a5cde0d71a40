// The match plan: what the matcher works out per entry before it can index
// the catalog, stored in snapshots (snapshot.hpp) so a load skips it.
#pragma once

#include <cstdint>
#include <vector>

#include "literal_extract.hpp"

namespace errshim::detail {

// What the matcher works out from the entries before it can index them:
// each entry's literal, chosen across its layer's entries, where the index
// anchors it, and the entry's specificity (the winner rule). Without YAML
// this is most of a build's time, so a snapshot stores it (snapshot.hpp).
// A key must be text every match of the entry contains (matching depends on
// it); an anchor only steers speed.
struct MatchPlan {
  struct Item {
    EntryKey key;  // empty text: checked on every segment
    std::uint32_t anchor = 0;  // LiteralIndex::anchor_offset(key.text)
    std::uint32_t also_anchor = 0;  // LiteralIndex::anchor_offset(key.also)
    std::size_t specificity = 0;  // literal_length(pattern)
  };
  std::vector<Item> items;  // one per entry, in the entries' order
};

}  // namespace errshim::detail
