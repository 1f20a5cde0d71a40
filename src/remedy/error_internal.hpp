// The one-line form of a diagnosis that translated_error and
// remediation_error use as their what().
#pragma once

#include <string>

#include "errshim/diagnosis.hpp"

namespace errshim {

// "<id>: <first line of the original message> -- try: <first remediation>"
std::string one_line_summary(const Diagnosis& diagnosis);

}  // namespace errshim
