// A production request loop: errshim applies safe fixes automatically,
// only suggests the rest, never touches a key the operator pinned, counts
// every decision for the metrics endpoint, and writes an audit line per
// decision. One request needs a fix that would change model output; the
// policy refuses to apply it, and the caller gets the enriched error with the
// whole history. The inference layer is the stand-in from
// inference_standin.hpp, which throws the recorded real messages.
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <errshim/errshim.hpp>
#include <errshim/metrics.hpp>

#include "inference_standin.hpp"

namespace {
struct Request {
  std::string model;
  std::string config_yaml;
};

// What the server runs per request: a candle model (metavoice or mimi) or a
// transformers generate call, configured by the request's YAML.
std::string serve(const Request& r, const errshim::ConfigTree& c) {
  if (r.model == "metavoice") {
    standin::MetavoiceConfig cfg;
    cfg.kv_cache_enabled = c.get({"kv_cache_enabled"})->text == "true";
    return standin::candle_metavoice_new(cfg).name;
  }
  if (r.model == "mimi") {
    if (c.get({"kv_repeat"})->text != "1") throw standin::ffi_error("Error: only kv-repeat = 1 is supported");
    return "mimi";
  }
  return standin::transformers_generate(r.model, c.get({"generation_config", "cache_implementation"})->text);
}
}  // namespace

int main() {
  errshim::Metrics metrics;
  errshim::Policy policy;
  policy.allowed = {errshim::Safety::safe};  // auto for safe fixes
  policy.suggest_classes = {errshim::Safety::slower, errshim::Safety::changes_output};  // suggest the rest
  policy.pinned_keys = {"dtype"};  // the operator chose it; never degraded
  policy.metrics = &metrics;
  std::vector<std::string> audit;
  policy.on_decision = [&](const errshim::Decision& d) { audit.push_back(d.to_json()); };

  const std::vector<Request> requests = {
      {"whisper-tiny", "dtype: bfloat16\ngeneration_config:\n  cache_implementation: quantized\n"},
      {"llama-3-8b", "dtype: bfloat16\ngeneration_config:\n  cache_implementation: quantized\n"},
      {"mimi", "dtype: float32\nkv_repeat: 2\n"},
      {"metavoice", "kv_cache_enabled: false\n"},
  };
  int ok = 0, refused = 0;
  for (const Request& r : requests) {
    try {
      auto out = errshim::remediate(
          errshim::ConfigTree::parse(r.config_yaml), [&](const errshim::ConfigTree& c) { return serve(r, c); }, policy);
      ++ok;
      fmt::print("200 {:<13} '{}' after {} call(s)\n", r.model, out.value, out.report.calls);
    } catch (const errshim::remediation_error& e) {
      ++refused;
      fmt::print("500 {:<13} {}\n", r.model, e.what());
      fmt::print("    history:\n");
      for (const auto& d : e.report().decisions)
        fmt::print("      {} step {}: {}{}\n", errshim::to_string(d.outcome),
                   d.step ? std::to_string(*d.step + 1) : "-", d.reason,
                   d.changes.empty() ? "" : fmt::format(" (would set {})", errshim::to_string(d.changes[0].path)));
      try {
        std::rethrow_if_nested(e);
      } catch (const std::exception& original) {
        fmt::print("    original: {}\n", original.what());
      }
    }
  }
  fmt::print("--- audit ({} records)\n", audit.size());
  for (const auto& line : audit) fmt::print("{}\n", line);
  fmt::print("--- metrics\n{}", metrics.prometheus());
  const bool expected =
      ok == 3 && refused == 1 &&
      metrics.value("transformers.generation.quantized_cache_unsupported", errshim::Decision::Outcome::applied) == 1 &&
      metrics.value("candle.mimi.kv_repeat", errshim::Decision::Outcome::suggested) == 1;
  if (!expected) {
    fmt::print("inference_server: UNEXPECTED ok={} refused={}\n", ok, refused);
    return 1;
  }
  fmt::print("inference_server: 3 requests served, 1 refused with its history\n");
  return 0;
}
