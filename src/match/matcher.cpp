#include "matcher.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <boost/regex.hpp>
#include <fmt/format.h>

#include "errshim/raise_site.hpp"
#include "fix_values.hpp"
#include "literal_extract.hpp"
#include "regex_syntax.hpp"
#include "template.hpp"
#include "context_internal.hpp"

// The step budget (MatchOptions::max_steps). Boost counts the states it
// visits in each search and gives up past a limit it derives from the
// text's length (up to 10^8, seconds of work). The matcher's regexes use
// their own traits type, so the two members below can be specialised for
// them alone, without touching other users of boost::regex: the limit is
// what the current message has left, and the states a search visited are
// read back, so a whole message is bounded, deterministically.
namespace errshim::detail {
namespace {
struct budget_traits : boost::regex_traits<char> {};
thread_local std::ptrdiff_t t_step_limit = 0;  // for the next search on this thread
thread_local std::ptrdiff_t t_steps = 0;  // states the last search visited
}  // namespace
}  // namespace errshim::detail

namespace boost {
namespace BOOST_REGEX_DETAIL_NS {
using BudgetMatcher = perl_matcher<const char*, std::allocator<sub_match<const char*>>, errshim::detail::budget_traits>;
template <>
void BudgetMatcher::estimate_max_state_count(std::random_access_iterator_tag*) {
  max_state_count = errshim::detail::t_step_limit;
}
template <>
bool BudgetMatcher::find() {
  const bool found = find_imp();
  errshim::detail::t_steps = state_count;
  return found;
}
}  // namespace BOOST_REGEX_DETAIL_NS
}  // namespace boost

namespace errshim::detail {

namespace {
using Regex = boost::basic_regex<char, budget_traits>;
constexpr auto kSyntax = boost::regex::perl;
// '.' never crosses a line: an error message is matched within its lines.
const auto kSearch = boost::match_default | boost::match_not_dot_newline;
constexpr std::size_t kNoHit = std::numeric_limits<std::size_t>::max();  // candidate without a literal hit

// [first, last) without trailing spaces. (Boost's sub_match::str() appends
// one character at a time: a tenth of a short match's time.) Out of line:
// each hit runs it for the match and every capture, and copies inlined at
// each call grew the hot path past the instruction cache.
[[gnu::noinline]] std::string trimmed(const char* first, const char* last) {
  while (last != first && std::isspace(static_cast<unsigned char>(last[-1]))) --last;
  return std::string(first, last);
}

// Whether `literals` occur in `text` in this order without overlapping:
// true of every match of a template, whose literal runs are these. The
// leftmost occurrence of each after the previous one is the earliest any
// match could use, so one forward pass decides; a near miss (the last
// literal missing) is turned down without running its regex at all.
bool literals_in_order(std::string_view text, const std::vector<std::string>& literals) {
  std::size_t at = 0;
  for (const std::string& lit : literals) {
    const std::size_t found = text.find(lit, at);
    if (found == std::string_view::npos) return false;
    at = found + lit.size();
  }
  return true;
}

// The index of the ']' closing the character class that opens at re[open]
// (re.size() when it is not closed).
std::size_t class_end(std::string_view re, std::size_t open) {
  std::size_t j = open + 1;
  if (j < re.size() && re[j] == '^') ++j;
  if (j < re.size() && re[j] == ']') ++j;
  while (j < re.size() && re[j] != ']') j += re[j] == '\\' ? 2 : 1;
  return std::min(j, re.size());
}

// The end of the look-around group opening at re[i] ("(?=", "(?!", "(?<=",
// "(?<!"), one past its ')'; `i` when none opens there.
std::size_t lookaround_end(std::string_view re, std::size_t i) {
  const bool ahead = re.substr(i, 3) == "(?=" || re.substr(i, 3) == "(?!";
  const bool behind = re.substr(i, 4) == "(?<=" || re.substr(i, 4) == "(?<!";
  if (!ahead && !behind) return i;
  int depth = 0;
  for (std::size_t j = i; j < re.size(); ++j) {
    if (re[j] == '\\') {
      ++j;
    } else if (re[j] == '[') {
      j = class_end(re, j);
    } else if (re[j] == '(') {
      ++depth;
    } else if (re[j] == ')' && --depth == 0) {
      return j + 1;
    }
  }
  return i;
}

// A template's regex as the literal analysis should see it: without the
// negative look-aheads that temper its placeholders (template.cpp), which
// hold a literal and nothing else. They never look past the line unless that
// literal holds a newline, so dropping the others keeps the analysis exact
// (RegexLiterals::line_local treats any look-ahead as looking past the line).
std::string analysed_pattern(const Entry& e) {
  if (e.template_text.empty()) return e.pattern;
  const std::string_view re = e.pattern;
  std::string out;
  out.reserve(re.size());
  for (std::size_t i = 0; i < re.size();) {
    if (re[i] == '\\') {
      out.append(re.substr(i, 2));
      i += 2;
      continue;
    }
    if (re[i] == '[') {  // a class is copied whole: "(?!" inside it is not a group
      const std::size_t j = std::min(class_end(re, i) + 1, re.size());
      out.append(re.substr(i, j - i));
      i = j;
      continue;
    }
    const std::size_t end = re.substr(i, 3) == "(?!" ? lookaround_end(re, i) : i;
    bool plain = end > i;  // only escaped or plain characters inside
    for (std::size_t j = i + 3; plain && j + 1 < end; ++j) {
      if (re[j] == '\\') {
        plain = re[j + 1] != 'n';
        ++j;
      } else {
        plain = std::string_view("()[]{}|*+?.^$").find(re[j]) == std::string_view::npos;
      }
    }
    if (plain) {
      i = end;
    } else {
      out += re[i++];
    }
  }
  return out;
}

// Whether `err` is Boost giving up at the step limit.
bool is_step_limit(const std::runtime_error& err) {
  static const std::string what = budget_traits().error_string(boost::regex_constants::error_complexity);
  return what == err.what();
}

std::string compile_error(const boost::regex_error& err, const std::string& pattern, const char* what) {
  return fmt::format("{}does not compile: {} (at character {} of '{}')", what, err.what(), err.position() + 1, pattern);
}

// Whether `needle` occurs in `text`. The second literals looked for often
// start with a blank or a comma; string_view::find calls memcmp at every
// occurrence of the first byte, this only where the last byte fits too.
bool contains_text(std::string_view text, std::string_view needle) {
  const std::size_t n = needle.size();
  if (n == 0) return true;
  if (n > text.size()) return false;
  const char* p = text.data();
  const char* const last = text.data() + (text.size() - n);  // the last start that fits
  while (p <= last) {
    p = static_cast<const char*>(std::memchr(p, needle[0], static_cast<std::size_t>(last - p) + 1));
    if (p == nullptr) return false;
    if (p[n - 1] == needle[n - 1] && std::memcmp(p, needle.data(), n) == 0) return true;
    ++p;
  }
  return false;
}

}  // namespace

struct Matcher::Candidate {
  std::uint32_t entry;
  std::size_t hit;  // a position of the entry's literal in the segment, or kNoHit
  bool operator<(const Candidate& o) const { return entry != o.entry ? entry < o.entry : hit < o.hit; }
};

std::size_t literal_length(std::string_view re) { return regex::specificity(re); }

// ------------------------------------------------------------------- entries

struct Matcher::Slot {
  // `c` is made once, inside call_once, before any reader gets past its own
  // call_once on the same flag: no lock on the hot path. Apart, so that the
  // many entries never compiled cost a pointer each, not room for their
  // regexes.
  struct Compiled {
    Regex re;
    std::string error;  // non-empty: `re` did not compile
    std::vector<std::string> literals;  // a template's literal runs, in order (literals_in_order)
    std::vector<Regex> unless;  // those that compiled
    std::vector<std::string> unless_errors;  // of those that did not
    // Bit c: capture c (in capture_names' order) takes free text, as
    // free_text_capture() tells, worked out once: the nested-claim rule
    // asks it of every winner's captures.
    std::uint64_t free_text = 0;
    // Capture c's group number in `re`, or -1 for a name several groups
    // share (then read by name: the first that took part): a winner's
    // captures are read without hashing their names on every hit.
    std::vector<int> groups;
  };
  std::once_flag once;
  std::unique_ptr<Compiled> c;
  std::size_t specificity = 0;  // literal characters in the pattern (the winner rule)
  std::size_t max_offset = kUnbounded;  // most bytes a match starts before its literal
  bool single_line = false;  // a match starts on its literal's line
  bool line_local = false;  // a match lies within one line: search only the literal's lines
};

MatchPlan plan_matching(const std::vector<std::shared_ptr<const Entry>>& entries) {
  std::vector<RegexLiterals> literals(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) literals[i] = required_literals(analysed_pattern(*entries[i]));
  KeyChoice choice = choose_keys(literals);
  literals = {};
  const auto weight = [&choice](const char* p, std::size_t width) { return choice.gram_weight(p, width); };
  MatchPlan plan;
  plan.items.resize(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    MatchPlan::Item& item = plan.items[i];
    const EntryKey& k = choice.keys[i];
    item.key = {k.text, k.max_offset, k.single_line_prefix, k.line_local, k.also};
    item.anchor = LiteralIndex::anchor_offset(item.key.text, weight);
    item.also_anchor = LiteralIndex::anchor_offset(item.key.also, weight);
    item.specificity = literal_length(entries[i]->pattern);
  }
  plan.hold_keys();  // before `choice`, which the keys view, is gone
  return plan;
}

Matcher::Matcher(EntryTable entries, std::vector<Problem>& problems, MatchPlan plan)
    : table_(std::move(entries)), slots_(new Slot[table_.size()]) {
  if (plan.items.size() != table_.size()) plan = plan_matching(table_.all());
  if (!plan.bytes) plan.hold_keys();  // a plan viewing bytes of its caller's
  key_bytes_.push_back(plan.bytes);
  std::vector<const MatchPlan::Item*> items;
  items.reserve(plan.items.size());
  for (const MatchPlan::Item& item : plan.items) items.push_back(&item);
  init(problems, items);
}

Matcher::Matcher(EntryTable entries, std::vector<Problem>& problems, const std::vector<const MatchPlan::Item*>& plan,
                 std::vector<std::shared_ptr<const char[]>> key_bytes)
    : table_(std::move(entries)), slots_(new Slot[table_.size()]), key_bytes_(std::move(key_bytes)) {
  if (plan.size() != table_.size()) throw std::invalid_argument("matcher: one plan item per entry expected");
  init(problems, plan);
}

void Matcher::init(std::vector<Problem>& problems, const std::vector<const MatchPlan::Item*>& plan) {
  const std::size_t n = table_.size();
  for (std::size_t i = 0; i < n; ++i) {
    Slot& s = slots_[i];
    s.specificity = plan[i]->specificity;
    if (table_.deferred(i)) continue;  // a template, decoded and compiled on first use
    const Entry& e = entry(i);
    if (!table_.problem(i).empty()) {
      problems.push_back({e.where, e.id, table_.problem(i)});
      continue;
    }
    // A raw pattern and `unless` are the author's own regexes: compiled now
    // so that a broken one fails the build. A template's regex is valid by
    // construction.
    if (e.template_text.empty() || !e.unless.empty()) {
      std::call_once(s.once, [this, i] { compile(i); });
      if (e.template_text.empty() && !s.c->error.empty()) problems.push_back({e.where, e.id, s.c->error});
      for (const std::string& error : s.c->unless_errors) problems.push_back({e.where, e.id, error});
    }
  }

  // Entries sharing a literal share one key in the index.
  std::vector<std::string_view> keys;  // views into the plan's keys, which the matcher keeps
  std::vector<std::uint32_t> anchors;
  std::vector<std::uint32_t> key_of(n, kNoKey);
  keys.reserve(n);
  anchors.reserve(n);
  ViewMap key_ids;
  key_ids.reserve(n);
  auto key_id = [&](std::string_view text, std::uint32_t hash, std::uint32_t anchor) {
    bool fresh = false;
    const std::uint32_t id = key_ids.insert(text, hash, static_cast<std::uint32_t>(keys.size()), fresh).value;
    if (fresh) keys.push_back(text), anchors.push_back(anchor);
    return id;
  };
  also_begin_.reserve(n + 1);
  {  // sized up front: grown by doubling, the bytes were copied over and over
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += plan[i]->key.also.size();
    also_bytes_.reserve(total);
  }
  std::vector<std::uint32_t> text_hash(n);  // worked out ahead to prefetch each key's slot
  for (std::size_t i = 0; i < n; ++i) text_hash[i] = ViewMap::hash(plan[i]->key.text);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + ViewMap::kPrefetchAhead < n) key_ids.prefetch(text_hash[i + ViewMap::kPrefetchAhead]);
    const MatchPlan::Key& k = plan[i]->key;
    also_begin_.push_back(static_cast<std::uint32_t>(also_bytes_.size()));
    also_bytes_ += k.also;
    if (k.text.empty()) continue;
    key_of[i] = key_id(k.text, text_hash[i], plan[i]->anchor);
    slots_[i].max_offset = k.max_offset;
    slots_[i].single_line = k.single_line_prefix;
    slots_[i].line_local = k.line_local;
  }
  also_begin_.push_back(static_cast<std::uint32_t>(also_bytes_.size()));
  // In a crowded group (near-duplicate templates: "cannot broadcast {} to
  // {} for <name>" hundreds of times) each occurrence of the key would hand
  // every member to its regex; the index holds the members' second literals
  // too, so a member is a candidate only when both occur.
  std::vector<std::uint32_t> group_size(keys.size(), 0);
  for (std::size_t i = 0; i < n; ++i)
    if (key_of[i] != kNoKey) ++group_size[key_of[i]];
  std::vector<std::uint32_t> also_of(n, kNoKey);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view also = plan[i]->key.also;
    if (key_of[i] != kNoKey && group_size[key_of[i]] >= kCrowdedGroup && also.size() >= LiteralIndex::kMainLaneKey)
      also_of[i] = key_id(also, ViewMap::hash(also), plan[i]->also_anchor);
  }
  key_ids = {};
  index_ = LiteralIndex::viewing(keys, anchors);

  // Keys the index cannot hold (shorter than its anchor): their entries are
  // checked on every segment, like those without a literal; a second
  // literal it cannot hold filters nothing.
  std::vector<bool> unindexed(keys.size(), false);
  for (std::size_t k : index_.unindexed()) unindexed[k] = true;
  for (std::size_t i = 0; i < n; ++i) {
    if (key_of[i] != kNoKey && unindexed[key_of[i]]) key_of[i] = kNoKey;
    if (key_of[i] == kNoKey) always_.push_back(static_cast<std::uint32_t>(i));
    if (key_of[i] == kNoKey || (also_of[i] != kNoKey && unindexed[also_of[i]])) also_of[i] = kNoKey;
  }
  key_entry_begin_.assign(keys.size() + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (key_of[i] != kNoKey) ++key_entry_begin_[key_of[i] + 1];
  for (std::size_t k = 0; k < keys.size(); ++k) key_entry_begin_[k + 1] += key_entry_begin_[k];
  key_entries_.resize(key_entry_begin_.back());
  std::vector<std::uint32_t> fill(key_entry_begin_.begin(), key_entry_begin_.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    if (key_of[i] != kNoKey) key_entries_[fill[key_of[i]]++] = {also_of[i], static_cast<std::uint32_t>(i)};
  // Each group by second literal, those without last: collect() looks a
  // literal up in a group by binary search.
  for (std::size_t k = 0; k < keys.size(); ++k)
    std::sort(key_entries_.begin() + key_entry_begin_[k], key_entries_.begin() + key_entry_begin_[k + 1]);
  entry_key_ = std::move(key_of);
  // Every match holds its entry's key; with no entry matched without one, a
  // shorter text matches nothing (the nested-claim rule skips such captures).
  if (always_.empty()) {
    shortest_key_ = SIZE_MAX;
    for (std::size_t k = 0; k < keys.size(); ++k) shortest_key_ = std::min(shortest_key_, keys[k].size());
  }
}

Matcher::~Matcher() = default;

std::string_view Matcher::also(std::size_t index) const noexcept {
  return std::string_view(also_bytes_).substr(also_begin_[index], also_begin_[index + 1] - also_begin_[index]);
}

std::size_t Matcher::specificity(std::size_t index) const noexcept {
  return index < table_.size() ? slots_[index].specificity : 0;
}

bool Matcher::free_text(std::size_t index, std::size_t capture) const {
  const Entry& e = entry(index);
  if (capture >= e.capture_names.size()) return false;
  // Through the slot's once flag, so a reader never sees it half made (the
  // winner's is compiled already); beyond 64 captures, or without a regex, ask.
  const Slot* s = compiled(index);
  if (s != nullptr && capture < 64) return (s->c->free_text >> capture) & 1;
  return free_text_capture(e, e.capture_names[capture]);
}

std::string_view Matcher::literal(std::size_t index) const noexcept {
  const std::uint32_t k = entry_key_[index];
  return k == kNoKey ? std::string_view() : index_.key(k);
}

void Matcher::compile(std::size_t index) const {
  const Entry& e = entry(index);
  // Made whole before it is set: a call that throws (out of memory) leaves
  // the flag unset, and the next starts again from nothing.
  auto made = std::make_unique<Slot::Compiled>();
  Slot::Compiled& s = *made;
  if (!table_.problem(index).empty()) {
    s.error = table_.problem(index);
    slots_[index].c = std::move(made);
    return;
  }
  try {
    s.re.assign(e.pattern, kSyntax);
  } catch (const boost::regex_error& err) {
    s.error = compile_error(err, e.pattern, "pattern ");
  }
  for (std::size_t c = 0; c < e.capture_names.size() && c < 64; ++c)
    if (free_text_capture(e, e.capture_names[c])) s.free_text |= std::uint64_t{1} << c;
  if (s.error.empty()) {
    const auto subs = s.re.get_named_subs();
    for (const std::string& name : e.capture_names) {
      const auto range = subs->equal_range(name.data(), name.data() + name.size());
      s.groups.push_back(range.second - range.first == 1 ? range.first->index : -1);
    }
  }
  if (!e.template_text.empty()) {
    // The literal runs do not depend on capture names or capture_patterns.
    try {
      s.literals = compile_template(e.template_text).literals;
    } catch (const template_error&) {
      s.literals.clear();  // not expected: the template compiled when loaded
    }
  }
  for (const std::string& u : e.unless) {
    try {
      s.unless.emplace_back(u, kSyntax);
    } catch (const boost::regex_error& err) {
      s.unless_errors.push_back(compile_error(err, u, "'unless' pattern "));
    }
  }
  slots_[index].c = std::move(made);
  compiled_.fetch_add(1, std::memory_order_relaxed);
}

const Matcher::Slot* Matcher::compiled(std::size_t index) const {
  Slot& s = slots_[index];
  std::call_once(s.once, [this, index] { compile(index); });
  return s.c->error.empty() ? &s : nullptr;
}

std::size_t Matcher::search_start(std::size_t index, std::string_view text, std::size_t hit) const noexcept {
  if (hit == kNoHit) return 0;
  const Slot& s = slots_[index];
  // Every match contains the literal at or after its first occurrence, at
  // most max_offset bytes after the match's start; with a single-line
  // prefix, the match also starts on that occurrence's line or later.
  std::size_t start = (s.max_offset != kUnbounded && hit > s.max_offset) ? hit - s.max_offset : 0;
  if (s.single_line && hit > 0) {
    const std::size_t nl = text.rfind('\n', hit - 1);
    if (nl != std::string_view::npos) start = std::max(start, nl + 1);
  }
  return start;
}

// ------------------------------------------------------------------ matching

void Matcher::collect(std::string_view text, std::vector<Candidate>& out) const {
  struct Occurrence {
    std::uint32_t key, position;  // a segment is at most kMaxInputBytes
    bool operator<(const Occurrence& o) const { return key != o.key ? key < o.key : position < o.position; }
    bool operator==(const Occurrence& o) const { return key == o.key && position == o.position; }
  };
  // Reused by each thread's calls: no allocation per message.
  thread_local std::vector<Occurrence> occurrences;
  thread_local std::vector<std::uint32_t> found;  // the keys that occur, ascending
  occurrences.clear();
  found.clear();
  index_.scan(text, [&](std::size_t key, std::size_t position) {
    occurrences.push_back({static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(position)});
  });
  std::sort(occurrences.begin(), occurrences.end());
  occurrences.erase(std::unique(occurrences.begin(), occurrences.end()), occurrences.end());
  for (const Occurrence& o : occurrences)
    if (found.empty() || found.back() != o.key) found.push_back(o.key);
  for (std::size_t r = 0, next = 0; r < occurrences.size(); r = next) {
    const std::uint32_t key = occurrences[r].key;
    while (next < occurrences.size() && occurrences[next].key == key) ++next;
    const Member* const first = key_entries_.data() + key_entry_begin_[key];
    const Member* const last = key_entries_.data() + key_entry_begin_[key + 1];
    auto take = [&](const Member& m) {
      for (std::size_t o = r; o < next; ++o) out.push_back({m.entry, occurrences[o].position});
    };
    // Members whose second literal occurs too, and those without one: by
    // the smaller side, a small group against the keys found or each key
    // found looked up in a large group.
    if (static_cast<std::size_t>(last - first) <= found.size()) {
      for (const Member* m = first; m != last; ++m)
        if (m->also == kNoKey || std::binary_search(found.begin(), found.end(), m->also)) take(*m);
    } else {
      auto by_also = [](const Member& m, std::uint32_t k) { return m.also < k; };
      for (std::uint32_t k : found)
        for (const Member* m = std::lower_bound(first, last, k, by_also); m != last && m->also == k; ++m) take(*m);
      for (const Member* m = std::lower_bound(first, last, kNoKey, by_also); m != last; ++m) take(*m);
    }
  }
  for (std::uint32_t i : always_) out.push_back({i, kNoHit});
  if (occurrences.capacity() > 4096) occurrences = {}, found = {};  // a huge message keeps no memory
}

// One call: the best hit so far (winner rule) and the problems seen.
class Matcher::Run {
 public:
  Run(const Matcher& m, std::string_view message, const Context& context, MatchResult& result, std::size_t max_steps)
      : m_(m), message_(message), context_(context), result_(result), max_steps_(max_steps), left_(max_steps) {}

  bool exhausted() const { return exhausted_; }

  std::size_t excluded = SIZE_MAX;  // an entry this run does not consider (the nested-claim rule's rival reading)

  // Searches segment `segment` with entry `index`, given the positions of
  // its literal there (`hits`, ascending; empty: search all of it). With
  // `prune`, an entry that cannot beat the best hit on priority and
  // specificity is not searched at all.
  void consider(std::size_t index, std::size_t segment, std::string_view text, const Candidate* hits,
                std::size_t hit_count, bool prune) {
    if (exhausted_ || index == excluded) return;
    const Entry& e = m_.entry(index);
    const ScopeFit fit = scope_fit(e.applies_to, context_);
    if (fit == ScopeFit::contradicted) return;
    if (prune && best_ && rank(index) > rank(best_->entry)) return;
    Hit h;
    h.m = spare_;
    if (!search_hits(index, text, hits, hit_count, *h.m)) return;
    h.entry = index;
    h.segment = segment;
    h.position = static_cast<std::size_t>((*h.m)[0].first - text.data());
    h.fit = fit;
    if (!best_ || better(h, *best_)) {
      spare_ = best_ ? best_->m : spare_ == &results_[0] ? &results_[1] : &results_[0];
      best_ = h;
    }
  }

  // The leftmost match in `text`, found from the literal's positions: a
  // match contains an occurrence of the literal, so it starts no earlier
  // than search_start() of the first one; a line-local regex is searched
  // only on the lines holding an occurrence, each line alone (a false
  // candidate then costs one line, not the rest of a long text).
  bool search_hits(std::size_t index, std::string_view text, const Candidate* hits, std::size_t hit_count,
                   boost::cmatch& m) {
    if (hit_count == 0 || hits[0].hit == kNoHit) return search(index, text, 0, text.size(), m);
    // A match lies in [start, end) and holds the entry's second literal too:
    // a substring search rules out most entries that share the first.
    const std::string_view also = m_.also(index);
    auto holds_also = [&](std::size_t start, std::size_t end) {
      return contains_text(text.substr(start, end - start), also);
    };
    if (!m_.slots_[index].line_local) {
      const std::size_t start = m_.search_start(index, text, hits[0].hit);
      return holds_also(start, text.size()) && search(index, text, start, text.size(), m);
    }
    std::size_t searched = 0;  // lines before this are done
    for (std::size_t k = 0; k < hit_count; ++k) {
      const std::size_t at = hits[k].hit;
      if (at < searched) continue;
      const std::size_t nl = text.find('\n', at);
      const std::size_t line_end = nl == std::string_view::npos ? text.size() : nl;
      const std::size_t start = m_.search_start(index, text, at);
      if (holds_also(start, line_end) && search(index, text, start, line_end, m)) return true;
      searched = line_end + 1;
    }
    return false;
  }

  // Whether entry `index` matches text[start, end) (text before `start` is
  // context for ^, \b and look-behind) and no `unless` matches `text`.
  bool search(std::size_t index, std::string_view text, std::size_t start, std::size_t end, boost::cmatch& m) {
    const Entry& e = m_.entry(index);
    try {
      const Slot* s = m_.compiled(index);
      if (!s) {
        result_.problems.push_back(fmt::format("entry '{}' cannot be matched: {}", e.id, m_.slots_[index].c->error));
        return false;
      }
      if (!literals_in_order(text.substr(start, end - start), s->c->literals)) return false;
      const char* const begin = text.data();
      // Starting late, Boost must still see the text before the start for
      // ^, \b and look-behind: match_prev_avail, and `begin` as the base.
      const auto flags = start > 0 ? kSearch | boost::match_prev_avail : kSearch;
      if (!bounded(e, [&] { return boost::regex_search(begin + start, begin + end, m, s->c->re, flags, begin); }))
        return false;
      for (const Regex& u : s->c->unless) {
        boost::cmatch um;
        if (bounded(e, [&] { return boost::regex_search(begin, begin + text.size(), um, u, kSearch); })) return false;
      }
      return !exhausted_;
    } catch (const std::exception& err) {
      // Out of memory or Boost's own limits (its stack): to the host that
      // is this entry not matching, and a report.
      result_.problems.push_back(fmt::format("entry '{}' gave up on this message: {}", e.id, err.what()));
      return false;
    }
  }

  // Runs one Boost search within what the budget has left, and charges the
  // states it visited. One search may take at most a quarter of the whole
  // budget: an entry that needs more gives up on this message (no match,
  // reported) and the others go on; when the budget itself runs out,
  // matching stops and the best hit so far stands. False when it gave up.
  template <class Search>
  bool bounded(const Entry& e, Search&& search) {
    if (exhausted_) return false;
    if (left_ == 0) return exhaust(e);
    const std::size_t share = std::max<std::size_t>(max_steps_ / 4, 1);
    const std::size_t limit = std::min(left_, share);
    t_step_limit = static_cast<std::ptrdiff_t>(std::min<std::size_t>(limit, PTRDIFF_MAX - 2));
    t_steps = 0;
    try {
      const bool found = search();
      charge(static_cast<std::size_t>(t_steps));
      return found;
    } catch (const std::runtime_error& err) {
      // Boost reports its step limit as a plain runtime_error; anything
      // else (its stack limit) goes to search()'s handler.
      if (!is_step_limit(err)) throw;
      charge(limit);
      if (left_ == 0) {
        exhaust(e);
      } else {
        result_.problems.push_back(fmt::format(
            "entry '{}' gave up on this message: its regex took more than {} steps, a quarter of the budget "
            "(MatchOptions::max_steps)",
            e.id, limit));
      }
      return false;
    }
  }

  // Last use of `norm`: the winning segment's text is moved, not copied.
  std::size_t winner() const { return best_ ? best_->entry : SIZE_MAX; }

  void finish(std::string_view message, Normalized& norm) {
    if (!best_) return;
    const Entry& e = m_.entry(best_->entry);
    Segment& seg = norm.segments[best_->segment];
    // Built in place: a Diagnosis moved in and destroyed is dozens of
    // instructions' worth of strings, on every hit.
    Diagnosis& d = result_.diagnosis.emplace();
    d.entry = m_.table_.get(best_->entry);
    const std::vector<int>& groups = m_.slots_[best_->entry].c->groups;  // searched, so compiled
    d.captures.reserve(e.capture_names.size());
    for (std::size_t k = 0; k < e.capture_names.size(); ++k) {
      const std::string& name = e.capture_names[k];
      const auto& sub = k < groups.size() && groups[k] >= 0 ? (*best_->m)[groups[k]] : (*best_->m)[name];
      d.captures.push_back({name, sub.matched ? trimmed(sub.first, sub.second) : std::string()});
    }
    d.matched = trimmed((*best_->m)[0].first, (*best_->m)[0].second);
    d.segment = std::move(seg.text);  // the match points into it: read above, moved only now
    d.exception_class = std::move(seg.exception_class);
    d.raw.assign(message.substr(0, kMaxInputBytes));
    d.segment_index = best_->segment;
    d.offset = best_->position;
  }

 private:
  struct Hit {
    std::size_t entry = 0;
    std::size_t segment = 0;
    std::size_t position = 0;
    ScopeFit fit = ScopeFit::general;
    boost::cmatch* m = nullptr;  // one of results_
  };

  // Smaller wins: priority (high first), specificity (high first).
  std::pair<long long, long long> rank(std::size_t index) const {
    return {-static_cast<long long>(m_.entry(index).priority), -static_cast<long long>(m_.slots_[index].specificity)};
  }
  // The whole rule: priority, specificity, then how well the entry's pins
  // fit where the message says it was raised (read only for such a tie),
  // then scope fit (best first), segment (root cause first), position, id.
  bool better(const Hit& a, const Hit& b) {
    const auto ra = rank(a.entry), rb = rank(b.entry);
    if (ra != rb) return ra < rb;
    if (a.entry != b.entry) {
      const SiteFit sa = site_fit_of(a.entry), sb = site_fit_of(b.entry);
      if (sa != sb) return sa > sb;
    }
    return std::make_tuple(-static_cast<int>(a.fit), a.segment, a.position, m_.table_.id(a.entry)) <
           std::make_tuple(-static_cast<int>(b.fit), b.segment, b.position, m_.table_.id(b.entry));
  }

  SiteFit site_fit_of(std::size_t index) {
    if (!stated_) stated_ = stated_sites(message_);
    SiteFit best = SiteFit::none;
    if (stated_->empty()) return best;
    const Entry& e = m_.entry(index);
    auto consider = [&](const SourcePin& pin) {
      for (const StatedSite& s : *stated_) best = std::max(best, site_fit(pin, s));
    };
    consider(e.source);
    for (const SourcePin& pin : e.also_at) consider(pin);
    return best;
  }

  bool exhaust(const Entry& e) {
    exhausted_ = true;
    result_.problems.push_back(
        fmt::format("budget exhausted: matching stopped after {} regex steps (MatchOptions::max_steps), in entry "
                    "'{}'; the result is the best match found before",
                    max_steps_, e.id));
    return false;
  }

  // A search that visits more states than its limit without failing once
  // is not stopped by Boost; the budget still never goes negative.
  void charge(std::size_t steps) {
    steps = std::min(steps, left_);
    left_ -= steps;
    result_.steps += steps;
  }

  const Matcher& m_;
  const std::string_view message_;
  std::optional<std::vector<StatedSite>> stated_;  // read on the first tie that needs it
  const Context& context_;
  MatchResult& result_;
  const std::size_t max_steps_;
  std::size_t left_;  // steps this message has left
  bool exhausted_ = false;
  std::optional<Hit> best_;
  // Match results for the best hit and the current search, swapped rather
  // than copied; kept per thread so a call allocates none in steady state.
  static thread_local boost::cmatch results_[2];
  boost::cmatch* spare_ = &results_[0];
};

thread_local boost::cmatch Matcher::Run::results_[2];

namespace {

// How many wrappers deep the nested-claim rule looks: real chains nest an
// error in one or two others; the bound keeps a crafted message cheap.
constexpr int kMaxNesting = 4;

// A capture's regex that takes any run of text: a template placeholder
// left at its default, or a hand-written `.+`.
bool free_text_body(std::string_view body) {
  if (body.rfind("(?:(?!", 0) == 0) return ends_with(body, ")[^\\n])++") || ends_with(body, ")[\\s\\S])++");
  for (std::string_view atom : {std::string_view("."), std::string_view("[^\\n]"), std::string_view("[\\s\\S]")}) {
    if (body.rfind(atom, 0) != 0) continue;
    const std::string_view q = body.substr(atom.size());
    return q == "+" || q == "*" || q == "+?" || q == "*?" || q == "++" || q == "*+";
  }
  return false;
}

}  // namespace

bool free_text_capture(const Entry& e, std::string_view name) {
  const std::optional<std::string_view> re = capture_body_view(e.pattern, name);
  return re && free_text_body(*re);
}

namespace {

// The nested-claim rule, one level: when a free-text capture of the winner
// holds text another entry claims on its own (matched as a message of its
// own, by the same rule), at no lower priority, that inner entry wins: the
// winner's text only wraps the error the inner site raised. Among several
// such captures, the inner entry of highest priority, then the most
// literal text, then the first capture. Returns the inner entry's literal
// length (at least 1; exactly in `specificity_out`; `winner`, the index of
// the diagnosis's entry, becomes the inner one's), 0 when the diagnosis
// stays.
template <class Body>
std::size_t take_nested(const Matcher& m, MatchResult& result, std::size_t budget, std::size_t shortest, Body& body,
                        std::size_t& winner, std::size_t& specificity_out) {
  const Diagnosis& outer = *result.diagnosis;
  const Entry& e = *outer.entry;
  // The texts an inner error may fill: each free-text capture, and each run
  // of such captures with only blanks between them (`{lhs} {rhs}` splits a
  // message at its first blank), found in order in the matched text.
  std::vector<std::string_view> texts;
  const std::string_view matched = outer.matched;
  std::size_t cursor = 0, run_start = std::string_view::npos, run_end = 0;
  for (std::size_t k = 0; k < outer.captures.size(); ++k) {
    const Capture& c = outer.captures[k];
    const bool free = !c.value.empty() && m.free_text(winner, k);
    const std::size_t at = free ? matched.find(c.value, cursor) : std::string_view::npos;
    if (at == std::string_view::npos) {
      run_start = std::string_view::npos;
      continue;
    }
    texts.push_back(matched.substr(at, c.value.size()));
    const bool joins = run_start != std::string_view::npos && at >= run_end &&
                       matched.substr(run_end, at - run_end).find_first_not_of(" \t") == std::string_view::npos;
    if (!joins) run_start = at;
    run_end = at + c.value.size();
    cursor = run_end;
    if (joins) texts.push_back(matched.substr(run_start, run_end - run_start));
  }
  std::optional<Diagnosis> best;
  std::size_t best_specificity = 0, best_index = SIZE_MAX;
  std::string_view best_value;
  for (std::string_view text : texts) {
    if (result.steps >= budget) break;
    if (text.size() < shortest) continue;
    Normalized norm = normalize(text);
    MatchResult inner;
    const std::size_t index = body(norm, inner, budget - result.steps, SIZE_MAX);
    result.steps += inner.steps;
    for (std::string& p : inner.problems) result.problems.push_back(std::move(p));
    if (!inner.diagnosis || inner.diagnosis->entry->priority < e.priority) continue;
    const std::size_t specificity = m.specificity(index);
    if (best && std::make_pair(inner.diagnosis->entry->priority, specificity) <=
                    std::make_pair(best->entry->priority, best_specificity))
      continue;
    best = std::move(inner.diagnosis);
    best_specificity = specificity;
    best_index = index;
    best_value = text;
  }
  if (!best) return 0;
  Diagnosis d = std::move(*best);
  // Where the inner text sits in the outer segment (the capture's text
  // itself when normalising it changed the matched text).
  const std::size_t value_at = outer.segment.find(std::string(best_value), outer.offset);
  std::size_t at = value_at == std::string::npos ? std::string::npos : outer.segment.find(d.matched, value_at);
  if (at == std::string::npos) at = value_at == std::string::npos ? outer.offset : value_at;
  d.offset = at;
  d.segment = outer.segment;
  d.segment_index = outer.segment_index;
  d.raw = outer.raw;
  if (d.exception_class.empty()) d.exception_class = outer.exception_class;
  result.diagnosis = std::move(d);
  specificity_out = best_specificity;
  winner = best_index;
  return std::max<std::size_t>(best_specificity, 1);
}

// Follows the nested-claim rule down from the winner (entry `winner`, whose
// specificity is `innermost` on entry); returns the literal text the chain
// accounts for (the winner's and each inner entry's), `innermost` the last
// one's.
template <class Body>
std::size_t follow_nesting(const Matcher& m, MatchResult& result, std::size_t budget, std::size_t shortest, Body& body,
                           std::size_t winner, std::size_t& innermost) {
  std::size_t covered = innermost;
  for (int depth = 0; depth < kMaxNesting && result.diagnosis; ++depth) {
    const std::size_t inner = take_nested(m, result, budget, shortest, body, winner, innermost);
    if (inner == 0) break;
    covered += inner;
  }
  return covered;
}

// Runs `body(norm, result, steps, excluded)`, which returns the index of
// the entry it found (SIZE_MAX: none), with the usual framing:
// normalisation, the size report, the nested-claim rule (each capture
// matched by the same body, within what the budget has left), and "never
// throws". When the winner wraps an inner error, the message is read once
// more without the winner: a rival wrapper whose chain accounts for more
// literal text is the better reading (the winner's trailing placeholder may
// have swallowed the rival's own text, leaving a fragment another entry
// claims); it replaces the first on a larger count, at the same priority.
template <class Body>
MatchResult framed(const Matcher& m, std::size_t shortest, std::string_view message, std::size_t budget,
                   Body&& body) noexcept {
  MatchResult result;
  try {
    Normalized norm = normalize(message);
    if (norm.truncated)
      result.problems.push_back(
          fmt::format("message of {} bytes cut to its first and last {} KiB", message.size(), kMaxInputBytes / 2048));
    const std::size_t at = body(norm, result, budget, SIZE_MAX);
    if (!result.diagnosis) return result;
    const auto winner_priority = result.diagnosis->entry->priority;
    const std::size_t alone = m.specificity(at);
    std::size_t innermost = alone;
    const std::size_t covered = follow_nesting(m, result, budget, shortest, body, at, innermost);
    if (covered == alone || result.steps >= budget) return result;
    MatchResult rival;
    Normalized again = normalize(message);
    const std::size_t rival_at = body(again, rival, budget - result.steps, at);
    result.steps += rival.steps;
    if (rival.diagnosis && rival.diagnosis->entry->priority == winner_priority) {
      rival.steps = result.steps;
      std::size_t rival_innermost = m.specificity(rival_at);
      const std::size_t rival_covered = follow_nesting(m, rival, budget, shortest, body, rival_at, rival_innermost);
      // On a tie the text cannot tell which error wraps which ("A {x}" and
      // "{y} B" read "A y B" both ways): the more specific innermost entry
      // is the answer, as without nesting.
      const auto rank = [](const MatchResult& r, std::size_t specificity) {
        return std::make_pair(r.diagnosis->entry->priority, specificity);
      };
      if (rival.diagnosis && result.diagnosis &&
          (rival_covered > covered ||
           (rival_covered == covered && rank(rival, rival_innermost) > rank(result, innermost)))) {
        for (std::string& p : rival.problems) result.problems.push_back(std::move(p));
        result.diagnosis = std::move(rival.diagnosis);
      }
      result.steps = rival.steps;
    }
  } catch (const std::exception& err) {
    // Out of memory or similar: the host gets "no match", never an exception.
    result.diagnosis.reset();
    try {
      result.problems.push_back(fmt::format("matching failed: {}", err.what()));
    } catch (...) {}
  }
  return result;
}
}  // namespace

MatchResult Matcher::match(std::string_view message, const Context& context,
                           const MatchOptions& options) const noexcept {
  const auto body = [&](Normalized& norm, MatchResult& result, std::size_t steps, std::size_t excluded) {
    Run run(*this, message, context, result, steps);
    run.excluded = excluded;
    // Reused by each thread's calls: no allocation per message.
    thread_local std::vector<Candidate> candidates;
    for (std::size_t s = 0; s < norm.segments.size() && !run.exhausted(); ++s) {
      const std::string_view text = norm.segments[s].text;
      candidates.clear();
      collect(text, candidates);
      // Each entry once, with its literal's positions in order.
      std::sort(candidates.begin(), candidates.end());
      for (std::size_t c = 0, next = 0; c < candidates.size(); c = next) {
        while (next < candidates.size() && candidates[next].entry == candidates[c].entry) ++next;
        run.consider(candidates[c].entry, s, text, &candidates[c], next - c, true);
      }
    }
    if (candidates.capacity() > 4096) candidates = {};  // a huge message keeps no memory
    run.finish(message, norm);
    return run.winner();
  };
  return framed(*this, shortest_key_, message, options.max_steps, body);
}

MatchResult Matcher::match_naive(std::string_view message, const Context& context) const noexcept {
  const auto body = [&](Normalized& norm, MatchResult& result, std::size_t steps, std::size_t excluded) {
    Run run(*this, message, context, result, steps);
    run.excluded = excluded;
    for (std::size_t s = 0; s < norm.segments.size(); ++s)
      for (std::size_t i = 0; i < table_.size(); ++i) run.consider(i, s, norm.segments[s].text, nullptr, 0, false);
    run.finish(message, norm);
    return run.winner();
  };
  return framed(*this, shortest_key_, message, kReferenceSteps, body);
}

MatchResult Matcher::match_prefiltered(std::string_view message, const Context& context,
                                       const Prefilter& prefilter) const noexcept {
  const auto body = [&](Normalized& norm, MatchResult& result, std::size_t steps, std::size_t excluded) {
    Run run(*this, message, context, result, steps);
    run.excluded = excluded;
    std::vector<std::uint32_t> ids;
    for (std::size_t s = 0; s < norm.segments.size(); ++s) {
      const std::string_view text = norm.segments[s].text;
      ids.clear();
      prefilter(text, ids);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      for (std::uint32_t i : ids)
        if (i < table_.size()) run.consider(i, s, text, nullptr, 0, true);
    }
    run.finish(message, norm);
    return run.winner();
  };
  return framed(*this, shortest_key_, message, kReferenceSteps, body);
}

bool Matcher::claims(std::size_t index, std::string_view message) const noexcept {
  try {
    const Normalized norm = normalize(message);
    MatchResult ignored;
    const Context none;
    Run run(*this, message, none, ignored, MatchOptions{}.max_steps);
    for (const Segment& seg : norm.segments) {
      boost::cmatch m;
      if (run.search(index, seg.text, 0, seg.text.size(), m)) return true;
    }
  } catch (...) {}
  return false;
}

std::vector<std::size_t> Matcher::claimants(std::string_view message) const noexcept {
  // The index's candidates of any segment, each asked claims() itself: an
  // entry the index does not hand a segment cannot match it.
  std::vector<std::size_t> out;
  try {
    const Normalized norm = normalize(message);
    std::vector<Candidate> found;
    for (const Segment& seg : norm.segments) collect(seg.text, found);
    for (const Candidate& c : found) out.push_back(c.entry);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    out.erase(std::remove_if(out.begin(), out.end(), [&](std::size_t i) { return !claims(i, message); }), out.end());
  } catch (...) {
    out.clear();
  }
  return out;
}

std::vector<Problem> Matcher::compile_all() const {
  std::vector<Problem> problems;
  for (std::size_t i = 0; i < table_.size(); ++i) {
    if (!compiled(i)) problems.push_back({entry(i).where, entry(i).id, slots_[i].c->error});
    if (table_.deferred(i))  // else reported when the catalog was built
      for (const std::string& error : slots_[i].c->unless_errors)
        problems.push_back({entry(i).where, entry(i).id, error});
  }
  return problems;
}

std::size_t Matcher::candidate_count(std::string_view message) const noexcept {
  try {
    const Normalized norm = normalize(message);
    std::size_t count = 0;
    std::vector<Candidate> found;
    for (const Segment& seg : norm.segments) {
      found.clear();
      collect(seg.text, found);
      std::sort(found.begin(), found.end());
      count += static_cast<std::size_t>(
          std::unique(found.begin(), found.end(),
                      [](const Candidate& a, const Candidate& b) { return a.entry == b.entry; }) -
          found.begin());
    }
    return count;
  } catch (...) {
    return 0;
  }
}

Matcher::Stats Matcher::stats() const noexcept {
  Stats st;
  st.entries = table_.size();
  st.always_checked = always_.size();
  st.keys = index_.key_count();
  for (std::size_t i = 0; i < table_.size(); ++i) {
    st.bounded_start += slots_[i].max_offset != kUnbounded;
    st.line_start += slots_[i].single_line;
    st.line_local += slots_[i].line_local;
  }
  st.compiled = compiled_.load(std::memory_order_relaxed);
  st.index_bytes = index_.memory_bytes() + key_entries_.capacity() * sizeof(Member) +
                   (key_entry_begin_.capacity() + always_.capacity() + entry_key_.capacity()) * sizeof(std::uint32_t);
  return st;
}

}  // namespace errshim::detail
