// The one reader of catalog regexes: Boost's perl syntax, as the matcher
// compiles it (narrow characters, match_not_dot_newline), parsed into a tree
// that the analyses walk: backtracking risk (pattern_risk.hpp), required
// literals (literal_extract.hpp) and specificity (below). Each analysis
// decides for itself which nodes it understands; the parser only refuses
// text it cannot read at all, with the byte where it stopped.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace errshim::detail::regex {

using ByteSet = std::bitset<256>;
inline constexpr std::size_t kInfinite = std::numeric_limits<std::size_t>::max();
inline constexpr int kMaxDepth = 200;  // nested groups; Boost itself refuses deeper nesting

struct Node {
  enum class Kind {
    literal,  // one character as the engine reads it: `value` (a byte, or an escape's value)
    set,  // one byte out of `set`: a class, '.', \d, \p{..} ...
    seq,  // kids in order
    alt,  // one of the kids
    repeat,  // kids[0] between min and max times
    group,  // kids[0] (a conditional: kids[1] is its look-around condition, if any)
    assertion,  // ^ $ \b \B \A \z \Z \G \< \> \` \' \K: `value` is the character after '\' (or ^ $)
    backref,  // \1 \k<name> \g{-1} (?P=name): text matched earlier
    recursion,  // (?R) (?1) (?&name) (?P>name): a sub-pattern again
    comment,  // (?#...)
    set_flags,  // (?i) (?x-i) ...: flags for the rest of the enclosing group
  };
  enum class Group {
    capture,  // (...) (?<name>...) (?P<name>...) (?'name'...)
    plain,  // (?:...) and flag-scoped (?i:...)
    branch_reset,  // (?|...)
    atomic,  // (?>...)
    look_ahead,  // (?=...) (?!...)
    look_behind,  // (?<=...) (?<!...)
    conditional,  // (?(cond)yes|no)
  };
  Kind kind = Kind::seq;
  Group group = Group::plain;
  std::uint32_t value = 0;
  bool icase = false;  // literal or set read under (?i)
  bool starts_char = true;  // literal: not a continuation byte of a raw UTF-8 character
  bool negated = false;  // set written [^...]; look-around (?!...) (?<!...)
  bool names_newline = false;  // set written [...] with a member \n or a raw newline
  bool possessive = false;  // repeat: a++ a*+ ...
  bool lazy = false;  // repeat: a+? ...
  bool long_count = false;  // repeat: a count of more than six digits
  bool quoted = false;  // literal inside \Q...\E
  bool flag_scope = false;  // group: (?i:...) and the like
  ByteSet set;  // literal, set: the bytes it matches (case folded under (?i))
  std::size_t min = 1, max = 1;  // repeat
  std::vector<std::size_t> kids;
  std::size_t begin = 0, end = 0;  // the node's text in the pattern: [begin, end)

  bool look_around() const {
    return kind == Kind::group && (group == Group::look_ahead || group == Group::look_behind);
  }
};

// A parsed pattern. Children come before their parents in `nodes`, so a pass
// in index order is bottom-up; the root is last. A sequence or alternation of
// one element is that element.
struct Tree {
  std::string_view pattern;  // the text parsed (not owned)
  std::vector<Node> nodes;
  std::size_t root = 0;

  const Node& operator[](std::size_t i) const { return nodes[i]; }
  std::string_view text(std::size_t i) const { return pattern.substr(nodes[i].begin, nodes[i].end - nodes[i].begin); }
};

struct ParseError {
  std::size_t offset = 0;  // byte in the pattern
  std::string message;  // what is wrong there
};

struct ParseResult {
  std::optional<Tree> tree;
  ParseError error;  // when !tree
};

// Never throws except std::bad_alloc; text it cannot read (unterminated
// groups or classes, a quantifier with nothing to repeat, a reversed range,
// bad \x{..}, unknown flags, an unbalanced ')', nesting over kMaxDepth) is a
// ParseError.
ParseResult parse(std::string_view pattern);

// The specificity of a regex (the winner rule): its literal characters
// (UTF-8 code points; an escape such as \n or \x{01} is one) outside
// look-arounds and outside optional parts (?, *, {0,n}); every branch of an
// alternation adds its own. For a template's regex this is the number of
// code points of the template's literal text. 0 for a pattern that does not
// parse.
std::size_t specificity(std::string_view pattern);
std::size_t specificity(const Tree& tree);

}  // namespace errshim::detail::regex
