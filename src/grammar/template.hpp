// Source message templates -> Boost.Regex pattern text with named captures.
// Knows nothing of YAML; the catalog loader turns template_error into a
// positioned catalog problem.
#pragma once

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace errshim::detail {

// A template that cannot be compiled; `offset` is the byte in the template.
struct template_error : std::runtime_error {
  template_error(std::size_t offset, const std::string& message) : std::runtime_error(message), offset(offset) {}
  std::size_t offset;
};

struct CompiledTemplate {
  std::string regex;  // Boost.Regex (perl syntax), unanchored
  std::vector<std::string> capture_names;  // distinct names, in order of first appearance
  std::size_t literal_length = 0;  // literal characters: the specificity measure
  std::vector<std::string> literals;  // the literal runs between placeholders, in order
};

// Placeholder forms recognised (a template mixes them freely):
//   Rust:   {} {:?} {name} {name:?} {0} {:>8} ...  and {{ }} escapes
//   Python: {expr} {expr!r} {expr:.2f} (f-string / str.format),
//           %s %r %d %i %f %x %(name)s ..., %% escape
// Named placeholders capture under their name; for an expression the name is
// its last identifier with surrounding underscores removed
// ({generation_config.cache_implementation} -> cache_implementation,
// {self.__class__.__name__} -> name). Anonymous placeholders ({} {:?} %s)
// take their names, in order, from `anonymous_names`; their count must equal
// the number of anonymous placeholders (or be zero, when they are named arg1,
// arg2, ...). A name seen twice matches the same text again (backreference).
// `capture_patterns` overrides the regex a named capture uses (e.g. "\\d+").
//
// Generated regex: literal text escaped; a placeholder is a run of
// non-newline characters that cannot hold the literal after it (a tempered,
// possessive run: it ends where that literal first starts, so matching never
// backtracks across literals); a lazy run when another placeholder follows;
// at the end of the template a greedy run to the end of the line (trailing
// spaces trimmed by the matcher).
// Throws template_error on an unbalanced '{' or '}', an empty or invalid
// placeholder, a name count mismatch, or a template with no literal text.
CompiledTemplate compile_template(std::string_view tmpl, const std::vector<std::string>& anonymous_names = {},
                                  const std::map<std::string, std::string>& capture_patterns = {});

// Escapes `text` so Boost.Regex (perl syntax) matches it literally.
std::string regex_escape(std::string_view text);

}  // namespace errshim::detail
