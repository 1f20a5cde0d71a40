// Preflight checks (errshim::check): a condition reports an error ahead only
// when the configs the user has say so, for the model family and versions it
// is scoped to; it never guesses. Also: the scoped schema's load errors, the
// snapshot carrying it, and every shipped condition against its examples.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <errshim/errshim.hpp>
#include <errshim/lint.hpp>

#include "test_catalogs.hpp"
#include "preflight_internal.hpp"

namespace errshim {
namespace {

using testing::catalog_from;
using testing::entry_yaml;
using testing::file_yaml;

std::vector<std::string> ids(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.entry->id);
  return out;
}

bool reports(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings)
    if (f.entry->id == id) return true;
  return false;
}

// The false alarm of issue 17: `errshim check --config model.yaml --model
// meta-llama/Llama-3.1-8B-Instruct` named the MetaVoice entry because the
// host config had `kv_cache_enabled: true`.
TEST(Preflight, LlamaConfigWithKvCacheFlagRaisesNoMetavoiceAlarm) {
  const ConfigTree host = ConfigTree::parse("model: llama\nkv_cache_enabled: true\nmax_new_tokens: 128\n");
  const auto llama = check(host, *Catalog::embedded(), Context::parse("model=meta-llama/Llama-3.1-8B-Instruct"));
  EXPECT_FALSE(reports(llama, "candle.metavoice.kv_cache_enabled")) << ::testing::PrintToString(ids(llama));
  EXPECT_FALSE(reports(check(host, *Catalog::embedded()), "candle.metavoice.kv_cache_enabled"));
  // The same flag for the model that refuses it is still reported.
  const auto metavoice = check(host, *Catalog::embedded(), Context::parse("model=metavoiceio/metavoice-1B-v0.1"));
  EXPECT_TRUE(reports(metavoice, "candle.metavoice.kv_cache_enabled")) << ::testing::PrintToString(ids(metavoice));
}

// A scoped catalog written for these tests.
CatalogPtr scoped() {
  // clang-format off
  static const CatalogPtr c = catalog_from(file_yaml(
      entry_yaml("t.family", "only alibi", "    preflight:\n"
                                            "      when: {position_embedding_type: absolute}\n"
                                            "      config: model\n"
                                            "      model_type: jina_bert\n"
                                            "      architectures: [JinaBertForMaskedLM]\n"
                                            "      model: 'jina-bert'\n") +
      entry_yaml("t.gen", "greedy", "    preflight:\n"
                                    "      when: {do_sample: false, num_beams: 1, num_return_sequences: {gt: 1}}\n"
                                    "      config: generation\n") +
      entry_yaml("t.both", "quantized", "    preflight:\n"
                                        "      when: {cache_implementation: quantized, is_encoder_decoder: true}\n") +
      entry_yaml("t.version", "versioned", "    preflight:\n"
                                           "      when: {cache_implementation: static}\n"
                                           "      applies_to: {transformers: '>=4.54'}\n") +
      entry_yaml("t.tests", "tests", "    preflight:\n"
                                     "      - when: {hidden_size: {not_multiple_of: num_attention_heads}}\n"
                                     "      - when: {cache_config.nbits: {not: [2, 4]}, cache_config.backend: quanto}\n"
                                     "      - when: {attention_dropout: {gt: 0}, attn_implementation: flash_attention_3}\n")));
  // clang-format on
  return c;
}

TEST(Preflight, FamilyStatedByTheConfigOverrulesTheModelName) {
  const ConfigTree jina = ConfigTree::parse(R"({"model_type": "jina_bert", "position_embedding_type": "absolute"})");
  const ConfigTree bert = ConfigTree::parse(R"({"model_type": "bert", "position_embedding_type": "absolute"})");
  const ConfigTree arch =
      ConfigTree::parse(R"({"architectures": ["JinaBertForMaskedLM"], "position_embedding_type": "absolute"})");
  PreflightConfigs in;
  in.model = &jina;
  EXPECT_EQ(ids(check(in, *scoped())), std::vector<std::string>{"t.family"});
  in.model = &arch;
  EXPECT_EQ(ids(check(in, *scoped())), std::vector<std::string>{"t.family"});
  in.model = &bert;  // BERT's config says absolute positions and is right to: no alarm, whatever the name says
  EXPECT_TRUE(check(in, *scoped(), Context::parse("model=jinaai/jina-bert-v2")).empty());
}

TEST(Preflight, UnstatedFamilyIsDecidedByTheModelNameOrStaysQuiet) {
  const ConfigTree plain = ConfigTree::parse("position_embedding_type: absolute\n");
  PreflightConfigs in;
  in.model = &plain;
  EXPECT_TRUE(check(in, *scoped()).empty());  // nobody says which model: cannot tell
  EXPECT_EQ(ids(check(in, *scoped(), Context::parse("model=jinaai/jina-bert-implementation"))),
            std::vector<std::string>{"t.family"});
  EXPECT_TRUE(check(in, *scoped(), Context::parse("model=google-bert/bert-base-uncased")).empty());
}

TEST(Preflight, ConditionReadsOnlyTheConfigKindItNames) {
  const ConfigTree gen = ConfigTree::parse(R"({"do_sample": false, "num_beams": 1, "num_return_sequences": 3})");
  PreflightConfigs in;
  in.generation = &gen;
  EXPECT_EQ(ids(check(in, *scoped())), std::vector<std::string>{"t.gen"});
  in.generation = nullptr;
  in.model = &gen;  // the same keys in a model config.json are not what generate() validates
  EXPECT_TRUE(check(in, *scoped()).empty());
  in.model = nullptr;
  in.config = &gen;  // a config of no stated kind may hold any key
  EXPECT_EQ(ids(check(in, *scoped())), std::vector<std::string>{"t.gen"});
  const ConfigTree one = ConfigTree::parse(R"({"do_sample": false, "num_beams": 1, "num_return_sequences": 1})");
  in.config = &one;
  EXPECT_TRUE(check(in, *scoped()).empty());
}

TEST(Preflight, ConditionSpanningBothConfigsNeedsBoth) {
  const ConfigTree model = ConfigTree::parse(R"({"model_type": "t5", "is_encoder_decoder": true})");
  const ConfigTree gen = ConfigTree::parse(R"({"cache_implementation": "quantized"})");
  PreflightConfigs in;
  in.generation = &gen;
  EXPECT_TRUE(check(in, *scoped()).empty());
  in.model = &model;
  const auto both = check(in, *scoped());
  ASSERT_EQ(ids(both), std::vector<std::string>{"t.both"});
  ASSERT_EQ(both[0].because.size(), 2u);
  EXPECT_EQ(to_string(both[0].because[0].first), "cache_implementation");
  EXPECT_EQ(to_string(both[0].because[1].first), "is_encoder_decoder");
}

TEST(Preflight, VersionScopedConditionNeedsTheContextToConfirmTheVersion) {
  const ConfigTree gen = ConfigTree::parse("cache_implementation: static\n");
  EXPECT_TRUE(check(gen, *scoped()).empty());
  EXPECT_TRUE(check(gen, *scoped(), Context::parse("transformers=4.53.3")).empty());
  EXPECT_EQ(ids(check(gen, *scoped(), Context::parse("transformers=4.57.1"))), std::vector<std::string>{"t.version"});
}

struct TestCase {
  std::string name;
  std::string config;
  bool fires;
};

class PreflightValueTest : public ::testing::TestWithParam<TestCase> {};

TEST_P(PreflightValueTest, Holds) {
  const ConfigTree c = ConfigTree::parse(GetParam().config);
  EXPECT_EQ(reports(check(c, *scoped()), "t.tests"), GetParam().fires) << GetParam().config;
}

INSTANTIATE_TEST_SUITE_P(
    Tests, PreflightValueTest,
    ::testing::Values(TestCase{"HiddenNotMultipleOfHeads", R"({"hidden_size": 100, "num_attention_heads": 12})", true},
                      TestCase{"HiddenMultipleOfHeads", R"({"hidden_size": 768, "num_attention_heads": 12})", false},
                      TestCase{"OtherKeyAbsent", R"({"hidden_size": 100})", false},
                      TestCase{"NbitsNotListed", R"({"cache_config": {"backend": "quanto", "nbits": 8}})", true},
                      TestCase{"NbitsListed", R"({"cache_config": {"backend": "quanto", "nbits": 4}})", false},
                      TestCase{"NbitsOtherBackend", R"({"cache_config": {"backend": "hqq", "nbits": 8}})", false},
                      TestCase{"DropoutAboveZero",
                               R"({"attention_dropout": 0.1, "attn_implementation": "flash_attention_3"})", true},
                      TestCase{"DropoutZeroAsFloat",
                               R"({"attention_dropout": 0.0, "attn_implementation": "flash_attention_3"})", false},
                      TestCase{"DropoutNotANumber",
                               R"({"attention_dropout": "high", "attn_implementation": "flash_attention_3"})", false}),
    [](const ::testing::TestParamInfo<TestCase>& info) { return info.param.name; });

// Bad preflight blocks: each problem names file:line:column, the entry, the
// offending value and what to write instead.
struct LoadCase {
  std::string name;
  std::string block;
  std::string where;  // "test.yaml:LINE:COL"
  std::string message;  // part of the message
};

class PreflightLoadErrorTest : public ::testing::TestWithParam<LoadCase> {};

TEST_P(PreflightLoadErrorTest, NamesPlaceEntryAndValue) {
  try {
    catalog_from(file_yaml(entry_yaml("t.bad", "x", GetParam().block)));
    FAIL() << "loaded";
  } catch (const catalog_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(GetParam().where + ": entry 't.bad': "), std::string::npos) << what;
    EXPECT_NE(what.find(GetParam().message), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schema, PreflightLoadErrorTest,
    ::testing::Values(
        LoadCase{"UnknownTest", "    preflight: {num_beams: {above: 1}}\n", "test.yaml:16:29",
                 "preflight.num_beams: unknown test 'above' (one of: not, gt, ge, lt, le, not_multiple_of)"},
        LoadCase{"UnknownConfigKind", "    preflight: {when: {a: 1}, config: generation_config}\n", "test.yaml:16:39",
                 "preflight.config 'generation_config' is not a config kind (one of: any, model, generation)"},
        LoadCase{"MisspeltScopedKey", "    preflight: {when: {a: 1}, model_types: [llama]}\n", "test.yaml:16:31",
                 "unknown preflight key 'model_types' (did you mean 'model_type'?)"},
        LoadCase{"ZeroDivisor", "    preflight: {hidden_size: {not_multiple_of: 0}}\n", "test.yaml:16:48",
                 "preflight.hidden_size.not_multiple_of needs a positive integer, got '0'"},
        LoadCase{"NoKeys", "    preflight: {when: {}, model_type: llama}\n", "test.yaml:16:16",
                 "a preflight condition needs at least one config key"},
        LoadCase{"VersionRange", "    preflight: {when: {a: 1}, applies_to: {transformers: '>=v4.54'}}\n",
                 "test.yaml:16:58",
                 "applies_to.transformers: version condition '>=v4.54' needs an operator and a version"},
        LoadCase{"ExampleConfigNotAMap", "      preflight: {fires: [{config: 3}]}\n    preflight: {a: 1}\n",
                 "test.yaml:16:36", "preflight example config must be a mapping"}),
    [](const ::testing::TestParamInfo<LoadCase>& info) { return info.param.name; });

TEST(Preflight, OldFormStillLoadsAndMeansTheSame) {
  const auto c = catalog_from(file_yaml(entry_yaml("t.old", "x",
                                                   "    preflight:\n"
                                                   "      - {kv_cache_enabled: true, model: 'mimi'}\n"
                                                   "      - {dtype: [f16, bf16], layers: 12}\n")));
  const Entry& e = *c->find("t.old");
  ASSERT_EQ(e.preflight.size(), 2u);
  EXPECT_EQ(e.preflight[0].model, "mimi");
  EXPECT_EQ(e.preflight[0].config, PreflightSource::any);
  EXPECT_TRUE(e.preflight[0].tests.empty());
  EXPECT_EQ(e.preflight[1].keys[0].second.size(), 2u);
  EXPECT_EQ(ids(check(ConfigTree::parse("dtype: bf16\nlayers: 12\n"), *c)), std::vector<std::string>{"t.old"});
  EXPECT_TRUE(check(ConfigTree::parse("kv_cache_enabled: true\n"), *c).empty());
  EXPECT_EQ(check(ConfigTree::parse("kv_cache_enabled: true\n"), *c, Context::parse("model=kyutai/mimi")).size(), 1u);
}

TEST(Preflight, SnapshotCarriesScopedConditionsAndExamples) {
  const std::string yaml = file_yaml(entry_yaml("t.snap", "x",
                                                "    preflight:\n"
                                                "      when: {n: {not_multiple_of: heads}, m: {not: [a, b]}, k: 1}\n"
                                                "      config: generation\n"
                                                "      model_type: [llama, mistral]\n"
                                                "      architectures: LlamaForCausalLM\n"
                                                "      model: 'llama'\n"
                                                "      applies_to: {transformers: '>=4.54'}\n"));
  std::string with_examples = yaml;
  with_examples.replace(
      with_examples.find("      match: ['x']\n"), 19,
      "      match: ['x']\n"
      "      preflight:\n"
      "        fires: [{generation_config: {n: 7, heads: 2, m: c, k: 1}, model_config: {model_type: llama},\n"
      "                 context: {transformers: '4.57'}}]\n"
      "        quiet: [{config: {n: 8, heads: 2, m: c, k: 1}}]\n");
  const auto original = catalog_from(with_examples);
  const auto copy = CatalogBuilder().add_snapshot(original->snapshot(), "t.snapshot").build();
  const Entry& a = *original->find("t.snap");
  const Entry& b = *copy->find("t.snap");
  ASSERT_EQ(b.preflight.size(), 1u);
  const PreflightCondition& pa = a.preflight[0];
  const PreflightCondition& pb = b.preflight[0];
  EXPECT_EQ(pb.config, PreflightSource::generation);
  EXPECT_EQ(pb.model_types, pa.model_types);
  EXPECT_EQ(pb.architectures, std::vector<std::string>{"LlamaForCausalLM"});
  EXPECT_EQ(pb.model, "llama");
  ASSERT_EQ(pb.applies_to.size(), 1u);
  EXPECT_EQ(pb.applies_to[0].range, ">=4.54");
  ASSERT_EQ(pb.tests.size(), 2u);
  EXPECT_EQ(pb.tests[0].op, PreflightTest::Op::not_multiple_of);
  EXPECT_EQ(pb.tests[0].values, pa.tests[0].values);
  EXPECT_EQ(pb.tests[1].op, PreflightTest::Op::not_in);
  EXPECT_EQ(pb.tests[1].values.size(), 2u);
  ASSERT_EQ(b.preflight_examples.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(b.preflight_examples[i].fires, a.preflight_examples[i].fires);
    EXPECT_EQ(b.preflight_examples[i].config, a.preflight_examples[i].config);
    EXPECT_EQ(b.preflight_examples[i].model_config, a.preflight_examples[i].model_config);
    EXPECT_EQ(b.preflight_examples[i].generation_config, a.preflight_examples[i].generation_config);
    EXPECT_EQ(b.preflight_examples[i].context.values, a.preflight_examples[i].context.values);
    EXPECT_EQ(b.preflight_examples[i].where.line, a.preflight_examples[i].where.line);
  }
  EXPECT_TRUE(lint(*copy).empty()) << lint(*copy).front().to_string();
}

// Every shipped entry with a preflight condition: its examples fire and stay
// quiet as they say, each running the entry alone.
std::vector<std::string> entries_with_preflight() {
  std::vector<std::string> out;
  for (const auto& e : Catalog::embedded()->entries())
    if (!e->preflight.empty()) out.push_back(e->id);
  return out;
}

TEST(ShippedPreflight, CoversAtLeastFortyEntries) { EXPECT_GE(entries_with_preflight().size(), 40u); }

class ShippedPreflightTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedPreflightTest, ExamplesFireAndStayQuietAsStated) {
  const Entry& e = *Catalog::embedded()->find(GetParam());
  bool fires = false, quiet = false;
  for (const PreflightExample& ex : e.preflight_examples) {
    std::optional<ConfigTree> config, model, generation;
    if (!ex.config.empty()) config = ConfigTree::parse(ex.config);
    if (!ex.model_config.empty()) model = ConfigTree::parse(ex.model_config);
    if (!ex.generation_config.empty()) generation = ConfigTree::parse(ex.generation_config);
    PreflightConfigs in;
    in.config = config ? &*config : nullptr;
    in.model = model ? &*model : nullptr;
    in.generation = generation ? &*generation : nullptr;
    EXPECT_EQ(preflight_fires(e, in, ex.context), ex.fires)
        << ex.where.file << ":" << ex.where.line << " " << (ex.fires ? "fires" : "quiet");
    (ex.fires ? fires : quiet) = true;
  }
  EXPECT_TRUE(fires) << "no 'fires' example";
  EXPECT_TRUE(quiet) << "no 'quiet' example";
}

INSTANTIATE_TEST_SUITE_P(Catalog, ShippedPreflightTest, ::testing::ValuesIn(entries_with_preflight()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char ch : info.param) name += (std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
                           return name;
                         });

}  // namespace
}  // namespace errshim
