// Capture references in fix values, resolved when a fix is applied.
#pragma once

#include "errshim/config.hpp"
#include "errshim/diagnosis.hpp"
#include "errshim/value.hpp"

namespace errshim {

// Substitutes {capture} references in a fix value ("{q_head}",
// "{dtype:lower}", "{q_dims:dim1}", "{n:int}"). The result is text, except a
// value that is one `int`/`dimN` conversion (an integer); the key a fix
// writes decides the type of the rest. Throws config_error on an unknown
// capture or conversion.
Value resolve_value(const Value& value, const Diagnosis& diagnosis);

}  // namespace errshim
