// The compiled set of catalog patterns and the rule that picks a winner.
// All matching lives behind this class so its internals can change without
// touching the catalog or the callers.
//
// How a message is matched (match()): it is normalised into segments; each
// segment is scanned once by a LiteralIndex holding, for every entry, one
// literal that every match of the entry's regex contains (chosen across the
// catalog for rarity, literal_extract.hpp). Only the entries whose literal
// occurs (plus the few with no usable literal) run their Boost regex, which
// confirms the match and reads the captures; the search starts as late as
// the literal's position allows. The winner rule (Catalog::match) is applied
// to the confirmed hits, so the result is the same as trying every regex
// (match_naive(), kept as the reference for tests and benchmarks).
//
// Template regexes compile on first use as a candidate (std::call_once per
// entry: a shared, immutable catalog is safe to match from many threads);
// raw `pattern`s and `unless` regexes compile in the constructor, so one
// that does not compile is reported when the catalog is built. Those of a
// snapshot whose regexes all compiled when it was written (the embedded
// one, EntryTable::deferred) wait for first use too: a process starts
// without compiling what it never meets.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/catalog.hpp"
#include "entry_table.hpp"
#include "match_plan.hpp"
#include "errshim/normalize.hpp"
#include "literal_extract.hpp"
#include "literal_index.hpp"

namespace errshim::detail {

MatchPlan plan_matching(const std::vector<std::shared_ptr<const Entry>>& entries);

class Matcher {
 public:
  // Indexes every entry; compiles raw patterns and `unless` lists of the
  // entries not deferred now, and reports each one that does not compile in
  // `problems` with the entry's position. Template regexes are valid by
  // construction (template.cpp) and compile on first use. `plan` is
  // plan_matching(entries), worked out here unless given (one item per
  // entry).
  Matcher(EntryTable entries, std::vector<Problem>& problems, MatchPlan plan = {});
  // The same with entry i's plan item at plan[i]: a catalog of layers
  // points at each layer's own plan, not a copy of all. The index views the
  // items' keys, so the matcher keeps what they view: `key_bytes` (their
  // plans' MatchPlan::bytes), or else the snapshots its lazy entries are
  // read from, which the table keeps.
  Matcher(EntryTable entries, std::vector<Problem>& problems, const std::vector<const MatchPlan::Item*>& plan,
          std::vector<std::shared_ptr<const char[]>> key_bytes);
  Matcher(std::vector<std::shared_ptr<const Entry>> entries, std::vector<Problem>& problems, MatchPlan plan = {})
      : Matcher(EntryTable(std::move(entries)), problems, std::move(plan)) {}
  ~Matcher();
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Normalises `message`, then applies the winner rule documented on
  // Catalog::match and the nested-claim rule (patterns/README.md, "Nested
  // errors"), which matches the winner's free-text captures again. Never throws: a regex that gives up (its share of
  // MatchOptions::max_steps) counts as "did not match" and is reported in
  // the result; when the budget runs out the best hit so far stands. A
  // template's regex runs only where its literals occur in order.
  MatchResult match(std::string_view message, const Context& context, const MatchOptions& options = {}) const noexcept;

  // The reference the prefilter must agree with: every entry's regex on
  // every segment, searched from the start. Same diagnosis as match(); the
  // problems list can differ only for regexes that give up (match() does
  // not run entries that cannot win). For tests and benchmarks: the
  // reference and match_prefiltered() run with kReferenceSteps, each search
  // getting Boost's own default limit.
  MatchResult match_naive(std::string_view message, const Context& context) const noexcept;

  // Like match(), with the candidate entries of each segment given by
  // another prefilter (benchmarks compare Hyperscan and RE2::Set this way).
  // The prefilter appends entry indices; each is confirmed by its regex
  // searched from the segment's start.
  using Prefilter = std::function<void(std::string_view segment, std::vector<std::uint32_t>& candidates)>;
  MatchResult match_prefiltered(std::string_view message, const Context& context,
                                const Prefilter& prefilter) const noexcept;

  // Whether entry `index` claims some segment of `message` (ignoring rivals).
  bool claims(std::size_t index, std::string_view message) const noexcept;

  // Every entry that claims some segment of `message`, ascending: claims()
  // asked of the index's candidates only, so the same answer as asking
  // every entry. Empty when out of memory.
  std::vector<std::size_t> claimants(std::string_view message) const noexcept;

  // Compiles every regex not compiled yet; a problem for each that fails
  // (none is expected: templates are valid by construction). For lint.
  std::vector<Problem> compile_all() const;

  // How many entries the prefilter hands to their regexes for `message`,
  // over all its segments (before pruning by the winner rule).
  std::size_t candidate_count(std::string_view message) const noexcept;

  struct Stats {
    std::size_t entries = 0;
    std::size_t always_checked = 0;  // no usable literal: every segment runs them
    std::size_t keys = 0;  // distinct literals in the index
    std::size_t bounded_start = 0;  // entries whose search starts a bounded distance before the hit
    std::size_t line_start = 0;  // entries whose search starts at the hit's line
    std::size_t line_local = 0;  // entries searched only on the lines holding their literal
    std::size_t compiled = 0;  // regexes compiled so far
    std::size_t index_bytes = 0;
  };
  Stats stats() const noexcept;

  // The literal the index looks for on behalf of entry `index`; empty when
  // the entry is checked on every segment.
  std::string_view literal(std::size_t index) const noexcept;

  const EntryTable& table() const noexcept { return table_; }

  // The winner rule's specificity of entry `index` (its plan item's), 0 for SIZE_MAX.
  std::size_t specificity(std::size_t index) const noexcept;
  // Whether capture `capture` (its position in capture_names) of entry
  // `index` takes free text (free_text_capture()), worked out when the entry's
  // regex compiles (which this does, if it has not yet).
  bool free_text(std::size_t index, std::size_t capture) const;
  const std::vector<std::shared_ptr<const Entry>>& entries() const { return table_.all(); }

 private:
  static constexpr std::size_t kReferenceSteps = 400'000'000;
  struct Slot;  // per entry: the lazily compiled regex, `unless`, where to start
  class Run;  // one match() call: the best hit so far and its problems
  struct Candidate;

  static constexpr std::uint32_t kNoKey = 0xFFFFFFFFu;  // an entry without a (second) literal in the index
  // Groups with this many entries sharing a key are filtered by their
  // members' second literals in the index too (collect()).
  static constexpr std::uint32_t kCrowdedGroup = 4;
  struct Member {  // of a key's group
    std::uint32_t also;  // key id of the entry's second literal, or kNoKey
    std::uint32_t entry;
    bool operator<(const Member& o) const { return also != o.also ? also < o.also : entry < o.entry; }
  };

  void init(std::vector<Problem>& problems, const std::vector<const MatchPlan::Item*>& plan);

  // Appends the entries the index hands to their regexes for `text`: each
  // whose literal occurs (once per occurrence, with its position) and, in a
  // crowded group, whose second literal occurs too; then the always-checked.
  void collect(std::string_view text, std::vector<Candidate>& out) const;

  // The entry's slot with its regex compiled (on first use); null when the
  // regex does not compile (`error` in the slot says why).
  const Slot* compiled(std::size_t index) const;
  void compile(std::size_t index) const;
  std::size_t search_start(std::size_t index, std::string_view text, std::size_t hit) const noexcept;
  std::string_view also(std::size_t index) const noexcept;  // EntryKey::also

  const Entry& entry(std::size_t index) const { return *table_.get(index); }

  EntryTable table_;
  std::unique_ptr<Slot[]> slots_;
  std::vector<std::shared_ptr<const char[]>> key_bytes_;  // what index_ views, beside table_'s snapshots
  LiteralIndex index_;
  std::vector<std::uint32_t> key_entry_begin_;  // entries of key k: key_entries_[begin[k], begin[k+1])
  std::vector<Member> key_entries_;  // by second literal within a group
  std::vector<std::uint32_t> always_;  // entries with no usable literal, ascending
  std::vector<std::uint32_t> entry_key_;  // entry -> key id (uint32 max: none)
  std::string also_bytes_;  // EntryKey::also of entry i: also_bytes_[also_begin_[i], also_begin_[i+1])
  std::vector<std::uint32_t> also_begin_;
  std::size_t shortest_key_ = 0;  // a text shorter than this matches no entry (0: no such bound)
  mutable std::atomic<std::size_t> compiled_{0};
};

// The specificity of a regex, the winner rule's second key: its literal
// code points outside look-arounds and optional parts (regex::specificity).
// For a template's regex this is exactly its literal length.
std::size_t literal_length(std::string_view regex);

// Whether capture `name` of `e` can hold any text on its line (a template
// placeholder left at its default run, a hand-written `.+`): one that can
// hold another error's whole message (the nested-claim rule). A typed
// capture (capture_patterns: a shape, a dtype, a quoted string) cannot.
bool free_text_capture(const Entry& e, std::string_view name);

}  // namespace errshim::detail
