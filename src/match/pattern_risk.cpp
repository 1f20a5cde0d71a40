// The backtracking-risk detector: one bottom-up pass over the shared regex
// tree (regex_syntax.hpp) computing, for every node, the bytes it can start
// and end with and the unbounded runs at its edges. The
// three shapes of pattern_risk.hpp are read off those facts, so the cost is
// linear in the pattern (bitsets of 256 bytes stand in for character sets).

#include "pattern_risk.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "literal_extract.hpp"
#include "regex_syntax.hpp"

namespace errshim::detail {
namespace {

using Set = regex::ByteSet;
constexpr std::size_t kInf = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kMaxBranchPairs = 64;  // each branch is compared with this many before it
constexpr std::size_t kMaxAdjacentScan = 256;
constexpr std::size_t kMaxFixedLength = 32;  // branches compared byte by byte up to this length
constexpr std::size_t kMaxSeparatorSets = 256;

std::size_t add(std::size_t a, std::size_t b) { return (a == kInf || b == kInf || a > kInf - b) ? kInf : a + b; }
std::size_t mul(std::size_t a, std::size_t b) {
  if (a == 0 || b == 0) return 0;
  return (a == kInf || b == kInf || a > kInf / b) ? kInf : a * b;
}

// What the risk analysis reads from a node of the shared tree.
enum class Shape {
  chars,  // one byte out of a set
  seq,  // kids in order
  alt,  // one of the kids
  repeat,  // kids[0] between min and max times
  group,  // kids[0]; an atomic group never gives back what it matched
  zero_width,  // anchors, \b, look-arounds, comments, flag settings
  opaque,  // back-references, recursion: any text
};

Shape shape_of(const regex::Node& n) {
  using K = regex::Node::Kind;
  switch (n.kind) {
    case K::literal:
    case K::set: return Shape::chars;
    case K::seq: return Shape::seq;
    case K::alt: return Shape::alt;
    case K::repeat: return Shape::repeat;
    case K::group: return n.look_around() ? Shape::zero_width : Shape::group;
    case K::backref:
    case K::recursion: return Shape::opaque;
    default: return Shape::zero_width;
  }
}

bool atomic(const regex::Node& n) { return n.group == regex::Node::Group::atomic; }

// Unbounded (or variable) runs at the start or end of a node: the bytes the
// repeated unit starts and ends with. Two runs can trade characters when both
// the starts and the ends meet.
struct Runs {
  Set first, last;
  bool any() const { return first.any(); }
  Runs& operator|=(const Runs& o) {
    first |= o.first;
    last |= o.last;
    return *this;
  }
};
bool trade(const Runs& a, const Runs& b) { return (a.first & b.first).any() && (a.last & b.last).any(); }

struct Facts {
  std::size_t min = 0, max = 0;  // length in bytes
  Set chars;  // every byte a match can hold
  Set first, last;  // bytes a non-empty match starts / ends with
  // Bytes of variable runs inside that no mandatory part beside them is
  // disjoint from: a repetition of this node cannot tell where one run's
  // text ends and the next repetition's begins ((.*,)+ on ",,,,").
  Set unseparated;
  Runs head_var, tail_var;  // variable-count repeats at the edges (nested shape)
  Runs head_inf, tail_inf;  // unbounded repeats at the edges (adjacent shape)
  std::size_t bad_alt = kInf;  // a node: an alternation with overlapping branches inside (backtracking reaches it)
};

class Analysis {
 public:
  explicit Analysis(const regex::Tree& tree) : p_(tree.pattern), nodes_(tree.nodes), facts_(tree.nodes.size()) {}

  std::optional<BacktrackingRisk> run() {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      compute(i);
      if (risk_) return risk_;
    }
    return std::nullopt;
  }

 private:
  std::string fragment(std::size_t i) const {
    const regex::Node& n = nodes_[i];
    std::string_view f = p_.substr(n.begin, n.end - n.begin);
    if (f.size() <= 48) return std::string(f);
    return std::string(f.substr(0, 45)) + "...";
  }

  void report(BacktrackingRisk::Kind kind, std::size_t at, std::string why) {
    if (!risk_) risk_ = BacktrackingRisk{kind, std::move(why), nodes_[at].begin};
  }

  // A branch that is a fixed sequence of byte sets (no quantifier but exact
  // counts), as those sets; nullopt otherwise or when longer than the cap.
  bool fixed(std::size_t i, std::vector<Set>& out) const {
    const regex::Node& n = nodes_[i];
    if (n.kind == regex::Node::Kind::comment || n.kind == regex::Node::Kind::set_flags) return true;  // no text
    switch (shape_of(n)) {
      case Shape::chars:
        if (out.size() >= kMaxFixedLength) return false;
        out.push_back(n.set);
        return true;
      case Shape::seq:
        for (std::size_t k : n.kids)
          if (!fixed(k, out)) return false;
        return true;
      case Shape::group: return !atomic(n) && fixed(n.kids[0], out);
      case Shape::repeat:
        if (n.min != n.max || n.min > kMaxFixedLength) return false;
        for (std::size_t r = 0; r < n.min; ++r)
          if (!fixed(n.kids[0], out)) return false;
        return true;
      default: return false;
    }
  }

  // Whether repeating alternation `alt` can read the same text two ways:
  // two branches match one string, or one branch is another followed by
  // text a branch can start with ((a|ab|b)+ reads "ab" twice).
  bool ambiguous_branches(const regex::Node& alt) const {
    Set starts;
    for (std::size_t k : alt.kids) starts |= facts_[k].first;
    std::vector<std::vector<Set>> shapes(alt.kids.size());
    std::vector<bool> is_fixed(alt.kids.size());
    for (std::size_t a = 0; a < alt.kids.size(); ++a) is_fixed[a] = fixed(alt.kids[a], shapes[a]);
    for (std::size_t b = 1; b < alt.kids.size(); ++b) {
      const Facts& fb = facts_[alt.kids[b]];
      if (fb.max == 0) continue;
      for (std::size_t a = b > kMaxBranchPairs ? b - kMaxBranchPairs : 0; a < b; ++a) {
        const Facts& fa = facts_[alt.kids[a]];
        if (fa.max == 0 || (fa.first & fb.first).none()) continue;
        if (is_fixed[a] && is_fixed[b]) {
          const std::vector<Set>& s = shapes[a].size() <= shapes[b].size() ? shapes[a] : shapes[b];
          const std::vector<Set>& l = shapes[a].size() <= shapes[b].size() ? shapes[b] : shapes[a];
          bool compatible = true;
          for (std::size_t k = 0; k < s.size() && compatible; ++k) compatible = (s[k] & l[k]).any();
          if (!compatible) continue;
          if (s.size() == l.size() || (l[s.size()] & starts).any()) return true;
          continue;
        }
        const bool lengths_meet = std::max(fa.min, fb.min) <= std::min(fa.max, fb.max);
        if ((fa.last & fb.last).any() && lengths_meet) return true;
      }
    }
    return false;
  }

  void compute(std::size_t i) {
    const regex::Node& n = nodes_[i];
    Facts& f = facts_[i];
    switch (shape_of(n)) {
      case Shape::chars:
        f.min = f.max = 1;
        f.chars = f.first = f.last = n.set;
        break;
      case Shape::zero_width:
        // Contributes no text; a look-around's body was checked on its own.
        break;
      case Shape::opaque:
        f.max = kInf;
        f.chars = f.first = f.last = ~Set();
        break;
      case Shape::group: {
        f = facts_[n.kids[0]];
        if (atomic(n)) {
          // Nothing outside can make an atomic group give characters back.
          f.head_var = f.tail_var = f.head_inf = f.tail_inf = Runs();
          f.unseparated.reset();
          f.bad_alt = kInf;
        }
        break;
      }
      case Shape::alt: {
        f.min = kInf;
        for (std::size_t k : n.kids) {
          const Facts& c = facts_[k];
          f.min = std::min(f.min, c.min);
          f.max = std::max(f.max, c.max);
          f.chars |= c.chars;
          f.unseparated |= c.unseparated;
          f.first |= c.first;
          f.last |= c.last;
          f.head_var |= c.head_var;
          f.tail_var |= c.tail_var;
          f.head_inf |= c.head_inf;
          f.tail_inf |= c.tail_inf;
          if (f.bad_alt == kInf) f.bad_alt = c.bad_alt;
        }
        if (f.bad_alt == kInf && ambiguous_branches(n)) f.bad_alt = i;
        break;
      }
      case Shape::seq: {
        for (std::size_t k : n.kids) {
          f.min = add(f.min, facts_[k].min);
          f.max = add(f.max, facts_[k].max);
          f.chars |= facts_[k].chars;
          if (f.bad_alt == kInf) f.bad_alt = facts_[k].bad_alt;
        }
        separate(n, f);
        for (std::size_t k : n.kids) {  // what the sequence can start with
          f.first |= facts_[k].first;
          f.head_var |= facts_[k].head_var;
          f.head_inf |= facts_[k].head_inf;
          if (facts_[k].min > 0) break;
        }
        for (auto k = n.kids.rbegin(); k != n.kids.rend(); ++k) {  // ... and end with
          f.last |= facts_[*k].last;
          f.tail_var |= facts_[*k].tail_var;
          f.tail_inf |= facts_[*k].tail_inf;
          if (facts_[*k].min > 0) break;
        }
        adjacent(n);
        break;
      }
      case Shape::repeat: {
        const Facts& body = facts_[n.kids[0]];
        f.min = mul(n.min, body.min);
        f.max = n.max == kInf ? (body.max == 0 ? 0 : kInf) : mul(n.max, body.max);
        if (n.max > 0) {
          f.chars = body.chars;
          f.first = body.first;
          f.last = body.last;
        }
        if (n.possessive) break;  // its runs never give back
        f.unseparated = body.unseparated;
        f.head_var = body.head_var;
        f.tail_var = body.tail_var;
        f.head_inf = body.head_inf;
        f.tail_inf = body.tail_inf;
        f.bad_alt = body.bad_alt;
        if (body.max == 0) break;
        const Runs unit{body.first, body.last};
        if (n.max > n.min && n.max >= 2) {
          f.head_var |= unit;
          f.tail_var |= unit;
          f.unseparated |= body.chars;
        }
        if (n.max == kInf) {
          f.head_inf |= unit;
          f.tail_inf |= unit;
        }
        if (n.max < 2) break;
        // One repetition's end run can trade characters with the next
        // one's start run: every split of the text is tried on failure.
        if (trade(body.tail_var, body.head_var) || body.unseparated.any()) {
          report(BacktrackingRisk::Kind::nested_quantifiers, i,
                 fmt::format("nested quantifiers: the repetitions of '{}' can split the same text in exponentially "
                             "many ways",
                             fragment(i)));
          break;
        }
        if (body.bad_alt != kInf && (n.max == kInf || n.max >= 16)) {
          report(BacktrackingRisk::Kind::overlapping_alternation, i,
                 fmt::format("quantified alternation: in '{}' the branches of '{}' can match the same text, so every "
                             "combination is tried",
                             fragment(i), fragment(body.bad_alt)));
        }
        break;
      }
    }
  }

  // A run inside child k is kept apart from the next repetition's text by a
  // mandatory sibling that cannot match any of its bytes.
  void separate(const regex::Node& seq, Facts& f) const {
    // The distinct byte sets of the mandatory children (few: mostly single
    // literal bytes), with how many children have each, so the check stays
    // linear in the sequence.
    std::vector<std::pair<Set, std::size_t>> mandatory;
    for (std::size_t k : seq.kids) {
      const Facts& c = facts_[k];
      if (c.min == 0) continue;
      auto it = std::find_if(mandatory.begin(), mandatory.end(), [&](const auto& m) { return m.first == c.chars; });
      if (it != mandatory.end())
        ++it->second;
      else if (mandatory.size() < kMaxSeparatorSets)
        mandatory.emplace_back(c.chars, 1);
    }
    for (std::size_t k : seq.kids) {
      const Facts& c = facts_[k];
      if (c.unseparated.none()) continue;
      bool separated = false;
      for (const auto& [set, count] : mandatory) {
        // A child cannot separate its own runs from themselves.
        const bool self = c.min > 0 && set == c.chars && count == 1;
        if (!self && (set & c.unseparated).none()) {
          separated = true;
          break;
        }
      }
      if (!separated) f.unseparated |= c.unseparated;
    }
  }

  // Two unbounded runs in a sequence with only optional parts between them
  // that can take the same characters: quadratic or worse.
  void adjacent(const regex::Node& seq) {
    for (std::size_t a = 0; a < seq.kids.size(); ++a) {
      const Runs& tail = facts_[seq.kids[a]].tail_inf;
      if (!tail.any()) continue;
      const std::size_t stop = std::min(seq.kids.size(), a + 1 + kMaxAdjacentScan);
      for (std::size_t b = a + 1; b < stop; ++b) {
        if (trade(tail, facts_[seq.kids[b]].head_inf)) {
          report(BacktrackingRisk::Kind::adjacent_quantifiers, seq.kids[a],
                 fmt::format("adjacent quantifiers: '{}' and '{}' can take the same characters{}, so every split is "
                             "tried",
                             fragment(seq.kids[a]), fragment(seq.kids[b]),
                             b == a + 1 ? "" : " (only optional text between them)"));
          return;
        }
        if (facts_[seq.kids[b]].min > 0) break;
      }
    }
  }

  std::string_view p_;
  const std::vector<regex::Node>& nodes_;
  std::vector<Facts> facts_;
  std::optional<BacktrackingRisk> risk_;
};

}  // namespace

std::optional<BacktrackingRisk> backtracking_risk(std::string_view pattern) {
  const regex::ParseResult parsed = regex::parse(pattern);
  if (!parsed.tree) return std::nullopt;
  return Analysis(*parsed.tree).run();
}

// Which literal the matcher's index looks for is its own choice: each one
// is left out in turn.
std::vector<std::string> near_misses(const Entry& e, std::size_t size) {
  const RegexLiterals lits = required_literals(e.pattern);
  std::vector<std::string> runs;
  for (const RequiredRun& r : lits.runs)
    if (r.text.find('\n') == std::string::npos) runs.push_back(r.text);
  if (!lits.understood || runs.size() < 2) return {};
  const std::string fill = "1";  // a placeholder's text: fits a line, an integer and most overrides
  auto repeated = [size](std::string text, const std::string& unit) {
    while (text.size() < size) text += unit;
    return text;
  };
  std::vector<std::string> out;
  for (std::size_t drop = 0; drop < runs.size(); ++drop) {
    std::string unit;
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (i != drop) unit += runs[i] + fill;
    out.push_back(repeated({}, unit));
  }
  std::string middle;
  for (std::size_t i = 1; i + 1 < runs.size(); ++i) middle += runs[i] + fill;
  if (!middle.empty()) out.push_back(repeated(runs[0] + fill, middle));
  return out;
}

void append_backtracking_problems(const Entry& e, std::vector<Problem>& problems) {
  if (auto risk = backtracking_risk(e.pattern)) {
    const bool from_template = !e.template_text.empty();
    if (!from_template || risk->kind != BacktrackingRisk::Kind::adjacent_quantifiers)
      problems.push_back({e.where, e.id,
                          fmt::format("{} may backtrack catastrophically: {}",
                                      from_template ? "the template's regex" : "pattern", risk->why)});
  }
  for (const std::string& u : e.unless)
    if (auto risk = backtracking_risk(u))
      problems.push_back(
          {e.where, e.id, fmt::format("'unless' pattern may backtrack catastrophically: {}", risk->why)});
}

}  // namespace errshim::detail
