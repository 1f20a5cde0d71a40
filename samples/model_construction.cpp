// Auto-remediation around model construction. A metavoice-style config ships
// with kv_cache_enabled: true; candle refuses it. errshim recognises the real
// message, turns the cache off on a copy of the config (a "slower" fix: same
// output, no cache), and the second attempt succeeds. Shown twice: on a YAML
// config tree and on a typed C++ struct. The inference layer is the stand-in
// from inference_standin.hpp, which throws the recorded real message.
#include <memory>

#include <fmt/format.h>

#include <errshim/errshim.hpp>

#include "inference_standin.hpp"

namespace {
int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    ++failures;
    fmt::print("UNEXPECTED: {}\n", what);
  }
}

void print_audit(const errshim::RemediationReport& report) {
  for (const auto& d : report.decisions) fmt::print("  audit: {}\n", d.to_json());
}
}  // namespace

int main() {
  errshim::Policy policy;  // defaults: auto, safe and slower fixes, 3 retries

  // 1. A config file, as a checkpoint ships it.
  const errshim::ConfigTree file_config = errshim::ConfigTree::parse(
      "# metavoice first stage\n"
      "n_head: 16\n"
      "n_embd: 2048\n"
      "attn_kernel_type: TorchAttn\n"
      "kv_cache_enabled: true\n",
      "metavoice.yaml");
  auto tree = errshim::remediate(
      file_config,
      [](const errshim::ConfigTree& c) {
        standin::MetavoiceConfig cfg;
        cfg.kv_cache_enabled = c.get({"kv_cache_enabled"})->text == "true";
        cfg.attn_kernel_type = c.get({"attn_kernel_type"})->text;
        return standin::candle_metavoice_new(cfg);
      },
      policy);
  fmt::print("1. built '{}' after {} call(s); the config that worked:\n{}", tree.value.name, tree.report.calls,
             tree.config.dump());
  print_audit(tree.report);
  check(tree.report.calls == 2, "two calls");
  check(tree.config.get({"kv_cache_enabled"})->text == "false", "cache turned off");
  check(file_config.get({"kv_cache_enabled"})->text == "true", "caller's config untouched");

  // 2. The same with the host's own struct, its members bound once by name.
  auto bindings = std::make_shared<errshim::Bindings<standin::MetavoiceConfig>>();
  bindings->bind("kv_cache_enabled", &standin::MetavoiceConfig::kv_cache_enabled)
      .bind("attn_kernel_type", &standin::MetavoiceConfig::attn_kernel_type);
  const errshim::TypedConfig<standin::MetavoiceConfig> typed(standin::MetavoiceConfig{}, bindings);
  auto built = errshim::remediate(
      typed,
      [](const errshim::TypedConfig<standin::MetavoiceConfig>& c) { return standin::candle_metavoice_new(c.value()); },
      policy);
  fmt::print("2. typed config: built '{}', kv_cache_enabled={}\n", built.value.name,
             built.config.value().kv_cache_enabled);
  print_audit(built.report);
  check(!built.config.value().kv_cache_enabled, "struct member changed on the copy");
  check(typed.value().kv_cache_enabled, "caller's struct untouched");

  if (failures) return 1;
  fmt::print("model_construction: all 2 scenarios behaved as expected\n");
  return 0;
}
