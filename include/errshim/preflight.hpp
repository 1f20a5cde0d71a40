// Known errors ahead: before an expensive model load, which catalog entries
// a config is known to trigger, with their fixes.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "errshim/catalog.hpp"
#include "errshim/config.hpp"
#include "errshim/context.hpp"

namespace errshim {

struct Finding {
  std::shared_ptr<const Entry> entry;
  std::vector<std::pair<KeyPath, Value>> because;  // the config values that meet the entry's condition
};

// Entries whose `preflight` condition the config meets (every key found with
// one of the listed values; `model` matched against context "model"). A key
// the config does not have never meets a condition: errshim reports only what
// it can tell. Entries whose scope the context contradicts are skipped.
std::vector<Finding> check(const ConfigAccess& config, const Catalog& catalog, const Context& context = {});

}  // namespace errshim
