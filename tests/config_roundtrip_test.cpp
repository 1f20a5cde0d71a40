// Writing a config back changes only the bytes of the values a fix changed:
// golden files (tests/data/config_golden/NAME.in.*) are edited and compared
// byte for byte with NAME.out.*; every edited file must also read back as
// the edited tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <set>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <errshim/errshim.hpp>

namespace errshim {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Op {
  enum { set, remove } what;
  const char* path;
  Value value;
};

struct Golden {
  const char* name;  // the test case
  const char* file;  // NAME.in.EXT and NAME.out.EXT
  const char* ext;
  std::vector<Op> ops;
};

Value s(const char* t) { return {Value::Type::string, t}; }
Value i(const char* t) { return {Value::Type::integer, t}; }
Value b(bool v) { return {Value::Type::boolean, v ? "true" : "false"}; }

const std::vector<Golden>& goldens() {
  static const std::vector<Golden> all = {
      // The anchored mapping changes: the aliases that must keep the old
      // value are written out where they stand, and every comment stays.
      {"AnchorChangedAliasesKeepTheirValue",
       "comments_anchors",
       "yaml",
       {{Op::set, "defaults.n_head", i("32")}, {Op::set, "second_stage.dtype", s("float16")}}},
      // One alias changes: only that alias is written out.
      {"OneAliasChanged", "comments_anchors", "yaml", {{Op::set, "first_stage.model.kv_cache_enabled", b(false)}}},
      // Flow sequences and mappings keep their style; a created key follows
      // its siblings' indentation; a removed one takes its line with it.
      {"FlowAndBlockStyles",
       "flow_block",
       "yaml",
       {{Op::set, "generation.eos_token_id.1", i("128008")},
        {Op::set, "generation.sampling.temperature", {Value::Type::number, "0.7"}},
        {Op::set, "generation.sampling.min_p", {Value::Type::number, "0.05"}},
        {Op::set, "layers.0.kv_repeat", i("1")},
        {Op::set, "generation.max_new_tokens", i("256")},
        {Op::remove, "generation.bos_token_id", {}},
        {Op::set, "cache_implementation", s("dynamic")}}},
      {"CrlfLineEnds",
       "crlf",
       "yaml",
       {{Op::set, "model.cache_dtype", s("float16")},
        {Op::set, "model.attn_implementation", s("sdpa")},
        {Op::set, "model.max_position_embeddings", i("8192")}}},
      {"UnusualSpacingAndNoTrailingNewline",
       "spacing",
       "yaml",
       {{Op::set, "model.n_head", i("32")},
        {Op::set, "name", s("mistral")},
        {Op::set, "model.new_key", i("1")},
        {Op::set, "added_last", s("x")}}},
      {"PythonJsonDumpLayout",
       "generation_config",
       "json",
       {{Op::set, "temperature", {Value::Type::number, "0.7"}},
        {Op::set, "cache_implementation", s("dynamic")},
        {Op::remove, "top_p", {}}}},
      {"OneLineJson",
       "compact",
       "json",
       {{Op::set, "torch_dtype", s("float16")},
        {Op::set, "rope_scaling.rope_type", s("llama3")},
        {Op::set, "attn_implementation", s("sdpa")},
        {Op::remove, "architectures", {}}}},
      {"QuotingStylesKept",
       "quotes",
       "yaml",
       {{Op::set, "plain", s("Manual")},
        {Op::set, "single", s("it's")},
        {Op::set, "double", s("eager")},
        {Op::set, "number_text", s("16")},
        {Op::set, "block", s("one line")},
        {Op::set, "plain_new", s("a: b")}}},
  };
  return all;
}

void PrintTo(const Golden& g, std::ostream* os) { *os << g.name; }

class ConfigGolden : public ::testing::TestWithParam<Golden> {};

TEST_P(ConfigGolden, EditChangesOnlyTheBytesOfWhatChanged) {
  const Golden& g = GetParam();
  const fs::path dir = fs::path(ERRSHIM_SOURCE_DIR) / "tests/data/config_golden";
  const std::string in = read(dir / (std::string(g.file) + ".in." + g.ext));
  ASSERT_FALSE(in.empty());
  ConfigTree t = ConfigTree::parse(in, std::string(g.file) + "." + g.ext);
  EXPECT_EQ(t.dump(), in) << "an untouched config is written back as given";
  for (const Op& op : g.ops) {
    if (op.what == Op::set)
      t.set(parse_key_path(op.path), op.value);
    else
      t.remove(parse_key_path(op.path));
  }
  const std::string out = t.dump();
  const fs::path want = dir / (std::string(g.name) + ".out." + g.ext);
  if (out != read(want)) {
    // Written beside the build for review; copied over the golden file only by a person.
    const fs::path actual = fs::temp_directory_path() / (std::string(g.name) + ".actual." + g.ext);
    std::ofstream(actual, std::ios::binary) << out;
    ADD_FAILURE() << "differs from golden file " << want.string() << "; this run wrote " << actual.string() << ":\n"
                  << out;
  }
  // It reads back as the edited tree.
  const ConfigTree back = ConfigTree::parse(out, "back");
  for (const Op& op : g.ops) {
    const auto got = back.get(parse_key_path(op.path));
    if (op.what == Op::remove) {
      EXPECT_FALSE(got) << op.path;
    } else {
      ASSERT_TRUE(got) << op.path;
      EXPECT_EQ(got->text, op.value.text) << op.path;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, ConfigGolden, ::testing::ValuesIn(goldens()),
                         [](const ::testing::TestParamInfo<Golden>& info) { return std::string(info.param.name); });

// A plain scalar folded over lines inside a flow list is a layout the
// scanners do not follow: the edit is then written by the emitter, and the
// result still reads back as the edited tree (and unchanged, as given).
TEST(ConfigRoundTrip, ALayoutTheScannersDoNotFollowIsStillWrittenRight) {
  const std::string in = "a: [x\n  y, 2]  # folded\nb: 1\n";
  ConfigTree t = ConfigTree::parse(in);
  EXPECT_EQ(t.dump(), in);
  t.set({"a", "1"}, i("3"));
  const ConfigTree back = ConfigTree::parse(t.dump());
  EXPECT_TRUE(back.same_values(t)) << t.dump();
  EXPECT_EQ(back.get({"a", "0"}), s("x y"));
  EXPECT_EQ(back.get({"a", "1"}), i("3"));
}

// Found by the config_fix fuzzer: a key alone in a flow mapping (`{a}`, a
// null value) sent the whole document to the emitter.
TEST(ConfigRoundTrip, AKeyWithoutValueInAFlowMappingIsSplicedAround) {
  ConfigTree t = ConfigTree::parse("k: true\nmodel: {a, b: 1}  # c\n");
  t.set({"k"}, b(false));
  EXPECT_EQ(t.dump(), "k: false\nmodel: {a, b: 1}  # c\n");
  t.set({"model", "a"}, i("2"));
  EXPECT_EQ(t.dump(), "k: false\nmodel: {a: 2, b: 1}  # c\n");
}

// Found by the config_fix fuzzer: an empty value after a tag (`seed: !337`)
// followed by a less indented key was located on that key's line, so the
// whole document went to the emitter, which wrote `!337 ""`.
TEST(ConfigRoundTrip, ATaggedEmptyValueStaysAsWritten) {
  ConfigTree t = ConfigTree::parse("model:\n  kv: true\ngeneration:\n  seed: !337\nstrict: false\n");
  t.set({"model", "kv"}, b(false));
  EXPECT_EQ(t.dump(), "model:\n  kv: false\ngeneration:\n  seed: !337\nstrict: false\n");
}

// A byte order mark is not counted in yaml-cpp's positions; the splice is.
TEST(ConfigRoundTrip, AByteOrderMarkStaysAndTheEditLandsInPlace) {
  const std::string in = "\xEF\xBB\xBF{\"a\": 1, \"b\": \"x\"}\n";
  ConfigTree t = ConfigTree::parse(in);
  t.set({"b"}, s("y"));
  EXPECT_EQ(t.dump(), "\xEF\xBB\xBF{\"a\": 1, \"b\": \"y\"}\n");
}

// Every config the fuzzers ever kept (their seeds, and the malformed inputs
// yaml-cpp accepts anyway: a quote left open, a stray word, NUL bytes), with
// each scalar changed in turn: dump() writes a text that reads back as the
// changed tree, or refuses with config_error. Never a file that now means
// something else.
TEST(ConfigRoundTrip, DumpWritesWhatReadsBackAsTheTreeOrRefuses) {
  std::size_t configs = 0, edits = 0;
  for (const char* dir : {"tests/data/fuzz-regressions/config_fix", "fuzz/corpus/config_fix"}) {
    std::error_code ec;
    for (const auto& de : fs::directory_iterator(fs::path(ERRSHIM_SOURCE_DIR) / dir, ec)) {
      const std::string data = read(de.path());
      const std::size_t nul = data.find('\0');
      const std::string text = nul == std::string::npos ? data : data.substr(nul + 1);
      std::optional<ConfigTree> parsed;
      try {
        parsed = ConfigTree::parse(text, de.path().filename().string());
      } catch (const config_error&) {
        continue;
      }
      ++configs;
      // The scalars under every word of the text that is written as a key.
      std::vector<KeyPath> leaves;
      std::set<std::string> words;  // [A-Za-z_][A-Za-z0-9_]* followed by ':' or '":'
      for (std::size_t i = 0; i < text.size();) {
        const auto word_char = [](char c, bool first) {
          return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
        };
        if (!word_char(text[i], true)) {
          ++i;
          continue;
        }
        std::size_t j = i + 1;
        while (j < text.size() && word_char(text[j], false)) ++j;
        const std::size_t colon = j < text.size() && text[j] == '"' ? j + 1 : j;
        if (colon < text.size() && text[colon] == ':') words.insert(text.substr(i, j - i));
        i = j;
      }
      for (const std::string& w : words)
        for (const KeyPath& at : parsed->find(w)) {
          const std::optional<Value> v = parsed->get(at);
          if (v && v->type != Value::Type::null) leaves.push_back(at);
        }
      for (const KeyPath& leaf : leaves) {
        ConfigTree t = *parsed;
        t.set(leaf, s("changed by the test"));
        ++edits;
        std::string out;
        try {
          out = t.dump();
        } catch (const config_error& e) {
          EXPECT_NE(std::string(e.what()).find("nothing was written"), std::string::npos) << e.what();
          continue;
        }
        try {
          EXPECT_TRUE(ConfigTree::parse(out, "again").same_values(t))
              << de.path() << " at " << to_string(leaf) << " wrote:\n"
              << out;
        } catch (const config_error& e) {
          ADD_FAILURE() << de.path() << " at " << to_string(leaf) << ": " << e.what() << "\nwrote:\n" << out;
        }
      }
    }
  }
  EXPECT_GT(configs, 10u);
  EXPECT_GT(edits, 50u);
}

}  // namespace
}  // namespace errshim
