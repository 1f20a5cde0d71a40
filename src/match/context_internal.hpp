// How an entry's `applies_to` scope stands against a context, and the
// version comparison it rests on: used by the matcher, the loader and
// preflight, not by hosts.
#pragma once

#include <string_view>
#include <vector>

#include "errshim/context.hpp"

namespace errshim {

// How an entry's scope relates to a context.
enum class ScopeFit {
  contradicted,  // the context says the entry cannot apply: never chosen
  unknown,  // the entry is scoped but the context does not say: chosen last
  general,  // the entry has no scope
  confirmed,  // the context satisfies every condition of the scope
};

// Where `scope` stands against `context`. An empty scope is `general`.
ScopeFit scope_fit(const std::vector<ScopeCondition>& scope, const Context& context) noexcept;

// Compares dotted versions numerically ("4.9" < "4.10"); a non-numeric tail
// such as ".dev0" ranks the version just below its release. <0, 0, >0.
int compare_versions(std::string_view a, std::string_view b) noexcept;

// Whether `version` satisfies a range such as ">=4.45,<4.54" (comma = and).
// Operators: >= <= > < == !=. Throws std::invalid_argument on a bad range.
bool version_in_range(std::string_view version, std::string_view range);

}  // namespace errshim
