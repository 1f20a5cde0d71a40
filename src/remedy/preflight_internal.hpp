// One entry's preflight conditions against the configs: what check() and
// lint (its preflight examples) share.
#pragma once

#include <utility>
#include <vector>

#include "errshim/catalog.hpp"
#include "errshim/config.hpp"
#include "errshim/context.hpp"
#include "errshim/preflight.hpp"

namespace errshim {

// Whether one entry's preflight conditions are met; the values that meet the
// first such condition are appended to `because` when given.
bool preflight_fires(const Entry& entry, const PreflightConfigs& configs, const Context& context,
                     std::vector<std::pair<KeyPath, Value>>* because = nullptr);

}  // namespace errshim
