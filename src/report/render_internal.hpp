// Text helpers of the renderer that the CLI and lint use too; not part of
// the host API (errshim/render.hpp).
#pragma once

#include <string>
#include <string_view>

#include "errshim/catalog.hpp"

namespace errshim {

// https://github.com/{repo}/blob/{commit}/{path}#L{line} (no #L when the
// line is unknown, HEAD when the commit is).
std::string source_url(const SourcePin& pin);

// Catalog prose with the hard line breaks of its YAML block removed: lines
// of a paragraph are joined by a space; paragraphs stay apart ("\n\n"), and
// a line that starts a list item ("- ", "* ", "1. ") or is indented deeper
// than the paragraph keeps its own line.
std::string fold_prose(std::string_view prose);
// The first sentence of `prose` (folded): up to the first '.', '!' or '?'
// followed by a space or the end, outside `code` spans and abbreviations
// (e.g., i.e., etc., vs., cf.); the whole first paragraph when none ends it.
std::string first_sentence(std::string_view prose);

// {"matched": false}: the CLI's and the C API's answer when nothing matched.
std::string unmatched_json();

}  // namespace errshim
