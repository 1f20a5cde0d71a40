// Every error the seed records describe, as users meet it: plain, behind
// "Error:", inside a Python traceback, behind a server log prefix. Each must
// reach its own entry with the right source pin and captures, on the embedded
// catalog.
#include <gtest/gtest.h>

#include <map>

#include <errshim/errshim.hpp>

namespace errshim {
namespace {

struct Seed {
  std::string name;  // test name part
  std::string id;
  std::string message;
  std::string path;
  int line;
  std::map<std::string, std::string> captures;
};

const std::vector<Seed>& seeds() {
  static const std::vector<Seed> s = {
      // clang-format off
      {"MetavoiceKvCache", "candle.metavoice.kv_cache_enabled", "kv_cache_enabled=true is not supported",
       "candle-transformers/src/models/metavoice.rs", 449, {}},
      {"MetavoiceTorchAttn", "candle.metavoice.only_torch_attn", "only TorchAttn is supported",
       "candle-transformers/src/models/metavoice.rs", 446, {}},
      {"MimiKvRepeat", "candle.mimi.kv_repeat", "only kv-repeat = 1 is supported",
       "candle-transformers/src/models/mimi/transformer.rs", 151, {}},
      {"SdpaHeadDim", "candle.sdpa.unsupported_head_dim",
       "Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], k dims [1, 8, 7, 48], v dims [1, 8, 7, 48].",
       "candle-nn/src/ops.rs", 1098,
       {{"q_head", "48"}, {"q_dims", "[1, 32, 7, 48]"}, {"k_dims", "[1, 8, 7, 48]"}, {"v_dims", "[1, 8, 7, 48]"}}},
      {"SdpaUseCase", "candle.sdpa.unsupported_use_case",
       "Meta SDPA does not support q dims [1, 32, 7, 128], k dims [1, 32, 7, 64], v dims [1, 32, 7, 64].",
       "candle-nn/src/ops.rs", 1106,
       {{"q_dims", "[1, 32, 7, 128]"}, {"k_dims", "[1, 32, 7, 64]"}, {"v_dims", "[1, 32, 7, 64]"}}},
      {"SdpaDtypeMismatch", "candle.sdpa.qkv_dtype_mismatch", "all q, k, v dtypes must match.", "candle-nn/src/ops.rs",
       1116, {}},
      {"SdpaUnsupportedType", "candle.sdpa.unsupported_dtype", "unsupported sdpa type U8", "candle-nn/src/ops.rs", 1124,
       {{"other", "U8"}}},
      {"QuantizedCache", "transformers.generation.quantized_cache_unsupported",
       "This model does not support the quantized cache. If you want your model to support quantized cache, please "
       "open an issue and tag @zucchini-nlp.",
       "src/transformers/generation/utils.py", 2003, {}},
      // clang-format on
  };
  return s;
}

enum class Wrap { plain, rust_error, python_traceback, log_prefix };

std::string wrap(Wrap w, const std::string& m) {
  switch (w) {
    case Wrap::plain: return m;
    case Wrap::rust_error: return "Error: " + m + "\n\nStack backtrace:\n   0: candle_core::error::Error::bt\n";
    case Wrap::python_traceback:
      return "Traceback (most recent call last):\n"
             "  File \"/srv/app/serve.py\", line 88, in handle\n"
             "    out = model.generate(**inputs)\n"
             "ValueError: " +
             m + "\n";
    case Wrap::log_prefix: return "2026-11-30 10:01:42,123 ERROR [worker-3] " + m;
  }
  return m;
}

using Param = std::tuple<std::size_t, Wrap>;

class SeedError : public ::testing::TestWithParam<Param> {};

TEST_P(SeedError, IsExplainedWithItsSourcePinAndCaptures) {
  const auto& [index, w] = GetParam();
  const Seed& s = seeds()[index];
  const auto d = diagnose(wrap(w, s.message));
  ASSERT_TRUE(d) << wrap(w, s.message);
  EXPECT_EQ(d->id(), s.id);
  EXPECT_EQ(d->entry->source.path, s.path);
  EXPECT_EQ(d->entry->source.line, s.line);
  EXPECT_FALSE(d->entry->source.commit.empty());
  EXPECT_FALSE(d->entry->cause.empty());
  EXPECT_FALSE(d->entry->trigger.empty());
  EXPECT_GE(d->entry->remediation.size(), 2u);
  EXPECT_EQ(d->segment, s.message);
  for (const auto& [name, value] : s.captures) {
    ASSERT_NE(d->capture(name), nullptr) << name;
    EXPECT_EQ(*d->capture(name), value) << name;
  }
}

std::string seed_test_name(const ::testing::TestParamInfo<Param>& info) {
  static const char* const wraps[] = {"Plain", "RustError", "PythonTraceback", "LogPrefix"};
  return seeds()[std::get<0>(info.param)].name + wraps[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(Catalog, SeedError,
                         ::testing::Combine(::testing::Range<std::size_t>(0, 8),
                                            ::testing::Values(Wrap::plain, Wrap::rust_error, Wrap::python_traceback,
                                                              Wrap::log_prefix)),
                         seed_test_name);

TEST(SeedErrorFixes, CarryTheConfigChangesTheSeedsCallFor) {
  const auto cat = Catalog::embedded();
  auto first_fix_sets = [&](const std::string& id, const std::string& key) -> const Value* {
    const Entry* e = cat->find(id);
    if (!e) return nullptr;
    for (const Remediation& r : e->remediation)
      if (r.fix)
        for (const auto& [k, v] : r.fix->set)
          if (k == key) return &v;
    return nullptr;
  };
  const Value* kv = first_fix_sets("candle.metavoice.kv_cache_enabled", "kv_cache_enabled");
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(*kv, (Value{Value::Type::boolean, "false"}));
  const Value* cache = first_fix_sets("transformers.generation.quantized_cache_unsupported", "cache_implementation");
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(*cache, (Value{Value::Type::string, "dynamic"}));
  const Value* repeat = first_fix_sets("candle.mimi.kv_repeat", "kv_repeat");
  ASSERT_NE(repeat, nullptr);
  EXPECT_EQ(*repeat, (Value{Value::Type::integer, "1"}));
}

TEST(SeedErrorSiblings, AreNotConfusedWithEachOther) {
  // The head-dim message contains the use-case message's words; the more
  // specific head-dim entry must win it.
  EXPECT_EQ(diagnose("Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], k dims [1, 8, 7, 48], v dims "
                     "[1, 8, 7, 48].")
                ->id(),
            "candle.sdpa.unsupported_head_dim");
  EXPECT_FALSE(diagnose("seanet lstm is not supported"));
  EXPECT_FALSE(
      diagnose("This model does not support `Cache` instances, it only supports the legacy cache format "
               "(tuple of tuples). `cache_implementation` (set to quantized) will be ignored."));
}

}  // namespace
}  // namespace errshim

namespace errshim {
namespace {

// The quantized-cache text is the same across versions while its cause
// changed: the version in the context picks the explanation; without one the
// general entry answers.
TEST(QuantizedCacheScope, VersionInContextPicksTheExplanation) {
  const std::string msg =
      "ValueError: This model does not support the quantized cache. If you want your model to support quantized "
      "cache, please open an issue and tag @zucchini-nlp.";
  const std::string base = "transformers.generation.quantized_cache_unsupported";
  EXPECT_EQ(diagnose(msg)->id(), base);
  EXPECT_EQ(diagnose(msg, *Catalog::embedded(), Context::parse("transformers=4.57.1"))->id(),
            base + ".encoder_decoder");
  EXPECT_EQ(diagnose(msg, *Catalog::embedded(), Context::parse("transformers=4.54.0"))->id(),
            base + ".encoder_decoder");
  EXPECT_EQ(diagnose(msg, *Catalog::embedded(), Context::parse("transformers=4.50"))->id(), base + ".model_flag");
  EXPECT_EQ(diagnose(msg, *Catalog::embedded(), Context::parse("device=cuda"))->id(), base);
  // The older text without the tag is its own error.
  EXPECT_EQ(diagnose("This model does not support the quantized cache. If you want your model to support quantized "
                     "cache, please open an issue.")
                ->id(),
            base + "_untagged");
}

}  // namespace
}  // namespace errshim
