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

// The configs the user has. Any of them may be missing. `config` is one of no
// stated kind (the host's own, or a document holding both): every condition
// reads it. `model` is the model's config.json, `generation` its
// generation_config.json: a condition scoped to one kind reads only that
// one (and `config`), and the model family is read from `model` (or
// `config`).
struct PreflightConfigs {
  const ConfigAccess* config = nullptr;
  const ConfigAccess* model = nullptr;
  const ConfigAccess* generation = nullptr;
};

// Entries whose `preflight` condition the configs meet: every key found
// with one of the listed values and every test holding, in the config kind
// the condition names; the model family, when the condition names one, as
// the model config states it (`model_type`, `architectures`), else the
// context's "model" matched by the condition's `model` regex; the
// condition's own `applies_to` confirmed by the context. What errshim cannot
// tell (a key the configs do not have, a family or version nobody states)
// never meets a condition: a finding is a fact, never a guess. Entries whose
// scope the context contradicts are skipped.
std::vector<Finding> check(const PreflightConfigs& configs, const Catalog& catalog, const Context& context = {});

// One config of no stated kind: check(PreflightConfigs{&config}, ...).
std::vector<Finding> check(const ConfigAccess& config, const Catalog& catalog, const Context& context = {});

}  // namespace errshim
