// What text every match of a regex must contain, and which piece of it to
// look for first across a whole catalog.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace errshim::detail {

inline constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);

// A stretch of text that every match of a regex contains.
struct RequiredRun {
  std::string text;
  std::size_t max_offset = kUnbounded;  // most bytes a match can have before the run
  bool single_line_prefix = false;  // the part of a match before the run never holds '\n'
};

struct RegexLiterals {
  // False when the regex uses syntax outside the analysed subset (flags,
  // conditionals, unknown escapes...): then nothing is claimed about it.
  bool understood = false;
  std::vector<RequiredRun> runs;  // in pattern order
  // No match can contain '\n', and nothing in the regex looks past the end
  // of the line it matches on (no \z, \Z, \' or look-ahead): so searching
  // one line alone, as its own buffer, finds what searching the whole text
  // finds on that line.
  bool line_local = false;
};

// Analyses a Boost.Regex perl-syntax pattern as the matcher searches it
// (match_not_dot_newline, no flags). Conservative: a run is reported only
// when every match contains it; a top-level alternation yields no runs.
RegexLiterals required_literals(std::string_view regex);

// The literal chosen for one entry: the scan looks for `text`; a match can
// start at most `max_offset` bytes before it (kUnbounded: anywhere), and on
// its line when `single_line_prefix`. Empty text: none usable, the entry is
// checked on every message.
struct EntryKey {
  std::string text;
  std::size_t max_offset = kUnbounded;
  bool single_line_prefix = false;
  bool line_local = false;  // RegexLiterals::line_local
  // The next most selective required run, if any: entries that share a key
  // (catalogs hold near-duplicate templates) are told apart by a substring
  // search before their regexes run.
  std::string also;
};

struct KeyChoice {
  std::vector<EntryKey> keys;  // one per pattern, same order
  // 4- and 8-byte window -> how often it occurs in the catalog's literal
  // text (hashed counts), for the index to anchor each key on its rarest
  // part. See LiteralIndex::GramWeight.
  std::vector<std::uint16_t> counts4, counts8;
  std::uint32_t gram_weight(const char* p, std::size_t width) const noexcept;
};

// Picks each entry's key across the whole catalog: its required run least
// likely to occur in text, estimated from catalog-wide word frequencies (a
// run is as rare as the product of its words' document frequencies), longer
// runs breaking ties. A whole run rather than the rare word inside it: it
// occurs no more often than any part of it, and starts the regex search
// earliest.
KeyChoice choose_keys(const std::vector<RegexLiterals>& patterns);

}  // namespace errshim::detail
