// Spotting regex shapes that make a backtracking engine (Boost.Regex) take
// time exponential (or of a high power) in the length of the text.
//
// The matcher's step budget (MatchOptions::max_steps) stops such a match
// after a bounded amount of work, but then that entry cannot match the
// message at all. `errshim lint`, a reload and a user catalog loaded from a
// path use this detector to refuse the shapes before they are used.
//
// Three shapes are recognised, all of them "the same text can be split
// between parts of the regex in many ways":
//   * nested quantifiers: a repeated group whose repetitions can trade
//     characters at their boundary: (a+)+, (.*)*x, (\w+\s?)+$, ((ab)+)+;
//     (\w+\s)+ and [^\s.]+(?:\.[^\s.]+)* are fine (a separator that the
//     runs cannot match sits between repetitions);
//   * a repeated alternation whose branches can match the same text:
//     (\w|\d)+, (a|a?)+;
//   * adjacent unbounded runs that can match the same characters with only
//     optional text between them: \d+\d+, .*.*, \w+\s*\w+.
// Possessive quantifiers (a++) and atomic groups ((?>...)) never backtrack
// into what they matched, so they end a shape. The analysis is approximate
// (it works on the sets of bytes each part can match) and errs towards
// flagging; it runs in time linear in the pattern's length.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/catalog.hpp"

namespace errshim::detail {

struct BacktrackingRisk {
  enum class Kind {
    nested_quantifiers,  // exponential
    overlapping_alternation,  // exponential
    adjacent_quantifiers,  // polynomial (quadratic or worse per start position)
  };
  Kind kind;
  std::string why;  // one line naming the fragments at fault
  std::size_t offset = 0;  // byte in the pattern where the shape starts
};

// The first risky shape in `pattern` (Boost perl syntax, as the matcher
// compiles it), or nullopt when none is found. A pattern regex::parse
// refuses (regex_syntax.hpp: it does not compile, or nests over 200 groups
// deep) yields nullopt: compiling it reports the real problem. Never
// throws except std::bad_alloc.
std::optional<BacktrackingRisk> backtracking_risk(std::string_view pattern);

// The risky shapes of one entry, as positioned problems: its `pattern` (for
// a template, only the exponential shapes: two placeholders side by side,
// "{a}{b}", are the upstream message's own shape, and the step budget bounds
// them) and each `unless` regex. Lint reports these; CatalogBuilder refuses
// them in catalogs loaded from a path (user catalogs), as a reload does.
void append_backtracking_problems(const Entry& e, std::vector<Problem>& problems);

// Near misses of an entry, about `size` bytes each, on one line: its
// required literals in order with one left out and the others repeated
// (each literal in turn), then, when it has middle literals, the first
// literal once, the middle ones repeated and the last left out. One
// character stands for each placeholder. Empty with fewer than two
// literals. Lint measures the work of matching these (super-linear growth).
std::vector<std::string> near_misses(const Entry& e, std::size_t size);

}  // namespace errshim::detail
