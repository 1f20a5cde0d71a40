// The YAML scalar rule, written once: how a plain scalar resolves to a
// Value (YAML 1.2's core schema), used by the catalog loader and by
// ConfigTree so that a catalog value and a config value compare alike, and
// which plain spellings some reader would retype.
#pragma once

#include <string_view>

#include "errshim/catalog.hpp"

namespace errshim::detail {

bool core_null(std::string_view s);  // "", "~", null, Null, NULL
bool core_true(std::string_view s);  // true, True, TRUE
bool core_false(std::string_view s);  // false, False, FALSE
bool core_int(std::string_view s);  // [-+]?[0-9]+
bool core_float(std::string_view s);  // [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?

// A plain (unquoted) scalar's Value by the core schema; a quoted scalar is
// a string whatever it spells, and is not resolved here.
Value resolve_plain(std::string_view s);

// Whether some YAML reader (1.1 like PyYAML, or 1.2 like serde_yaml) would
// take this plain scalar for something other than a string. Errs towards
// yes: quoting a string needlessly never changes what it means.
bool plain_would_retype(std::string_view s);

}  // namespace errshim::detail
