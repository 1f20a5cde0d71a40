// The three ways auto-remediation did not respect the user's config (issue
// 17), each pinned on the shipped catalog and the public API that `errshim
// fix` uses (ConfigTree::load, choose_fix, dump).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <errshim/errshim.hpp>

namespace errshim {
namespace {

namespace fs = std::filesystem;

const char* const kIndexCopy =
    "index_copy_(): self and source expected to have the same dtype, but got (self) Float and (source) Half";
const char* const kFlashAttention2Missing =
    "FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package flash_attn "
    "seems to be not installed. Please refer to the documentation of "
    "https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash Attention 2.";

FixChoice fix(const char* message, ConfigTree& config) {
  const auto d = Catalog::embedded()->diagnose(message);
  EXPECT_TRUE(d) << message;
  return d ? choose_fix(*d, config, Policy{}) : FixChoice{};
}

// libtorch says `Half`; a config that spells dtypes "float16"/"float32" gets
// "float16", never `Half`, which its parser would refuse.
TEST(FixRespectsConfig, CapturedLibtorchDtypeIsWrittenInTheConfigsSpelling) {
  ConfigTree config = ConfigTree::parse("dtype: float16\ncache_dtype: float32\n");
  const FixChoice choice = fix(kIndexCopy, config);
  ASSERT_TRUE(choice.step) << (choice.decisions.empty() ? "" : choice.decisions.back().reason);
  EXPECT_EQ(config.get({"cache_dtype"}), (Value{Value::Type::string, "float16"}));
  EXPECT_EQ(config.dump(), "dtype: float16\ncache_dtype: float16\n");
}

// Found in the config, the libtorch spelling is kept: the hint is the key's own value.
TEST(FixRespectsConfig, ALibtorchSpelledConfigKeepsLibtorchSpelling) {
  ConfigTree config = ConfigTree::parse("cache_dtype: Float\n");
  ASSERT_TRUE(fix(kIndexCopy, config).step);
  EXPECT_EQ(config.get({"cache_dtype"}), (Value{Value::Type::string, "Half"}));
}

// `errshim fix --config generation_config.json` for a FlashAttention-2 error:
// transformers never reads attn_implementation from that file, so no step
// may add it there, and the file stays as it was.
TEST(FixRespectsConfig, GenerationConfigNeverGetsAnAttnImplementation) {
  const fs::path dir = fs::temp_directory_path() / ("errshim-fix-respects-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "generation_config.json";
  const std::string text =
      "{\n  \"bos_token_id\": 128000,\n  \"eos_token_id\": [128001, 128009],\n  \"do_sample\": true\n}\n";
  std::ofstream(file, std::ios::binary) << text;
  const ConfigTree config = ConfigTree::load(file);
  ConfigTree scratch = config;
  const FixChoice choice = fix(kFlashAttention2Missing, scratch);
  EXPECT_FALSE(choice.step) << "step " << (choice.step ? *choice.step + 1 : 0) << " applied: " << scratch.dump();
  EXPECT_FALSE(scratch.get({"attn_implementation"}));
  EXPECT_EQ(scratch.dump(), text);
  fs::remove_all(dir);
}

// The same error on the model's config.json may set it.
TEST(FixRespectsConfig, ModelConfigMayGetAnAttnImplementation) {
  ConfigTree config = ConfigTree::parse("{\"model_type\": \"llama\", \"attn_implementation\": \"flash_attention_2\"}");
  ASSERT_TRUE(fix(kFlashAttention2Missing, config).step);
  EXPECT_EQ(config.dump(), "{\"model_type\": \"llama\", \"attn_implementation\": \"sdpa\"}");
}

// Writing back keeps comments and a flow list as written.
TEST(FixRespectsConfig, WriteBackKeepsCommentsAndFlowLists) {
  const std::string yaml =
      "# generation settings, reviewed in PR 42\n"
      "eos_token_id: [128001, 128009]  # two stop tokens\n"
      "cache_implementation: quantized # saves memory\n";
  ConfigTree y = ConfigTree::parse(yaml);
  y.set({"cache_implementation"}, Value{Value::Type::string, "dynamic"});
  std::string expected = yaml;
  expected.replace(expected.find("quantized"), 9, "dynamic");
  EXPECT_EQ(y.dump(), expected);

  const std::string json = "{\n  \"eos_token_id\": [128001, 128009],\n  \"cache_implementation\": \"quantized\"\n}\n";
  ConfigTree j = ConfigTree::parse(json);
  j.set({"cache_implementation"}, Value{Value::Type::string, "dynamic"});
  expected = json;
  expected.replace(expected.find("quantized"), 9, "dynamic");
  EXPECT_EQ(j.dump(), expected);
}

}  // namespace
}  // namespace errshim
