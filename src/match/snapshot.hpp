// Catalog snapshots: a built catalog's entries in a binary form that loads
// without YAML. yaml-cpp's per-byte cost dominates a YAML load; a snapshot
// is read at copy speed, so loading is the index.
//
// A snapshot also holds the catalog's match plan (matcher.hpp: each entry's
// literal, chosen across the snapshot's entries, and its anchor), which is
// most of the rest of a load; each entry keeps its item when other layers
// are put beside it (CatalogBuilder::build).
//
// A snapshot holds entries that a build already checked, so they are not
// checked again (raw patterns and `unless` lists still compile when the
// matcher is built, as for YAML). What is checked is the container: the
// magic, the format and errshim versions (the layout follows Entry, so a
// snapshot from another version is refused rather than misread), a checksum
// of the whole, every length against the bytes left, and every number the
// matcher computes with against its range (a plan's specificity is at most
// its pattern's length), so a truncated, damaged or crafted snapshot is
// refused with a problem, never misread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/catalog.hpp"
#include "match_plan.hpp"

namespace errshim::detail {

// `plan` is plan_matching(entries). `source` is a hash of the bytes the
// entries were parsed from (the catalog cache's layer hash; 0: none given),
// so a reader can tell a snapshot of other bytes from one of its own.
std::string write_snapshot(const std::vector<std::shared_ptr<const Entry>>& entries, const MatchPlan& plan,
                           std::uint64_t source = 0);

struct Snapshot {
  std::vector<std::shared_ptr<const Entry>> entries;
  MatchPlan plan;  // one item per entry
  std::uint64_t source = 0;  // as given to write_snapshot
};

// The 64-bit checksum a snapshot ends with, of any bytes (the catalog cache
// names its entries with it).
std::uint64_t snapshot_checksum(std::string_view bytes);

// The checksum of entry `e`'s record, as a snapshot's index holds it
// (LazySnapshot::record_checksum): equal for equal entries.
std::uint64_t entry_checksum(const Entry& e);

// A snapshot's body (what follows the header, before the checksum) and
// its inverse: `body` with this errshim's header and a valid checksum. For
// the fuzz target that loads random bodies, and for tests that craft
// checksum-valid snapshots. snapshot_body is empty for anything that is not
// a snapshot of this format and version.
std::string_view snapshot_body(std::string_view snapshot);
std::string seal_snapshot(std::string_view body);

// What a snapshot holds; on any problem, nothing and one problem naming `name`.
// Every entry is decoded and the whole checksum checked.
Snapshot read_snapshot(std::string_view bytes, const std::string& name, std::vector<Problem>& problems);

// A snapshot read for decoding each entry on first use: reading checks the
// header and the index (ids, match plan, where each record lies) by its own
// checksum and reads nothing else, so a layer of many entries costs little
// until its entries are met. decode() checks the record's own checksum.
// Immutable once read; decode() may run on many threads at once.
struct SnapshotIndex;

class LazySnapshot {
 public:
  // Whether the regexes of the entries flagged eager() were compiled, without
  // a problem, when the snapshot was written: the embedded snapshot is
  // written by a build step that fails on any problem
  // (cmake/embed_snapshot.cpp), so its entries can all wait until first use.
  enum class Regexes { unchecked, compiled_when_written };
  // From bytes that outlive it (the embedded snapshot).
  static std::shared_ptr<LazySnapshot> read(std::string_view bytes, std::string name, std::vector<Problem>& problems,
                                            Regexes regexes = Regexes::unchecked);
  // From a file, kept open: each record is read when first decoded.
  static std::shared_ptr<LazySnapshot> open(const std::filesystem::path& path, std::vector<Problem>& problems);
  ~LazySnapshot();
  LazySnapshot(const LazySnapshot&) = delete;
  LazySnapshot& operator=(const LazySnapshot&) = delete;

  std::size_t size() const noexcept;
  std::string_view id(std::size_t i) const noexcept;
  // The entry has a raw pattern or `unless` regexes, which compile when the
  // catalog is built (so that a broken one is reported then): it is decoded
  // then. Never, when they compiled when the snapshot was written.
  bool eager(std::size_t i) const noexcept;
  // One item per entry, its keys viewing this snapshot's index: the catalog
  // being built moves it out, and keeps the snapshot while it reads it.
  MatchPlan& plan() noexcept { return plan_; }
  std::uint64_t source() const noexcept { return source_; }
  const std::string& name() const noexcept { return name_; }
  // The checksum of entry `i`'s record (entry_checksum of the entry written).
  std::uint64_t record_checksum(std::size_t i) const noexcept { return items_[i].sum; }
  // Entry `i`, or null with `problem` saying what is damaged.
  std::shared_ptr<const Entry> decode(std::size_t i, std::string& problem) const;

  // What the index says of one entry.
  struct Item {
    std::string_view id;  // into index_, or bytes_
    std::size_t offset = 0, size = 0;  // of its record, from the first record
    std::uint64_t sum = 0;
    std::size_t specificity = 0;  // the plan's, checked against the pattern when decoded
    bool eager = false;
  };
  // Bytes read from a file, not zeroed first (an index is megabytes).
  struct Buffer {
    BigBytes data;  // its deleter holds its size
    std::size_t size() const noexcept { return data.get_deleter().size; }
    std::string_view view() const { return {data.get(), size()}; }
  };

 private:
  LazySnapshot();
  static std::shared_ptr<LazySnapshot> finish(SnapshotIndex index, std::string name);
  std::string_view bytes_;  // the whole snapshot, when read from memory
  int fd_ = -1;  // else the file
  Buffer index_;  // the index, when read from the file
  std::size_t records_ = 0;
  bool compiled_when_written_ = false;  // Regexes::compiled_when_written: no entry is eager()
  BigTable<Item> items_;
  MatchPlan plan_;
  std::uint64_t source_ = 0;
  std::string name_;
};

}  // namespace errshim::detail
