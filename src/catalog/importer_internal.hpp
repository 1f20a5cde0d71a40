// The importer's regex conversion, on its own for tests.
#pragma once

#include <string>
#include <string_view>

#include "errshim/importer.hpp"

namespace errshim {

// The record's regex in Boost's dialect: `(?P<n>` -> `(?<n>`, `\/` -> `/`,
// `\uXXXX` -> `\x{XXXX}`. Throws import_error for constructs Boost lacks.
std::string convert_regex(std::string_view pattern);

}  // namespace errshim
