// Pins ConfigTree (YAML and JSON documents) and TypedConfig (bound struct
// members): what a fix can find, read, set and remove, that untouched parts
// are written back as they were, and that a copy never shares state with the
// original, so a fix tried on a copy cannot change the caller's config.

#include "errshim/config.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace errshim {
namespace {

using T = Value::Type;

Value str(std::string s) { return {T::string, std::move(s)}; }
Value integer(std::string s) { return {T::integer, std::move(s)}; }
Value number(std::string s) { return {T::number, std::move(s)}; }
Value boolean(bool b) { return {T::boolean, b ? "true" : "false"}; }
const Value kNull{T::null, ""};

// The message of the config_error `f` throws; fails the test if none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no config_error";
  return {};
}

// A transformers generation_config.json as save_pretrained writes it
// (json.dumps(indent=2, sort_keys=True) + "\n"), with a quantized KV cache.
const std::string kGenerationConfig = R"({
  "bos_token_id": 128000,
  "cache_config": {
    "backend": "quanto",
    "nbits": 4,
    "residual_length": 128
  },
  "cache_implementation": "quantized",
  "do_sample": true,
  "eos_token_id": [
    128001,
    128008,
    128009
  ],
  "max_new_tokens": 64,
  "pad_token_id": null,
  "temperature": 0.6,
  "top_p": 0.9,
  "transformers_version": "4.45.0"
}
)";

// A candle metavoice first-stage config, in the layout ConfigTree writes
// (block style, two-space indent), so an untouched round trip is exact.
const std::string kMetaVoice = R"(model:
  block_size: 2048
  vocab_size: 2562
  n_layer: 24
  n_head: 16
  n_embd: 2048
  bias: false
  dropout: 0.0
  attn_kernel_type: TorchAttn
  kv_cache_enabled: true
  norm_type: rmsnorm
  rmsnorm_eps: 1.0e-05
  swiglu_multiple_of: 256
  speaker_emb_dim: 256
generation:
  max_new_tokens: 864
  temperature: 1.0
  top_p: 0.95
  guidance_scale: 3.0
  speaker: "bria"
  seed: 1337
max_new_tokens: 2048
)";

ConfigTree metavoice() { return ConfigTree::parse(kMetaVoice, "metavoice.yaml"); }
ConfigTree generation_config() { return ConfigTree::parse(kGenerationConfig, "generation_config.json"); }

// ---- parsing and reading ---------------------------------------------------------

TEST(ConfigTree, ChoosesFormatByFirstCharacter) {
  EXPECT_EQ(ConfigTree::parse(" \n\t{\"a\": 1}").format(), ConfigTree::Format::json);
  EXPECT_EQ(ConfigTree::parse("a: 1\n").format(), ConfigTree::Format::yaml);
  EXPECT_EQ(ConfigTree::parse("# {\"a\": 1}\na: {b: 1}\n").format(), ConfigTree::Format::yaml);
  EXPECT_EQ(ConfigTree::parse("\xEF\xBB\xBF{\"a\": 1}").format(), ConfigTree::Format::json);
}

TEST(ConfigTree, ReadsYamlValuesWithTheirTypes) {
  const ConfigTree t = metavoice();
  EXPECT_EQ(t.name(), "metavoice.yaml");
  EXPECT_EQ(t.get({"model", "kv_cache_enabled"}), boolean(true));
  EXPECT_EQ(t.get({"model", "bias"}), boolean(false));
  EXPECT_EQ(t.get({"model", "n_head"}), integer("16"));
  EXPECT_EQ(t.get({"model", "dropout"}), number("0.0"));  // the spelling is kept, not reformatted
  EXPECT_EQ(t.get({"model", "rmsnorm_eps"}), number("1.0e-05"));
  EXPECT_EQ(t.get({"model", "attn_kernel_type"}), str("TorchAttn"));
  EXPECT_EQ(t.get({"generation", "speaker"}), str("bria"));
  EXPECT_EQ(t.get({"model"}), (Value{T::null, "<mapping>"}));
  EXPECT_EQ(t.get({"model", "n_kv_head"}), std::nullopt);
  EXPECT_EQ(t.get({"model", "n_head", "deeper"}), std::nullopt);
}

TEST(ConfigTree, ReadsJsonValuesWithTheirTypes) {
  const ConfigTree t = generation_config();
  EXPECT_EQ(t.get({"cache_implementation"}), str("quantized"));
  EXPECT_EQ(t.get({"do_sample"}), boolean(true));
  EXPECT_EQ(t.get({"max_new_tokens"}), integer("64"));
  EXPECT_EQ(t.get({"temperature"}), number("0.6"));
  EXPECT_EQ(t.get({"pad_token_id"}), kNull);
  EXPECT_EQ(t.get({"transformers_version"}), str("4.45.0"));
  EXPECT_EQ(t.get({"cache_config", "nbits"}), integer("4"));
  EXPECT_EQ(t.get({"eos_token_id"}), (Value{T::null, "<list>"}));
  EXPECT_EQ(t.get({"eos_token_id", "1"}), integer("128008"));
  EXPECT_EQ(t.get({"eos_token_id", "3"}), std::nullopt);
  EXPECT_EQ(t.get({"eos_token_id", "01"}), std::nullopt);  // one spelling per index
}

TEST(ConfigTree, QuotedScalarsAreStrings) {
  const ConfigTree y = ConfigTree::parse("a: \"true\"\nb: '1'\nc: !!str 12\nd: yes\ne:\nf: ~\n");
  EXPECT_EQ(y.get({"a"}), str("true"));
  EXPECT_EQ(y.get({"b"}), str("1"));
  EXPECT_EQ(y.get({"c"}), str("12"));
  EXPECT_EQ(y.get({"d"}), str("yes"));  // YAML 1.2 core, as the catalog reads values
  EXPECT_EQ(y.get({"e"}), kNull);
  EXPECT_EQ(y.get({"f"}), kNull);
  const ConfigTree j = ConfigTree::parse(R"({"a": "true", "b": "1", "c": 1, "d": false})");
  EXPECT_EQ(j.get({"a"}), str("true"));
  EXPECT_EQ(j.get({"b"}), str("1"));
  EXPECT_EQ(j.get({"c"}), integer("1"));
  EXPECT_EQ(j.get({"d"}), boolean(false));
}

// ---- round trips ------------------------------------------------------------------

TEST(ConfigTree, YamlRoundTripIsExactInItsOwnLayout) { EXPECT_EQ(metavoice().dump(), kMetaVoice); }

TEST(ConfigTree, YamlRoundTripKeepsCommentsQuotingAndFlowStyle) {
  const std::string in =
      "# metavoice, first stage\n"
      "model:\n"
      "  n_head: 16   # heads\n"
      "  dropout: 1.0\n"
      "  kv_cache_enabled: yes\n"
      "  hex: 0x1F\n"
      "  eps: 1e-5\n"
      "  speaker: 'bria'\n"
      "  literal: \"true\"\n"
      "  tagged: !!str 12\n"
      "  unset:\n"
      "  tilde: ~\n"
      "  stops: [\"</s>\", 2]\n"
      "  empty: {}\n"
      "zeta: last\n"
      "alpha: after zeta\n";
  EXPECT_EQ(ConfigTree::parse(in).dump(), in);  // untouched: every byte as given
  ConfigTree t = ConfigTree::parse(in);
  t.set({"model", "n_head"}, integer("32"));
  t.set({"model", "speaker"}, str("ana"));
  std::string expected = in;
  expected.replace(expected.find("16   #"), 2, "32");
  expected.replace(expected.find("'bria'"), 6, "'ana'");
  EXPECT_EQ(t.dump(), expected);
}

TEST(ConfigTree, JsonRoundTripIsByteIdentical) { EXPECT_EQ(generation_config().dump(), kGenerationConfig); }

TEST(ConfigTree, JsonRoundTripKeepsLayoutTypesOrderAndNumberSpelling) {
  const std::string in = R"({"z":1.0,"a":"1","n":null,"t":true,"s":"true","e":1e-5,"big":12345678901234567890,)"
                         R"("list":[{"k":[]},-0.5],"o":{}})";
  EXPECT_EQ(ConfigTree::parse(in).dump(), in);  // one line, no line end: as given
  ConfigTree t = ConfigTree::parse(in);
  t.set({"e"}, number("2e-5"));
  std::string expected = in;
  expected.replace(expected.find("1e-5"), 4, "2e-5");
  EXPECT_EQ(t.dump(), expected);
}

TEST(ConfigTree, JsonEscapesStringsOnDump) {
  ConfigTree t = ConfigTree::parse(R"({"prompt": "a \"quoted\" \\ path\n\ttab \u00e9 \ud83d\ude00"})");
  const std::string decoded = "a \"quoted\" \\ path\n\ttab \xC3\xA9 \xF0\x9F\x98\x80";
  EXPECT_EQ(t.get({"prompt"}), str(decoded));
  t.set({"control"}, str(std::string("bell\x07") + "\x1f" + "/end"));
  const std::string out = t.dump();
  // The untouched value stays as written, escapes and surrogate pair included.
  EXPECT_NE(out.find(R"("prompt": "a \"quoted\" \\ path\n\ttab \u00e9 \ud83d\ude00")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("control": "bell\u0007\u001f/end")"), std::string::npos) << out;
  const ConfigTree back = ConfigTree::parse(out);
  EXPECT_EQ(back.get({"prompt"}), str(decoded));
  EXPECT_EQ(back.get({"control"}), str(std::string("bell\x07\x1f/end")));
}

TEST(ConfigTree, JsonKeepsPythonNanAndInfinity) {
  // Python's json.dump writes these by default; they must survive unchanged.
  const std::string in = "{\n  \"a\": NaN,\n  \"b\": -Infinity\n}\n";
  const ConfigTree t = ConfigTree::parse(in);
  EXPECT_EQ(t.get({"a"}), number("NaN"));
  EXPECT_EQ(t.dump(), in);
}

// ---- set ------------------------------------------------------------------------

TEST(ConfigTree, SetsTopLevelKeyInPlace) {
  ConfigTree t = generation_config();
  t.set({"cache_implementation"}, str("static"));
  t.set({"max_new_tokens"}, integer("128"));
  t.set({"do_sample"}, boolean(false));
  std::string expected = kGenerationConfig;
  expected.replace(expected.find("\"quantized\""), 11, "\"static\"");
  expected.replace(expected.find("\"max_new_tokens\": 64"), 20, "\"max_new_tokens\": 128");
  expected.replace(expected.find("\"do_sample\": true"), 17, "\"do_sample\": false");
  EXPECT_EQ(t.dump(), expected);
}

TEST(ConfigTree, SetsNestedKeyInPlace) {
  ConfigTree t = metavoice();
  t.set({"model", "kv_cache_enabled"}, boolean(false));
  t.set({"model", "attn_kernel_type"}, str("Hand"));
  std::string expected = kMetaVoice;
  expected.replace(expected.find("kv_cache_enabled: true"), 22, "kv_cache_enabled: false");
  expected.replace(expected.find("attn_kernel_type: TorchAttn"), 27, "attn_kernel_type: Hand");
  EXPECT_EQ(t.dump(), expected);
  EXPECT_EQ(t.get({"model", "kv_cache_enabled"}), boolean(false));
}

TEST(ConfigTree, SetCreatesMissingParentsAtTheEnd) {
  ConfigTree j = ConfigTree::parse(R"({"cache_implementation": "quantized"})");
  j.set({"cache_config", "backend"}, str("HQQ"));
  j.set({"cache_config", "nbits"}, integer("2"));
  // In the style of its siblings: this object is on one line.
  EXPECT_EQ(j.dump(), R"({"cache_implementation": "quantized", "cache_config": {"backend": "HQQ", "nbits": 2}})");
  ConfigTree y = ConfigTree::parse("model:\n  n_head: 16\n");
  y.set({"model", "rope", "theta"}, number("10000.0"));
  EXPECT_EQ(y.dump(), "model:\n  n_head: 16\n  rope:\n    theta: 10000.0\n");
}

TEST(ConfigTree, SetTurnsNullParentIntoMapping) {
  ConfigTree t = ConfigTree::parse("quantization_config: null\nother: 1\n");
  t.set({"quantization_config", "bits"}, integer("4"));
  EXPECT_EQ(t.dump(), "quantization_config:\n  bits: 4\nother: 1\n");
}

TEST(ConfigTree, SetThroughScalarThrowsNamingPathAndChangesNothing) {
  ConfigTree t = metavoice();
  const std::string msg = error_of([&] { t.set({"model", "n_head", "per_layer"}, integer("8")); });
  EXPECT_EQ(msg, "metavoice.yaml: cannot set model.n_head.per_layer: model.n_head is a scalar, not a mapping");
  EXPECT_EQ(t.dump(), kMetaVoice);
}

TEST(ConfigTree, SetQuotesYamlStringsOnlyWhenPlainWouldChangeType) {
  ConfigTree t = ConfigTree::parse("a: 1\n");
  t.set({"s_true"}, str("true"));
  t.set({"s_one"}, str("1"));
  t.set({"s_yes"}, str("yes"));  // a boolean to YAML 1.1 readers such as PyYAML
  t.set({"s_date"}, str("2024-01-01"));
  t.set({"s_empty"}, str(""));
  t.set({"s_word"}, str("TorchAttn"));
  t.set({"s_colon"}, str("a: b"));
  t.set({"b"}, boolean(true));
  t.set({"unset"}, kNull);
  t.set({"x"}, number("1.0"));
  t.set({"7"}, integer("7"));  // a key spelled like a number stays a string key
  EXPECT_EQ(t.dump(),
            "a: 1\n"
            "s_true: \"true\"\n"
            "s_one: \"1\"\n"
            "s_yes: \"yes\"\n"
            "s_date: \"2024-01-01\"\n"
            "s_empty: \"\"\n"
            "s_word: TorchAttn\n"
            "s_colon: \"a: b\"\n"
            "b: true\n"
            "unset: null\n"
            "x: 1.0\n"
            "\"7\": 7\n");
  const ConfigTree back = ConfigTree::parse(t.dump());
  for (const char* key : {"s_true", "s_one", "s_yes", "s_date", "s_empty", "s_word", "s_colon"})
    EXPECT_EQ(back.get({key})->type, T::string) << key;
  EXPECT_EQ(back.get({"b"}), boolean(true));
  EXPECT_EQ(back.get({"unset"}), kNull);
  EXPECT_EQ(back.get({"x"}), number("1.0"));
}

TEST(ConfigTree, SetKeepsAQuotedStringQuoted) {
  ConfigTree t = metavoice();
  t.set({"generation", "speaker"}, str("alice"));
  EXPECT_NE(t.dump().find("  speaker: \"alice\"\n"), std::string::npos);
}

TEST(ConfigTree, SetRefusesValuesTheFormatCannotHold) {
  ConfigTree y = metavoice();
  EXPECT_EQ(error_of([&] {
              y.set({"model", "n_head"}, integer("abc"));
            }),
            "metavoice.yaml: cannot set model.n_head to 'abc': not an integer");
  EXPECT_NE(error_of([&] {
              y.set({"model", "bias"}, {T::boolean, "maybe"});
            }).find("not a boolean"),
            std::string::npos);
  ConfigTree j = generation_config();
  EXPECT_NE(error_of([&] { j.set({"temperature"}, number(".5")); }).find("not a JSON number"), std::string::npos);
  EXPECT_NE(error_of([&] { j.set({"max_new_tokens"}, integer("+5")); }).find("not a JSON integer"), std::string::npos);
  EXPECT_EQ(y.dump(), kMetaVoice);
  EXPECT_EQ(j.dump(), kGenerationConfig);
}

TEST(ConfigTree, SetReplacesListElementButDoesNotExtendList) {
  ConfigTree t = generation_config();
  t.set({"eos_token_id", "2"}, integer("2"));
  EXPECT_EQ(t.get({"eos_token_id", "2"}), integer("2"));
  EXPECT_NE(error_of([&] {
              t.set({"eos_token_id", "3"}, integer("7"));
            }).find("lists are not extended"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              t.set({"eos_token_id", "x", "y"}, integer("7"));
            }).find("eos_token_id is a list"),
            std::string::npos);
}

TEST(ConfigTree, SetRejectsEmptyPath) {
  ConfigTree t = metavoice();
  EXPECT_FALSE(error_of([&] { t.set({}, integer("1")); }).empty());
  EXPECT_FALSE(error_of([&] { t.remove({}); }).empty());
}

// ---- find ---------------------------------------------------------------------

TEST(ConfigTree, FindReturnsEveryPathInDocumentOrder) {
  const ConfigTree t = metavoice();
  EXPECT_EQ(t.find("max_new_tokens"), (std::vector<KeyPath>{{"generation", "max_new_tokens"}, {"max_new_tokens"}}));
  EXPECT_EQ(t.find("kv_cache_enabled"), (std::vector<KeyPath>{{"model", "kv_cache_enabled"}}));
  EXPECT_TRUE(t.find("kv_repeat").empty());
  EXPECT_EQ(t.find("model"), (std::vector<KeyPath>{{"model"}}));
}

TEST(ConfigTree, FindMatchesDottedKeyAsPathSuffix) {
  const ConfigTree t = metavoice();
  EXPECT_EQ(t.find("generation.max_new_tokens"), (std::vector<KeyPath>{{"generation", "max_new_tokens"}}));
  EXPECT_TRUE(t.find("model.max_new_tokens").empty());
}

TEST(ConfigTree, FindDescendsIntoListsWithIndexParts) {
  const ConfigTree t =
      ConfigTree::parse("layers:\n  - name: enc\n    kv_repeat: 1\n  - name: dec\n    kv_repeat: 2\nkv_repeat: 1\n");
  EXPECT_EQ(t.find("kv_repeat"),
            (std::vector<KeyPath>{{"layers", "0", "kv_repeat"}, {"layers", "1", "kv_repeat"}, {"kv_repeat"}}));
  EXPECT_TRUE(t.find("0").empty());  // an index is not a key
  EXPECT_EQ(t.get({"layers", "1", "kv_repeat"}), integer("2"));
}

// ---- remove ---------------------------------------------------------------------

TEST(ConfigTree, RemoveDeletesKeyAndKeepsTheRestInOrder) {
  ConfigTree t = generation_config();
  t.remove({"cache_config"});
  t.remove({"cache_implementation"});
  EXPECT_EQ(t.get({"cache_implementation"}), std::nullopt);
  EXPECT_EQ(t.dump(), R"({
  "bos_token_id": 128000,
  "do_sample": true,
  "eos_token_id": [
    128001,
    128008,
    128009
  ],
  "max_new_tokens": 64,
  "pad_token_id": null,
  "temperature": 0.6,
  "top_p": 0.9,
  "transformers_version": "4.45.0"
}
)");
  ConfigTree y = metavoice();
  y.remove({"model", "kv_cache_enabled"});
  std::string expected = kMetaVoice;
  expected.erase(expected.find("  kv_cache_enabled: true\n"), 25);
  EXPECT_EQ(y.dump(), expected);
}

TEST(ConfigTree, RemoveOfAbsentPathIsNoOp) {
  ConfigTree t = metavoice();
  t.remove({"kv_repeat"});
  t.remove({"model", "n_head", "deeper"});
  t.remove({"nowhere", "at", "all"});
  EXPECT_EQ(t.dump(), kMetaVoice);
}

TEST(ConfigTree, RemoveOfListElementThrows) {
  ConfigTree t = generation_config();
  EXPECT_NE(error_of([&] { t.remove({"eos_token_id", "0"}); }).find("renumber"), std::string::npos);
  t.remove({"eos_token_id", "9"});  // absent
  EXPECT_EQ(t.dump(), kGenerationConfig);
}

// ---- copies -----------------------------------------------------------------------

TEST(ConfigTree, CopiesNeverShareNodes) {
  const ConfigTree original = metavoice();

  ConfigTree copy = original;
  copy.set({"model", "kv_cache_enabled"}, boolean(false));
  copy.set({"model", "rope", "theta"}, number("10000.0"));
  copy.remove({"generation"});

  ConfigTree assigned = ConfigTree::parse("x: 1\n");
  assigned = original;
  assigned.set({"model", "n_head"}, integer("8"));

  std::unique_ptr<ConfigAccess> cloned = original.clone();
  cloned->set({"max_new_tokens"}, integer("1"));
  cloned->remove({"model", "n_head"});

  EXPECT_EQ(original.dump(), kMetaVoice);
  EXPECT_EQ(copy.get({"model", "kv_cache_enabled"}), boolean(false));
  EXPECT_EQ(assigned.get({"model", "n_head"}), integer("8"));
  EXPECT_EQ(cloned->get({"max_new_tokens"}), integer("1"));

  // And the other way: changing the original leaves its copies alone.
  ConfigTree source = metavoice();
  const ConfigTree snapshot = source;
  source.set({"generation", "seed"}, integer("7"));
  EXPECT_EQ(snapshot.dump(), kMetaVoice);
}

TEST(ConfigTree, FailedFixOnCloneLeavesOriginal) {
  // What remediation does: try a bundle on a clone; drop it when a step fails.
  ConfigTree config = generation_config();
  std::unique_ptr<ConfigAccess> trial = config.clone();
  trial->set({"cache_implementation"}, str("static"));
  EXPECT_THROW(trial->set({"cache_implementation", "x"}, str("y")), config_error);
  EXPECT_EQ(config.dump(), kGenerationConfig);
}

TEST(ConfigTree, AssignFromTakesStateOfAChangedClone) {
  ConfigTree config = generation_config();
  std::unique_ptr<ConfigAccess> trial = config.clone();
  trial->set({"cache_implementation"}, str("static"));
  config.assign_from(*trial);
  EXPECT_EQ(config.get({"cache_implementation"}), str("static"));
  trial->set({"cache_implementation"}, str("dynamic"));  // no sharing after the assignment either
  EXPECT_EQ(config.get({"cache_implementation"}), str("static"));

  struct Plain {
    int x = 0;
  };
  auto bindings = std::make_shared<Bindings<Plain>>();
  bindings->bind("x", &Plain::x);
  const TypedConfig<Plain> other(Plain{}, bindings);
  EXPECT_THROW(config.assign_from(other), config_error);
}

TEST(ConfigTree, AliasesAreExpandedSoAFixChangesOnePlace) {
  ConfigTree t = ConfigTree::parse("base: &b\n  n_head: 16\nlarge: *b\n");
  t.set({"large", "n_head"}, integer("32"));
  EXPECT_EQ(t.get({"base", "n_head"}), integer("16"));
  // The anchor stays; the alias that no longer reads the same is written out.
  EXPECT_EQ(t.dump(), "base: &b\n  n_head: 16\nlarge: {n_head: 32}\n");
}

TEST(ConfigTree, AliasesThatCannotBeExpandedAreRefused) {
  // yaml-cpp builds a cycle for an alias inside its own anchor.
  EXPECT_EQ(error_of([] { ConfigTree::parse("a: &x [*x]\n", "c.yaml"); }),
            "c.yaml:1:4: an alias refers to a node that contains it");
  // Nested aliases that would expand to 10^9 nodes ("billion laughs").
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) laughs += (j ? ", *l" : "*l") + std::to_string(i - 1);
    laughs += "]\n";
  }
  EXPECT_NE(error_of([&] { ConfigTree::parse(laughs); }).find("aliases expand to more than"), std::string::npos);
}

// ---- errors ------------------------------------------------------------------------

TEST(ConfigTree, ParseErrorsCarryLineAndColumn) {
  EXPECT_EQ(error_of([] { ConfigTree::parse("model:\n  n_head: [16, 8\nbias: true\n", "metavoice.yaml"); }),
            "metavoice.yaml:3:5: end of sequence flow not found");
  const std::string json =
      error_of([] { ConfigTree::parse("{\n  \"a\": 1\n  \"b\": 2\n}", "generation_config.json"); });
  EXPECT_EQ(json.rfind("generation_config.json:", 0), 0u) << json;
  EXPECT_NE(json.find(":3:"), std::string::npos) << json;
  EXPECT_EQ(error_of([] { ConfigTree::parse("a: 1\nb: 2\na: 3\n", "c.yaml"); }), "c.yaml:3:1: duplicate key 'a'");
  EXPECT_EQ(error_of([] { ConfigTree::parse("{\"a\": 1,\n \"b\": yes}", "c.json"); }),
            "c.json:2:7: 'yes' is not JSON; a string needs quotes");
  EXPECT_EQ(error_of([] { ConfigTree::parse("{a: 1}", "c.json"); }),
            "c.json:1:2: a JSON object key must be a quoted string");
}

TEST(ConfigTree, YamlValuesWithControlCharactersAreQuotedSoTheyReadBack) {
  // Found by the config_fix fuzzer: yaml-cpp wrote trailing CRs raw in a
  // plain scalar, and reading the file back dropped them.
  ConfigTree t = ConfigTree::parse("model:\n  strict: false\n", "c.yaml");
  for (const std::string& v :
       {std::string("abc\r\r"), std::string("tab\t"), std::string("a\x01b"), std::string("del\x7f")}) {
    t.set({"captured"}, str(v));
    const std::string out = t.dump();
    EXPECT_EQ(ConfigTree::parse(out, "again").get({"captured"}), str(v)) << out;
  }
  t.set({"plain"}, str("kv_cache"));
  EXPECT_NE(t.dump().find("plain: kv_cache\n"), std::string::npos) << t.dump();  // no needless quotes
}

TEST(ConfigTree, KeysThatNameNothingAreRefused) {
  // Found by the config_fix fuzzer: a null key and a tagged empty key were
  // written back as YAML that does not parse.
  EXPECT_EQ(error_of([] { ConfigTree::parse("a: {!b: [2, , 3, {c: d}]}\n", "c.yaml"); }),
            "c.yaml:1:5: a config key must be a name, not a list");
  EXPECT_EQ(error_of([] { ConfigTree::parse("a: {!b : 1}\n", "c.yaml"); }),
            "c.yaml:1:5: a config key may not carry a YAML tag ('!b')");
  EXPECT_EQ(error_of([] { ConfigTree::parse("a: 1\n? [x, y]\n: 2\n", "c.yaml"); }),
            "c.yaml:2:3: a config key must be a name, not a list");
  EXPECT_EQ(error_of([] { ConfigTree::parse("a: 1\n: 2\n", "c.yaml"); }),
            "c.yaml:2:1: a config key must be a name, not null");
  EXPECT_EQ(ConfigTree::parse("!!str k: 1\n\"\": 2\n", "c.yaml").get({"k"})->text,
            "1");  // string keys, tagged or empty, are fine
}

TEST(ConfigTree, TagsTheWriterCannotWriteAreRefusedSoEveryParsedConfigDumps) {
  // Found by the config_fix fuzzer: a local tag with a second '!' parsed,
  // then dump() threw "invalid tag".
  EXPECT_EQ(error_of([] { ConfigTree::parse("a: {b: [0, !XX!YY 4]}\n", "c.yaml"); }),
            "c.yaml:1:12: YAML tag '!XX!YY' cannot be written back; remove it or spell it as a plain '!name'");
  // A lone '!' at the very end reads as the core prefix with no suffix,
  // which the writer would write as '!!' and the parser then refuses.
  EXPECT_EQ(
      error_of([] { ConfigTree::parse("a: !", "c.yaml"); }),
      "c.yaml:1:4: YAML tag 'tag:yaml.org,2002:' cannot be written back; remove it or spell it as a plain '!name'");
  EXPECT_EQ(ConfigTree::parse("a: !\n", "c.yaml").get({"a"})->text, "");  // a non-specific '!' is fine
  const ConfigTree ok = ConfigTree::parse("a: !mytag 1\nb: !!str 2\nc: !<tag:example.com,2000:x> 3\n", "c.yaml");
  EXPECT_NO_THROW(ConfigTree::parse(ok.dump(), "again")) << ok.dump();
}

TEST(ConfigTree, KeysWithControlCharactersAreRefusedSinceTheyWouldNotReadBack) {
  // Found by the config_fix fuzzer: a key of NUL bytes was dumped as \u0000
  // escapes, six times longer, past YAML's 1024-character limit on keys.
  EXPECT_EQ(error_of([] { ConfigTree::parse(std::string("{\n  \"bos\0x\": 1}", 15), "c.json"); }),
            "c.json:2:3: key holds the control character U+0000; a config key is a printable name");
  EXPECT_EQ(error_of([] { ConfigTree::parse("\"a\\tb\": 1\n", "c.yaml"); }),
            "c.yaml:1:1: key holds the control character U+0009; a config key is a printable name");
  // Control characters in values are kept; they are data.
  EXPECT_EQ(ConfigTree::parse("{\"a\": \"x\\u0001y\"}", "c.json").get({"a"})->text, std::string("x\x01y"));
}

TEST(ConfigTree, RootMustBeOneMapping) {
  EXPECT_EQ(error_of([] { ConfigTree::parse("[1, 2]", "c.json"); }),
            "c.json:1:1: the document is a list; a config must be a mapping");
  EXPECT_EQ(error_of([] { ConfigTree::parse("just text\n", "c.yaml"); }),
            "c.yaml:1:1: the document is a scalar; a config must be a mapping");
  EXPECT_EQ(error_of([] { ConfigTree::parse("# only a comment\n", "c.yaml"); }),
            "c.yaml: the document is empty; a config must be a mapping");
  EXPECT_EQ(error_of([] { ConfigTree::parse("a: 1\n---\nb: 2\n", "c.yaml"); }),
            "c.yaml:3:1: more than one document; a config is one mapping");
}

TEST(ConfigTree, LoadReadsFileAndNamesUnreadablePath) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("errshim_config_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "generation_config.json";
  std::ofstream(file, std::ios::binary) << kGenerationConfig;
  const ConfigTree t = ConfigTree::load(file);
  EXPECT_EQ(t.name(), file.string());
  EXPECT_EQ(t.format(), ConfigTree::Format::json);
  EXPECT_EQ(t.dump(), kGenerationConfig);

  const auto missing = dir / "missing.yaml";
  EXPECT_EQ(error_of([&] { ConfigTree::load(missing); }).rfind(missing.string() + ": cannot open", 0), 0u);
  EXPECT_EQ(error_of([&] { ConfigTree::load(dir); }), dir.string() + ": is a directory");
  std::ofstream(dir / "bad.yaml") << "a: [\n";
  EXPECT_EQ(error_of([&] { ConfigTree::load(dir / "bad.yaml"); }).rfind((dir / "bad.yaml").string() + ":", 0), 0u);
  std::filesystem::remove_all(dir);
}

TEST(ConfigTree, KeyPathSpellsAndParsesDotted) {
  EXPECT_EQ(to_string(KeyPath{"generation_config", "cache_implementation"}), "generation_config.cache_implementation");
  EXPECT_EQ(parse_key_path("generation_config.cache_implementation"),
            (KeyPath{"generation_config", "cache_implementation"}));
  EXPECT_EQ(parse_key_path("kv_repeat"), KeyPath{"kv_repeat"});
  EXPECT_THROW(parse_key_path(""), config_error);
  EXPECT_THROW(parse_key_path("a..b"), config_error);
  EXPECT_THROW(parse_key_path("a."), config_error);
}

// ---- TypedConfig -------------------------------------------------------------------

enum class AttnKernelType { Fa2, TorchAttn, Hand };

// candle's metavoice and mimi configs, as a host would mirror them.
struct ModelConfig {
  bool kv_cache_enabled = true;
  AttnKernelType attn_kernel_type = AttnKernelType::TorchAttn;
  std::size_t kv_repeat = 1;
  std::uint8_t n_head = 16;
  std::int8_t shift = -3;
  std::int64_t seed = 1337;
  double rmsnorm_eps = 1e-5;
  float dropout = 0.0f;
  std::string norm_type = "rmsnorm";
  std::string cache_implementation = "quantized";
};

std::shared_ptr<const Bindings<ModelConfig>> model_bindings() {
  static const auto bindings = std::make_shared<const Bindings<ModelConfig>>(
      Bindings<ModelConfig>()
          .bind("kv_cache_enabled", &ModelConfig::kv_cache_enabled)
          .bind_enum(
              "attn_kernel_type", &ModelConfig::attn_kernel_type,
              {{"Fa2", AttnKernelType::Fa2}, {"TorchAttn", AttnKernelType::TorchAttn}, {"Hand", AttnKernelType::Hand}})
          .bind("kv_repeat", &ModelConfig::kv_repeat)
          .bind("n_head", &ModelConfig::n_head)
          .bind("shift", &ModelConfig::shift)
          .bind("seed", &ModelConfig::seed)
          .bind("rmsnorm_eps", &ModelConfig::rmsnorm_eps)
          .bind("dropout", &ModelConfig::dropout)
          .bind("norm_type", &ModelConfig::norm_type)
          .bind("generation_config.cache_implementation", &ModelConfig::cache_implementation));
  return bindings;
}

TypedConfig<ModelConfig> typed() { return TypedConfig<ModelConfig>(ModelConfig{}, model_bindings()); }

TEST(TypedConfig, GetsEachMemberKindWithItsType) {
  const auto c = typed();
  EXPECT_EQ(c.get({"kv_cache_enabled"}), boolean(true));
  EXPECT_EQ(c.get({"attn_kernel_type"}), str("TorchAttn"));
  EXPECT_EQ(c.get({"kv_repeat"}), integer("1"));
  EXPECT_EQ(c.get({"n_head"}), integer("16"));  // a uint8_t is a number, not a character
  EXPECT_EQ(c.get({"shift"}), integer("-3"));
  EXPECT_EQ(c.get({"rmsnorm_eps"}), number("1e-05"));
  EXPECT_EQ(c.get({"dropout"}), number("0.0"));
  EXPECT_EQ(c.get({"norm_type"}), str("rmsnorm"));
  EXPECT_EQ(c.get({"not_bound"}), std::nullopt);
}

TEST(TypedConfig, SetsEachMemberKind) {
  auto c = typed();
  c.set({"kv_cache_enabled"}, boolean(false));
  c.set({"attn_kernel_type"}, str("Hand"));
  c.set({"kv_repeat"}, integer("4"));
  c.set({"n_head"}, str("32"));  // a string holding an integer
  c.set({"shift"}, integer("-128"));
  c.set({"seed"}, integer("-9223372036854775808"));
  c.set({"rmsnorm_eps"}, number("1.0e-06"));
  c.set({"dropout"}, integer("1"));  // a floating member takes an integer
  c.set({"norm_type"}, str("layernorm"));
  const ModelConfig& v = c.value();
  EXPECT_FALSE(v.kv_cache_enabled);
  EXPECT_EQ(v.attn_kernel_type, AttnKernelType::Hand);
  EXPECT_EQ(v.kv_repeat, 4u);
  EXPECT_EQ(v.n_head, 32);
  EXPECT_EQ(v.shift, -128);
  EXPECT_EQ(v.seed, std::numeric_limits<std::int64_t>::min());
  EXPECT_DOUBLE_EQ(v.rmsnorm_eps, 1e-6);
  EXPECT_FLOAT_EQ(v.dropout, 1.0f);
  EXPECT_EQ(v.norm_type, "layernorm");
  EXPECT_EQ(c.get({"dropout"}), number("1.0"));

  c.set({"kv_cache_enabled"}, str("true"));  // a string holding a boolean
  EXPECT_TRUE(c.value().kv_cache_enabled);
  c.set({"norm_type"}, integer("7"));  // a string member takes any scalar's text
  EXPECT_EQ(c.value().norm_type, "7");
}

TEST(TypedConfig, RefusesWrongTypesNamingTheMember) {
  auto c = typed();
  EXPECT_EQ(error_of([&] { c.set({"kv_repeat"}, str("abc")); }), "cannot set kv_repeat (integer) to 'abc'");
  EXPECT_EQ(error_of([&] { c.set({"kv_repeat"}, number("1.5")); }), "cannot set kv_repeat (integer) to '1.5'");
  EXPECT_EQ(error_of([&] { c.set({"kv_cache_enabled"}, integer("1")); }),
            "cannot set kv_cache_enabled (boolean) to '1'");
  EXPECT_EQ(error_of([&] { c.set({"rmsnorm_eps"}, boolean(true)); }), "cannot set rmsnorm_eps (number) to 'true'");
  EXPECT_EQ(error_of([&] { c.set({"norm_type"}, kNull); }),
            "cannot set norm_type (string) to null: a struct member cannot hold null");
  // A refused value leaves the member as it was.
  EXPECT_EQ(c.value().kv_repeat, 1u);
  EXPECT_TRUE(c.value().kv_cache_enabled);
}

TEST(TypedConfig, RangeChecksIntegers) {
  auto c = typed();
  EXPECT_EQ(error_of([&] { c.set({"n_head"}, integer("300")); }),
            "cannot set n_head (integer) to '300': out of range 0..255");
  EXPECT_EQ(error_of([&] { c.set({"kv_repeat"}, integer("-1")); }),
            "cannot set kv_repeat (integer) to '-1': out of range 0.." +
                std::to_string(std::numeric_limits<std::size_t>::max()));
  EXPECT_NE(error_of([&] { c.set({"shift"}, integer("-129")); }).find("out of range -128..127"), std::string::npos);
  EXPECT_NE(error_of([&] { c.set({"seed"}, integer("9223372036854775808")); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { c.set({"seed"}, integer("99999999999999999999999")); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of([&] { c.set({"dropout"}, number("1e60")); }).find("out of range"), std::string::npos);
  EXPECT_EQ(c.value().n_head, 16);
  c.set({"n_head"}, integer("255"));
  c.set({"shift"}, integer("127"));
  c.set({"seed"}, integer("9223372036854775807"));
  EXPECT_EQ(c.value().n_head, 255);
  EXPECT_EQ(c.value().seed, std::numeric_limits<std::int64_t>::max());
}

TEST(TypedConfig, EnumIsSetByNameAndUnknownNamesListTheValidOnes) {
  auto c = typed();
  c.set({"attn_kernel_type"}, str("Fa2"));
  EXPECT_EQ(c.value().attn_kernel_type, AttnKernelType::Fa2);
  EXPECT_EQ(c.get({"attn_kernel_type"}), str("Fa2"));
  EXPECT_EQ(error_of([&] { c.set({"attn_kernel_type"}, str("Flash")); }),
            "cannot set attn_kernel_type (name) to 'Flash': valid names are Fa2, TorchAttn, Hand");
  EXPECT_EQ(c.value().attn_kernel_type, AttnKernelType::Fa2);
  c.value().attn_kernel_type = static_cast<AttnKernelType>(7);  // outside the table
  EXPECT_EQ(c.get({"attn_kernel_type"}), integer("7"));
}

TEST(TypedConfig, FloatingMembersReadBackAsShortestNumbers) {
  struct Sampling {
    double temperature = 0.1;
    float top_p = 0.9f;
    double scale = 3.0;
    double limit = std::numeric_limits<double>::infinity();
  };
  auto b = std::make_shared<Bindings<Sampling>>();
  b->bind("temperature", &Sampling::temperature)
      .bind("top_p", &Sampling::top_p)
      .bind("scale", &Sampling::scale)
      .bind("limit", &Sampling::limit);
  TypedConfig<Sampling> c(Sampling{}, b);
  EXPECT_EQ(c.get({"temperature"}), number("0.1"));
  EXPECT_EQ(c.get({"top_p"}), number("0.9"));
  EXPECT_EQ(c.get({"scale"}), number("3.0"));
  EXPECT_EQ(c.get({"limit"}), number(".inf"));
  c.set({"limit"}, number("-.inf"));
  EXPECT_EQ(c.value().limit, -std::numeric_limits<double>::infinity());
  c.set({"scale"}, number("+2.5"));
  EXPECT_EQ(c.value().scale, 2.5);
}

TEST(TypedConfig, FindReturnsBoundPathsOnly) {
  const auto c = typed();
  EXPECT_EQ(c.find("kv_repeat"), (std::vector<KeyPath>{{"kv_repeat"}}));
  EXPECT_TRUE(c.find("kv_heads").empty());
  // A dotted binding matches its last part and its full name, and is
  // reached by either spelling of its path.
  const std::vector<KeyPath> dotted{{"generation_config", "cache_implementation"}};
  EXPECT_EQ(c.find("cache_implementation"), dotted);
  EXPECT_EQ(c.find("generation_config.cache_implementation"), dotted);
  EXPECT_TRUE(c.find("generation_config").empty());
  EXPECT_EQ(c.get({"generation_config", "cache_implementation"}), str("quantized"));
  EXPECT_EQ(c.get({"generation_config.cache_implementation"}), str("quantized"));
}

TEST(TypedConfig, SetOfUnboundNameThrows) {
  auto c = typed();
  const std::string msg = error_of([&] { c.set({"kv_heads"}, integer("2")); });
  EXPECT_EQ(msg.rfind("cannot set kv_heads: no member is bound to it (bound: kv_cache_enabled, attn_kernel_type,", 0),
            0u)
      << msg;
}

TEST(TypedConfig, RemoveThrowsForBoundMemberAndIgnoresUnbound) {
  auto c = typed();
  EXPECT_EQ(error_of([&] { c.remove({"kv_repeat"}); }),
            "cannot remove kv_repeat: a struct member cannot be removed; bind a default and set it instead");
  c.remove({"not_bound"});
  EXPECT_EQ(c.value().kv_repeat, 1u);
}

TEST(TypedConfig, CopiesAndClonesAreIndependent) {
  auto original = typed();
  std::unique_ptr<ConfigAccess> cloned = original.clone();
  cloned->set({"kv_cache_enabled"}, boolean(false));
  cloned->set({"norm_type"}, str("layernorm"));
  TypedConfig<ModelConfig> copy = original;
  copy.set({"kv_repeat"}, integer("2"));
  EXPECT_TRUE(original.value().kv_cache_enabled);
  EXPECT_EQ(original.value().norm_type, "rmsnorm");
  EXPECT_EQ(original.value().kv_repeat, 1u);
  EXPECT_EQ(cloned->get({"kv_cache_enabled"}), boolean(false));

  original.assign_from(*cloned);
  EXPECT_FALSE(original.value().kv_cache_enabled);
  EXPECT_THROW(original.assign_from(ConfigTree::parse("a: 1\n")), config_error);
}

TEST(TypedConfig, BindingsRejectBadNames) {
  Bindings<ModelConfig> b;
  b.bind("kv_repeat", &ModelConfig::kv_repeat);
  EXPECT_THROW(b.bind("kv_repeat", &ModelConfig::n_head), std::invalid_argument);
  EXPECT_THROW(b.bind("a..b", &ModelConfig::n_head), std::invalid_argument);
  EXPECT_THROW(b.bind_enum("attn", &ModelConfig::attn_kernel_type,
                           {{"Fa2", AttnKernelType::Fa2}, {"Fa2", AttnKernelType::Hand}}),
               std::invalid_argument);
  EXPECT_THROW(TypedConfig<ModelConfig>(ModelConfig{}, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace errshim
