// The backtracking-risk detector: a small parser for Boost's perl syntax
// that builds a tree, then one bottom-up pass computing, for every node, the
// bytes it can start and end with and the unbounded runs at its edges. The
// three shapes of pattern_risk.hpp are read off those facts, so the cost is
// linear in the pattern (bitsets of 256 bytes stand in for character sets).

#include "pattern_risk.hpp"

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "literal_extract.hpp"

namespace errshim::detail {
namespace {

using Set = std::bitset<256>;
constexpr std::size_t kInf = std::numeric_limits<std::size_t>::max();
constexpr int kMaxDepth = 200;               // groups; Boost itself refuses deeper nesting
constexpr std::size_t kMaxBranchPairs = 64;  // each branch is compared with this many before it
constexpr std::size_t kMaxAdjacentScan = 256;
constexpr std::size_t kMaxFixedLength = 32;  // branches compared byte by byte up to this length
constexpr std::size_t kMaxSeparatorSets = 256;

Set range(unsigned lo, unsigned hi) {
  Set s;
  for (unsigned c = lo; c <= hi && c < 256; ++c) s.set(c);
  return s;
}
Set one(unsigned char c) { return Set().set(c); }
Set digit() { return range('0', '9'); }
Set word() { return range('a', 'z') | range('A', 'Z') | digit() | one('_'); }
Set space() { return one(' ') | range('\t', '\r'); }
Set horizontal() { return one(' ') | one('\t'); }
Set vertical() { return range('\n', '\r'); }
Set any_but_newline() { return ~one('\n'); }

Set fold_case(Set s) {
  for (unsigned c = 'a'; c <= 'z'; ++c) {
    const unsigned u = c - 'a' + 'A';
    if (s[c] || s[u]) s.set(c).set(u);
  }
  return s;
}

std::size_t add(std::size_t a, std::size_t b) { return (a == kInf || b == kInf || a > kInf - b) ? kInf : a + b; }
std::size_t mul(std::size_t a, std::size_t b) {
  if (a == 0 || b == 0) return 0;
  return (a == kInf || b == kInf || a > kInf / b) ? kInf : a * b;
}

struct Node {
  enum class Kind {
    chars,       // one byte out of `set`
    seq,         // kids in order
    alt,         // one of the kids
    repeat,      // kids[0] between min and max times
    group,       // kids[0]; `no_backtrack` for an atomic group
    zero_width,  // anchors, \b, look-arounds (kids hold a look-around's body)
    opaque,      // back-references, recursion: any text
  };
  Kind kind = Kind::seq;
  Set set;
  std::vector<std::size_t> kids;
  std::size_t min = 1, max = 1;
  bool no_backtrack = false;  // possessive repeat, atomic group
  std::size_t begin = 0, end = 0;
};

struct Unparsable {};

// Recursive descent over the pattern. Children are always pushed before
// their parent, so a pass in index order is bottom-up.
class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  std::size_t parse() {
    const std::size_t root = alternation(0);
    if (i_ != p_.size()) throw Unparsable{};  // an unbalanced ')'
    return root;
  }

  std::vector<Node> nodes;

 private:
  struct Flags {
    bool icase = false;
    bool extended = false;
  };

  std::size_t push(Node n) {
    nodes.push_back(std::move(n));
    return nodes.size() - 1;
  }
  std::size_t leaf(Node::Kind kind, Set set, std::size_t begin) {
    Node n;
    n.kind = kind;
    n.set = kind == Node::Kind::chars && flags_.icase ? fold_case(set) : set;
    n.begin = begin;
    n.end = i_;
    return push(std::move(n));
  }

  bool at_end() const { return i_ >= p_.size(); }
  char peek(std::size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : '\0'; }
  char take() {
    if (at_end()) throw Unparsable{};
    return p_[i_++];
  }
  void expect(char c) {
    if (take() != c) throw Unparsable{};
  }

  // In (?x) mode white space and #-comments between atoms are not pattern.
  void skip_extended() {
    while (flags_.extended && !at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  std::size_t alternation(int depth) {
    if (depth > kMaxDepth) throw Unparsable{};
    const std::size_t begin = i_;
    Node alt;
    alt.kind = Node::Kind::alt;
    alt.kids.push_back(sequence(depth));
    while (peek() == '|' && !at_end()) {
      ++i_;
      alt.kids.push_back(sequence(depth));
    }
    if (alt.kids.size() == 1) return alt.kids.front();
    alt.begin = begin;
    alt.end = i_;
    return push(std::move(alt));
  }

  std::size_t sequence(int depth) {
    Node seq;
    seq.kind = Node::Kind::seq;
    seq.begin = i_;
    for (;;) {
      skip_extended();
      if (at_end() || peek() == '|' || peek() == ')') break;
      if (peek() == '\\' && peek(1) == 'Q') {  // \Q...\E: literal text
        i_ += 2;
        while (!at_end() && !(peek() == '\\' && peek(1) == 'E')) {
          const std::size_t b = i_;
          const unsigned char c = static_cast<unsigned char>(take());
          seq.kids.push_back(leaf(Node::Kind::chars, one(c), b));
        }
        if (!at_end()) i_ += 2;
        // Quoted '+' or '*' are text; a quantifier after \E applies to the
        // last quoted character.
        if (!seq.kids.empty()) seq.kids.back() = quantified(seq.kids.back());
        continue;
      }
      const std::optional<std::size_t> a = atom(depth);
      if (a) seq.kids.push_back(quantified(*a));
    }
    seq.end = i_;
    if (seq.kids.size() == 1) return seq.kids.front();
    return push(std::move(seq));
  }

  // Wraps `atom` in each quantifier that follows it.
  std::size_t quantified(std::size_t atom) {
    for (;;) {
      skip_extended();
      std::size_t min = 0, max = 0;
      const char c = peek();
      if (at_end()) return atom;
      if (c == '*') {
        ++i_, min = 0, max = kInf;
      } else if (c == '+') {
        ++i_, min = 1, max = kInf;
      } else if (c == '?') {
        ++i_, min = 0, max = 1;
      } else if (c == '{' && braces(min, max)) {
      } else {
        return atom;
      }
      Node r;
      r.kind = Node::Kind::repeat;
      r.min = min;
      r.max = max;
      if (peek() == '?') {
        ++i_;  // lazy: the same choices, tried in the other order
      } else if (peek() == '+') {
        ++i_;
        r.no_backtrack = true;
      }
      r.kids.push_back(atom);
      r.begin = nodes[atom].begin;
      r.end = i_;
      atom = push(std::move(r));
    }
  }

  // {n}, {n,}, {n,m} at i_; false (and i_ unchanged) when it is a literal '{'.
  bool braces(std::size_t& min, std::size_t& max) {
    std::size_t j = i_ + 1;
    auto number = [&](std::size_t& out) {
      const std::size_t start = j;
      out = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
        out = std::min<std::size_t>(out * 10 + static_cast<std::size_t>(p_[j] - '0'), 1u << 30);
        ++j;
      }
      return j > start;
    };
    if (!number(min)) return false;
    max = min;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(max)) max = kInf;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    i_ = j + 1;
    return true;
  }

  std::optional<std::size_t> atom(int depth) {
    const std::size_t begin = i_;
    const char c = take();
    switch (c) {
      case '(': return group(depth, begin);
      case '[': return leaf(Node::Kind::chars, char_class(), begin);
      case '.': return leaf(Node::Kind::chars, any_but_newline(), begin);
      case '^':
      case '$': return leaf(Node::Kind::zero_width, Set(), begin);
      case '\\': return escape(begin);
      case '*':
      case '+':
      case '?': throw Unparsable{};  // nothing to repeat: Boost rejects it
      default: return leaf(Node::Kind::chars, one(static_cast<unsigned char>(c)), begin);
    }
  }

  // After '\' outside a class.
  std::size_t escape(std::size_t begin) {
    const char c = take();
    switch (c) {
      case 'b': case 'B': case 'A': case 'z': case 'Z': case 'G': case '<': case '>': case '`': case '\'': case 'K':
        return leaf(Node::Kind::zero_width, Set(), begin);
      case 'g': case 'k': skip_reference(); return leaf(Node::Kind::opaque, Set(), begin);
      case 'p': case 'P':
        if (peek() == '{') skip_to('}'); else take();
        return leaf(Node::Kind::chars, ~Set(), begin);
      case 'X': case 'C': return leaf(Node::Kind::chars, ~Set(), begin);
      case 'R': return leaf(Node::Kind::chars, vertical(), begin);
      case 'N': return leaf(Node::Kind::chars, any_but_newline(), begin);
      default: break;
    }
    if (c >= '1' && c <= '9') {
      while (peek() >= '0' && peek() <= '9') ++i_;
      return leaf(Node::Kind::opaque, Set(), begin);
    }
    --i_;
    return leaf(Node::Kind::chars, escaped_set(), begin);
  }

  void skip_to(char close) {
    while (take() != close) {
    }
  }
  void skip_reference() {  // \g1 \g-1 \g{name} \k<name> \k'name' \k{name}
    const char c = peek();
    if (c == '{') skip_to('}');
    else if (c == '<') skip_to('>');
    else if (c == '\'') { ++i_; skip_to('\''); }
    else {
      if (c == '-') ++i_;
      while (peek() >= '0' && peek() <= '9') ++i_;
    }
  }

  // The set a backslash escape stands for (i_ just after the '\'), for
  // escapes valid both inside and outside a class.
  Set escaped_set() {
    const char c = take();
    switch (c) {
      case 'd': return digit();
      case 'D': return ~digit();
      case 'w': return word();
      case 'W': return ~word();
      case 's': return space();
      case 'S': return ~space();
      case 'h': return horizontal();
      case 'H': return ~horizontal();
      case 'v': return vertical();
      case 'V': return ~vertical();
      default: return one(escaped_char(c));
    }
  }

  unsigned char escaped_char(char c) {
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'a': return '\a';
      case 'e': return 0x1b;
      case 'c': return static_cast<unsigned char>(take()) & 0x1f;
      case '0': {
        unsigned v = 0;
        for (int k = 0; k < 3 && peek() >= '0' && peek() <= '7'; ++k) v = v * 8 + static_cast<unsigned>(take() - '0');
        return static_cast<unsigned char>(v);
      }
      case 'x': {
        unsigned v = 0;
        auto hex = [](char h) -> int {
          if (h >= '0' && h <= '9') return h - '0';
          if (h >= 'a' && h <= 'f') return h - 'a' + 10;
          if (h >= 'A' && h <= 'F') return h - 'A' + 10;
          return -1;
        };
        if (peek() == '{') {
          ++i_;
          while (peek() != '}') {
            const int d = hex(take());
            if (d < 0) throw Unparsable{};
            v = std::min(v * 16 + static_cast<unsigned>(d), 0x10FFFFu);
          }
          ++i_;
        } else {
          for (int k = 0; k < 2 && hex(peek()) >= 0; ++k) v = v * 16 + static_cast<unsigned>(hex(take()));
        }
        // A code point past one byte is several UTF-8 bytes: any high byte
        // stands in for them.
        return v > 0xFF ? 0x80 : static_cast<unsigned char>(v);
      }
      default: return static_cast<unsigned char>(c);
    }
  }

  // After '['.
  Set char_class() {
    Set s;
    const bool negated = peek() == '^';
    if (negated) ++i_;
    bool first = true;
    for (;;) {
      const char c = take();
      if (c == ']' && !first) break;
      first = false;
      if (c == '[' && (peek() == ':' || peek() == '=' || peek() == '.')) {
        s |= posix_class(take());
        continue;
      }
      unsigned lo = 0;
      if (c == '\\') {
        const char e = peek();
        if (std::string_view("dDwWsShHvV").find(e) != std::string_view::npos) {
          s |= escaped_set();
          continue;
        }
        lo = static_cast<unsigned char>(escaped_char(take()));
      } else {
        lo = static_cast<unsigned char>(c);
      }
      if (peek() == '-' && peek(1) != ']' && i_ + 1 < p_.size()) {
        ++i_;
        const char h = take();
        const unsigned hi = h == '\\' ? escaped_char(take()) : static_cast<unsigned char>(h);
        if (hi < lo) throw Unparsable{};
        s |= range(lo, hi);
      } else {
        s.set(lo);
      }
    }
    if (flags_.icase) s = fold_case(s);
    return negated ? ~s : s;
  }

  // [:name:], [:^name:], [=x=], [.x.]; i_ after the opening kind character.
  Set posix_class(char kind) {
    const std::size_t start = i_;
    while (!(peek() == kind && peek(1) == ']')) take();
    std::string_view name = p_.substr(start, i_ - start);
    i_ += 2;
    if (kind != ':') return name.size() == 1 ? one(static_cast<unsigned char>(name[0])) : ~Set();
    const bool negate = !name.empty() && name[0] == '^';
    if (negate) name.remove_prefix(1);
    Set s;
    if (name == "alpha") s = range('a', 'z') | range('A', 'Z');
    else if (name == "digit") s = digit();
    else if (name == "alnum") s = range('a', 'z') | range('A', 'Z') | digit();
    else if (name == "space") s = space();
    else if (name == "upper") s = range('A', 'Z');
    else if (name == "lower") s = range('a', 'z');
    else if (name == "xdigit") s = digit() | range('a', 'f') | range('A', 'F');
    else if (name == "word") s = word();
    else if (name == "blank") s = horizontal();
    else if (name == "punct") s = range('!', '/') | range(':', '@') | range('[', '`') | range('{', '~');
    else s = ~Set();  // other classes: assume anything
    return negate ? ~s : s;
  }

  // After '('. Look-arounds, atomic groups, flags and comments included.
  std::optional<std::size_t> group(int depth, std::size_t begin) {
    const Flags outer = flags_;
    Node g;
    g.kind = Node::Kind::group;
    if (peek() == '?') {
      ++i_;
      const char c = take();
      if (c == '#') {  // comment
        skip_to(')');
        return std::nullopt;
      }
      if (c == '=' || c == '!' || (c == '<' && (peek() == '=' || peek() == '!'))) {
        if (c == '<') ++i_;
        g.kind = Node::Kind::zero_width;
      } else if (c == '>') {
        g.no_backtrack = true;
      } else if (c == '<' || c == '\'') {
        skip_to(c == '<' ? '>' : '\'');
      } else if (c == 'P' && peek() == '<') {
        ++i_;
        skip_to('>');
      } else if (c == 'P' || c == 'R' || c == '&' || c == '+' || c == '-' || (c >= '0' && c <= '9')) {
        // (?P=name) (?P>name) (?R) (?1) (?&name): a back-reference or a
        // recursion; -x style flag lists start with '-' too.
        if (c == '-' && peek() >= 'a' && peek() <= 'z') {
          --i_;
          return flag_group(depth, begin, outer);
        }
        skip_to(')');
        return leaf(Node::Kind::opaque, Set(), begin);
      } else if (c == '(') {  // conditional: (?(cond)yes|no)
        if (peek() == '?') {
          (void)group(depth + 1, i_ - 1);
        } else {
          skip_to(')');
        }
      } else if (c == ':' || c == '|') {
      } else {
        --i_;
        return flag_group(depth, begin, outer);
      }
    }
    return finish_group(std::move(g), depth, begin, outer);
  }

  // The rest of a group, up to its ')', after which the flags are the outer ones again.
  std::size_t finish_group(Node g, int depth, std::size_t begin, const Flags& outer) {
    g.kids.push_back(alternation(depth + 1));
    expect(')');
    flags_ = outer;
    g.begin = begin;
    g.end = i_;
    return push(std::move(g));
  }

  // (?imsx-imsx) sets flags up to the end of the enclosing group;
  // (?imsx-imsx:...) only inside.
  std::optional<std::size_t> flag_group(int depth, std::size_t begin, const Flags& outer) {
    bool on = true;
    for (;;) {
      const char c = take();
      if (c == '-') {
        on = false;
      } else if (c == 'i') {
        flags_.icase = on;
      } else if (c == 'x') {
        flags_.extended = on;
      } else if (c == 'm' || c == 's' || c == 'n') {
        // line modes and no-auto-capture change nothing here ('.' never
        // crosses a line in the matcher: match_not_dot_newline)
      } else if (c == ')') {
        return std::nullopt;
      } else if (c == ':') {
        Node g;
        g.kind = Node::Kind::group;
        return finish_group(std::move(g), depth, begin, outer);
      } else {
        throw Unparsable{};
      }
    }
  }

  std::string_view p_;
  std::size_t i_ = 0;
  Flags flags_;
};

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
  Set chars;                     // every byte a match can hold
  Set first, last;               // bytes a non-empty match starts / ends with
  // Bytes of variable runs inside that no mandatory part beside them is
  // disjoint from: a repetition of this node cannot tell where one run's
  // text ends and the next repetition's begins ((.*,)+ on ",,,,").
  Set unseparated;
  Runs head_var, tail_var;       // variable-count repeats at the edges (nested shape)
  Runs head_inf, tail_inf;       // unbounded repeats at the edges (adjacent shape)
  std::size_t bad_alt = kInf;    // a node: an alternation with overlapping branches inside (backtracking reaches it)
};

class Analysis {
 public:
  Analysis(std::string_view pattern, const std::vector<Node>& nodes) : p_(pattern), nodes_(nodes), facts_(nodes.size()) {}

  std::optional<BacktrackingRisk> run() {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      compute(i);
      if (risk_) return risk_;
    }
    return std::nullopt;
  }

 private:
  std::string fragment(std::size_t i) const {
    const Node& n = nodes_[i];
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
    const Node& n = nodes_[i];
    switch (n.kind) {
      case Node::Kind::chars:
        if (out.size() >= kMaxFixedLength) return false;
        out.push_back(n.set);
        return true;
      case Node::Kind::seq:
        for (std::size_t k : n.kids)
          if (!fixed(k, out)) return false;
        return true;
      case Node::Kind::group: return !n.no_backtrack && fixed(n.kids[0], out);
      case Node::Kind::repeat:
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
  bool ambiguous_branches(const Node& alt) const {
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
    const Node& n = nodes_[i];
    Facts& f = facts_[i];
    switch (n.kind) {
      case Node::Kind::chars:
        f.min = f.max = 1;
        f.chars = f.first = f.last = n.set;
        break;
      case Node::Kind::zero_width:
        // Contributes no text; a look-around's body was checked on its own.
        break;
      case Node::Kind::opaque:
        f.max = kInf;
        f.chars = f.first = f.last = ~Set();
        break;
      case Node::Kind::group: {
        f = facts_[n.kids[0]];
        if (n.no_backtrack) {
          // Nothing outside can make an atomic group give characters back.
          f.head_var = f.tail_var = f.head_inf = f.tail_inf = Runs();
          f.unseparated.reset();
          f.bad_alt = kInf;
        }
        break;
      }
      case Node::Kind::alt: {
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
      case Node::Kind::seq: {
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
      case Node::Kind::repeat: {
        const Facts& body = facts_[n.kids[0]];
        f.min = mul(n.min, body.min);
        f.max = n.max == kInf ? (body.max == 0 ? 0 : kInf) : mul(n.max, body.max);
        if (n.max > 0) {
          f.chars = body.chars;
          f.first = body.first;
          f.last = body.last;
        }
        if (n.no_backtrack) break;  // possessive: its runs never give back
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
  void separate(const Node& seq, Facts& f) const {
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
  void adjacent(const Node& seq) {
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
  const std::vector<Node>& nodes_;
  std::vector<Facts> facts_;
  std::optional<BacktrackingRisk> risk_;
};

}  // namespace

std::optional<BacktrackingRisk> backtracking_risk(std::string_view pattern) {
  Parser parser(pattern);
  try {
    parser.parse();
  } catch (const Unparsable&) {
    return std::nullopt;
  }
  return Analysis(pattern, parser.nodes).run();
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
      problems.push_back({e.where, e.id, fmt::format("{} may backtrack catastrophically: {}",
                                                     from_template ? "the template's regex" : "pattern", risk->why)});
  }
  for (const std::string& u : e.unless)
    if (auto risk = backtracking_risk(u))
      problems.push_back({e.where, e.id, fmt::format("'unless' pattern may backtrack catastrophically: {}", risk->why)});
}

}  // namespace errshim::detail
