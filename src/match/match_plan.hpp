// The match plan: what the matcher works out per entry before it can index
// the catalog, stored in snapshots (snapshot.hpp) so a load skips it.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "big_tables.hpp"
#include "literal_extract.hpp"

namespace errshim::detail {

// What the matcher works out from the entries before it can index them:
// each entry's literal, chosen across its layer's entries, where the index
// anchors it, and the entry's specificity (the winner rule). Without YAML
// this is most of a build's time, so a snapshot stores it (snapshot.hpp).
// A key must be text every match of the entry contains (matching depends on
// it); an anchor only steers speed.
struct MatchPlan {
  // An EntryKey whose strings are views: into the plan's own block, or into
  // the index of the LazySnapshot the plan was read from (a string each was
  // a good part of the fresh memory a load of every layer touched).
  struct Key {
    std::string_view text;  // empty: checked on every segment
    std::size_t max_offset = kUnbounded;
    bool single_line_prefix = false;
    bool line_local = false;
    std::string_view also;
  };
  struct Item {
    Key key;
    std::uint32_t anchor = 0;  // LiteralIndex::anchor_offset(key.text)
    std::uint32_t also_anchor = 0;  // LiteralIndex::anchor_offset(key.also)
    std::size_t specificity = 0;  // literal_length(pattern)
  };
  BigTable<Item> items;  // one per entry, in the entries' order
  std::shared_ptr<const char[]> bytes;  // what the keys view, when the plan holds it

  // Copies the bytes every key views into one block the plan holds.
  void hold_keys() {
    std::size_t total = 0;
    for (const Item& item : items) total += item.key.text.size() + item.key.also.size();
    std::shared_ptr<char[]> block(new char[total + 1]);
    char* at = block.get();
    for (Item& item : items)
      for (std::string_view* s : {&item.key.text, &item.key.also}) {
        if (!s->empty()) std::memcpy(at, s->data(), s->size());
        *s = std::string_view(at, s->size());
        at += s->size();
      }
    bytes = std::move(block);
  }
};

}  // namespace errshim::detail
