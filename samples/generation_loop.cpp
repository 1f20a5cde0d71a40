// Auto-remediation inside a generation loop. A serving stack asks every model
// for the quantized KV cache; on an encoder-decoder model transformers raises
// its real ValueError. errshim switches that request to the dynamic cache (a
// "safe" fix: outputs unchanged) and the loop goes on. The inference layer is
// the stand-in from inference_standin.hpp, which throws the recorded message.
#include <fmt/format.h>

#include <errshim/errshim.hpp>
#include <errshim/metrics.hpp>

#include "inference_standin.hpp"

int main() {
  const errshim::ConfigTree generation_config = errshim::ConfigTree::parse(
      R"({"max_new_tokens": 64, "cache_implementation": "quantized", "cache_config": {"nbits": 4}})",
      "generation_config.json");
  errshim::Metrics metrics;
  errshim::Policy policy;
  policy.metrics = &metrics;

  int failures = 0;
  int generated = 0;
  for (const char* model : {"llama-3-8b", "whisper-tiny", "whisper-tiny", "llama-3-8b"}) {
    // One remediate() per generate call: the fix applies to this request's
    // copy of the generation config, never to the shared default.
    auto step = errshim::remediate(
        generation_config,
        [&](const errshim::ConfigTree& c) {
          return standin::transformers_generate(model, c.get({"cache_implementation"})->text);
        },
        policy);
    ++generated;
    const auto cache = step.config.get({"cache_implementation"})->text;
    fmt::print("{:<13} -> '{}' with cache_implementation={} ({} call(s))\n", model, step.value, cache,
               step.report.calls);
    if (std::string(model) == "whisper-tiny" && cache != "dynamic") ++failures;
    if (std::string(model) != "whisper-tiny" && cache != "quantized") ++failures;
  }
  fmt::print("{}", metrics.prometheus());
  if (failures || generated != 4 || generation_config.get({"cache_implementation"})->text != "quantized") {
    fmt::print("generation_loop: UNEXPECTED result\n");
    return 1;
  }
  fmt::print("generation_loop: all 4 requests generated\n");
  return 0;
}
