// errshim around a real inference layer: a libtorch attention block with a KV
// cache (attention_block.hpp), run with configs that are wrong in the ways
// real ones are. Each run is wrapped with errshim::guard; the enriched error
// says what libtorch's message means and what to change. Where the first
// remediation is a config change whose safety class the host accepts (here:
// safe and slower), the sample applies it and runs again.
//
// The policy lives in the host: fixes that may change the model's output are
// printed as proposals, never applied silently.
#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include <errshim/errshim.hpp>
#include <errshim/render.hpp>

#include "attention_block.hpp"
#include "local_fix.hpp"

namespace {

using torch_attention::AttentionBlock;
using torch_attention::AttentionConfig;

int failures = 0;
int scenarios = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    fmt::print("UNEXPECTED: {}\n", what);
  }
}

// A prompt of 5 tokens, then two decoding steps.
void generate(const AttentionConfig& config) {
  AttentionBlock block(config);
  block.step(1, 5);
  block.step(1, 1);
  block.step(1, 1);
}

// What this host knows about its errors: they come from an attention layer.
errshim::Context host_context() {
  errshim::Context c;
  c.values["component"] = "attention";
  c.values["libtorch"] = torch_attention::libtorch_version();
  return c;
}

std::string captures_of(const errshim::Diagnosis& d) {
  std::string out;
  for (const errshim::Capture& c : d.captures) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", c.name, c.value);
  return out.empty() ? "-" : out;
}

std::string fix_of(const errshim::Remediation& r) {
  if (!r.fix || r.fix->set.empty()) return "none (advice for a person)";
  std::string out;
  for (const auto& [key, value] : r.fix->set) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", key, value.text);
  return fmt::format("set {} ({})", out, errshim::to_string(r.fix->safety));
}

enum class Expect { fixed, proposed, advice };

// Runs `config` under errshim::guard; on a translated error, re-diagnoses it
// in the host's context, prints the explanation and, when allowed, retries
// with the first fix applied. Returns the id that explained it.
std::string run_scenario(const char* title, const AttentionConfig& config, const std::string& expected_id,
                         Expect expect, bool print_in_full = false) {
  ++scenarios;
  fmt::print("\n== {}\n", title);
  try {
    errshim::guard([&] { generate(config); });
    check(false, fmt::format("{}: ran without an error", title));
    return {};
  } catch (const errshim::translated_error& e) {
    // guard has no context; the host's context may pick a more specific entry.
    const errshim::Diagnosis d =
        errshim::diagnose(e.diagnosis().raw, *errshim::Catalog::embedded(), host_context()).value_or(e.diagnosis());
    if (print_in_full) {
      fmt::print("{}\n", d);
    } else {
      const errshim::Entry& entry = *d.entry;
      fmt::print(
          "{}\n  libtorch said: {}\n  raised at:     {} {}:{}\n  captured:      {}\n  first step:    {}\n"
          "  fix:           {}\n",
          d.id(), d.segment, entry.source.repo, entry.source.path, entry.source.line, captures_of(d),
          entry.remediation.front().text, fix_of(entry.remediation.front()));
    }
    check(d.id() == expected_id, fmt::format("{}: expected {}, got {}", title, expected_id, d.id()));

    // The original c10::Error is inside, untouched.
    try {
      std::rethrow_if_nested(e);
    } catch (const std::exception& original) {
      check(std::string(original.what()).find(d.segment) != std::string::npos, "original message kept");
    }

    const std::optional<AttentionConfig> fixed =
        torch_attention::apply_first_fix_locally(config, d, {errshim::Safety::safe, errshim::Safety::slower});
    if (fixed) {
      try {
        generate(*fixed);
        fmt::print("  remediated:    applied the fix, the same generation now runs\n");
      } catch (const std::exception& again) {
        check(false, fmt::format("{}: still failing after the fix: {}", title, again.what()));
      }
    } else if (d.entry->remediation.front().fix) {
      fmt::print("  remediated:    no, the fix may change the output; proposed to the operator\n");
    } else {
      fmt::print("  remediated:    no, a person has to decide\n");
    }
    check(fixed.has_value() == (expect == Expect::fixed), fmt::format("{}: remediation outcome", title));
    check((d.entry->remediation.front().fix.has_value()) == (expect != Expect::advice),
          fmt::format("{}: fix present", title));
    return d.id();
  }
}

}  // namespace

int main() {
  fmt::print("libtorch {} attention block, explained by errshim\n", torch_attention::libtorch_version());

  AttentionConfig good;
  generate(good);  // the shipped config works: prompt + 2 decoding steps

  {
    AttentionConfig c = good;
    c.dtype = "bfloat16";
    c.cache_dtype = "float32";  // the serving layer's default, not the model's
    run_scenario("static KV cache in float32 for a bfloat16 model", c, "libtorch.index_copy.dtype_mismatch",
                 Expect::fixed, /*print_in_full=*/true);
  }
  {
    AttentionConfig c = good;
    c.dtype = "bfloat16";
    c.cache_dtype = "float32";
    c.cache_implementation = "dynamic";  // torch::cat promotes silently; the matmul fails
    run_scenario("growing KV cache in float32 for a bfloat16 model", c, "libtorch.attention.kv_cache_dtype_mismatch",
                 Expect::fixed);
  }
  {
    AttentionConfig c = good;
    c.max_cache_len = 6;  // 5 prompt tokens + 2 decoding steps need 7
    run_scenario("static KV cache shorter than the generation", c, "libtorch.index_copy.out_of_bounds", Expect::fixed);
  }
  {
    AttentionConfig c = good;
    c.cache_device = "meta";  // left on the meta device by lazy initialisation
    run_scenario("KV cache never materialised", c, "libtorch.index_copy.device_mismatch", Expect::fixed);
  }
  {
    AttentionConfig c = good;
    c.num_kv_heads = 3;  // does not divide 8 query heads
    run_scenario("KV heads that do not divide the query heads", c, "libtorch.attention.kv_heads_not_dividing",
                 Expect::proposed);
  }
  {
    AttentionConfig c = good;
    c.dtype = "float16";
    run_scenario("float16 model on the CPU", c, "libtorch.dtype.half_not_implemented", Expect::proposed);
  }
  {
    AttentionConfig c = good;
    c.embed_dim = 60;  // not a multiple of 8 heads
    run_scenario("embedding size not divisible by the heads", c, "libtorch.shape.view_invalid_size", Expect::advice);
  }
  {
    AttentionConfig c = good;
    c.cache_implementation = "dynamic";
    c.cache_head_dim = 16;  // a prompt cache restored from another model size
    run_scenario("restored cache with another head size", c, "libtorch.cat.size_mismatch", Expect::advice);
  }
  {
    AttentionConfig c = good;
    c.max_position_embeddings = 6;
    c.cache_implementation = "dynamic";
    run_scenario("sequence past the rotary table", c, "libtorch.narrow.out_of_range", Expect::advice);
  }

  // An error the catalog does not know keeps its type and message.
  ++scenarios;
  fmt::print("\n== an error that is not libtorch's\n");
  try {
    AttentionConfig c = good;
    c.num_heads = 0;
    errshim::guard([&] { generate(c); });
    check(false, "num_heads = 0 accepted");
  } catch (const errshim::translated_error& e) {
    check(false, fmt::format("translated unexpectedly as {}", e.id()));
  } catch (const std::invalid_argument& e) {
    fmt::print("passed through unchanged: std::invalid_argument: {}\n", e.what());
  }

  if (failures) {
    fmt::print("\ntorch_attention: {} check(s) failed\n", failures);
    return 1;
  }
  fmt::print("\ntorch_attention: all {} scenarios behaved as expected\n", scenarios);
  return 0;
}
