// Importing error-database records: the seed record becomes a loadable,
// lint-clean entry with its provenance; bad records name record and field.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <errshim/errshim.hpp>
#include <errshim/importer.hpp>
#include <errshim/lint.hpp>
#include "importer_internal.hpp"

namespace errshim {
namespace {

std::string seed() {
  std::ifstream in(std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/import/seed_002.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string import_error_of(const std::string& json) {
  try {
    import_records(json, "in.json");
  } catch (const import_error& e) {
    return e.what();
  }
  return "(no error)";
}

// A minimal valid record with one field replaced (or added).
std::string record(const std::string& field = "", const std::string& value = "") {
  std::string fields[][2] = {{"id", "\"r1\""},
                             {"repo", "\"huggingface/candle\""},
                             {"errorMessage", "\"only kv-repeat = 1 is supported\""},
                             {"messagePattern", "\"only kv-repeat = 1 is supported\""},
                             {"errorClass", "\"candle::Error::Msg\""},
                             {"errorType", "\"unsupported-feature\""},
                             {"filePath", "\"candle-transformers/src/models/mimi/transformer.rs\""},
                             {"lineNumber", "151"},
                             {"analyzedSha", "\"2a13b0f3ff62f7e67013597f2996f764c5735e21\""},
                             {"documentation", "\"doc\""},
                             {"triggerScenarios", "\"trigger\""},
                             {"solutions", "[\"one\", \"two\"]"},
                             {"schemaVersion", "2"}};
  std::string out = "{";
  bool replaced = false;
  for (auto& f : fields) {
    if (f[0] == field) {
      replaced = true;
      if (value == "<absent>") continue;
      f[1] = value;
    }
    out += (out.size() > 1 ? ", " : "") + ("\"" + f[0] + "\": " + f[1]);
  }
  if (!field.empty() && !replaced) out += ", \"" + field + "\": " + value;  // an optional field
  return out + "}";
}

TEST(Importer, SeedRecordBecomesALoadableLintCleanEntryWithProvenance) {
  const std::string yaml = import_records(seed(), "seed_002.json");
  const auto cat = CatalogBuilder().add_yaml(yaml, "imported.yaml").build();
  ASSERT_EQ(cat->size(), 1u);
  const Entry& e = *cat->entries()[0];
  EXPECT_EQ(e.id, "transformers.imported.this-model-does-not-support-the-quantized-cache-i");
  EXPECT_EQ(e.source.repo, "huggingface/transformers");
  EXPECT_EQ(e.source.path, "src/transformers/generation/utils.py");
  EXPECT_EQ(e.source.line, 2003);
  EXPECT_EQ(e.source.commit, "a597f974857b3d92939971296bc0deb93d33d780");
  EXPECT_EQ(e.error_class, "ValueError");
  EXPECT_EQ(e.kind, "validation");
  EXPECT_TRUE(e.imported);
  EXPECT_EQ(e.remediation.size(), 5u);  // four solutions and the example fix
  EXPECT_NE(e.remediation.back().text.find("cache_implementation=\"dynamic\""), std::string::npos);
  EXPECT_NE(std::find(e.tags.begin(), e.tags.end(), "imported"), e.tags.end());
  EXPECT_NE(yaml.find("# imported from record 64dfbff1930e8d74 https://github.com/huggingface/transformers/blob/"),
            std::string::npos)
      << yaml;
  EXPECT_TRUE(lint(*cat).empty());
  EXPECT_TRUE(
      cat->diagnose("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError: This "
                    "model does not support the quantized cache. If you want your model to support quantized "
                    "cache, please open an issue and tag @zucchini-nlp."));
}

TEST(Importer, ArraysWrappersAndJsonLines) {
  const std::string r2 = record("id", "\"r2\"");
  EXPECT_EQ(CatalogBuilder().add_yaml(import_records("[" + record() + ", {\"record\": " + r2 + "}]")).build()->size(),
            2u);
  EXPECT_EQ(CatalogBuilder().add_yaml(import_records(record() + "\n" + r2 + "\n")).build()->size(), 2u);
}

TEST(Importer, BadRecordsNameTheRecordAndField) {
  EXPECT_EQ(import_error_of(record("errorMessage", "<absent>")),
            "in.json: record 1 (id r1): field 'errorMessage': missing; it is required");
  EXPECT_EQ(import_error_of(record("lineNumber", "\"abc\"")),
            "in.json: record 1 (id r1): field 'lineNumber': expected a whole number, got 'abc'");
  EXPECT_EQ(import_error_of(record("solutions", "\"just one string\"")),
            "in.json: record 1 (id r1): field 'solutions': must be a list of strings");
  EXPECT_EQ(import_error_of(record("schemaVersion", "3")),
            "in.json: record 1 (id r1): field 'schemaVersion': is 3; this importer reads schemaVersion 2");
  EXPECT_NE(import_error_of(record("messagePattern", "\"only (kv\"")).find("field 'messagePattern': does not compile"),
            std::string::npos);
  EXPECT_NE(import_error_of(record("messagePattern", "\"something else\""))
                .find("does not match the record's own errorMessage"),
            std::string::npos);
  EXPECT_NE(
      import_error_of("[" + record() + ", " + record("repo", "<absent>") + "]").find("record 2 (id r1): field 'repo'"),
      std::string::npos);
  EXPECT_NE(import_error_of("{\"record\": {\"id\": ").find("in.json:1:"), std::string::npos);
  EXPECT_NE(import_error_of("[1]").find("field 'record': must be a JSON object"), std::string::npos);
}

TEST(Importer, ConvertsTheRegexDialect) {
  EXPECT_EQ(convert_regex(R"(path \/tmp\/x)"), "path /tmp/x");
  EXPECT_EQ(convert_regex(R"((?P<dim>\d+) and (?P=dim))"), R"((?<dim>\d+) and \k<dim>)");
  EXPECT_EQ(convert_regex(R"(caf\u00e9)"), R"(caf\x{00e9})");
  EXPECT_EQ(convert_regex(R"(\u{1F600})"), R"(\x{1F600})");
  EXPECT_EQ(convert_regex(R"(a\.b\d)"), R"(a\.b\d)");  // shared syntax untouched
  EXPECT_THROW(convert_regex(R"(\u{12)"), import_error);
}

TEST(Importer, RecordWithoutPatternMatchesItsMessageLiterally) {
  const auto cat = CatalogBuilder().add_yaml(import_records(record("messagePattern", "<absent>"))).build();
  EXPECT_TRUE(cat->diagnose("Error: only kv-repeat = 1 is supported"));
  EXPECT_FALSE(cat->diagnose("only kv-repeat X 1 is supported"));
}

// Whether PyYAML reads `yaml` (as a host's Python tooling would), or nullopt
// without python3 and PyYAML.
std::optional<bool> pyyaml_loads(const std::string& yaml) {
  const auto file = std::filesystem::temp_directory_path() / ("errshim-import-" + std::to_string(getpid()) + ".yaml");
  std::ofstream(file, std::ios::binary) << yaml;
  const std::string cmd =
      "python3 -c 'import sys\ntry:\n    import yaml\nexcept ImportError:\n    sys.exit(3)\n"
      "yaml.safe_load(open(sys.argv[1], \"rb\"))' " +
      file.string() + " 2>/dev/null";
  const int status = std::system(cmd.c_str());
  std::filesystem::remove(file);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 127) return std::nullopt;
  return WEXITSTATUS(status) == 0;
}

struct CommentCase {
  const char* name;
  const char* field;  // where the hostile text goes: the record id or its URL
  const char* value;  // a JSON string
  const char* expected;  // how the comment shows it
};

void PrintTo(const CommentCase& c, std::ostream* os) { *os << c.name; }

class ImporterComment : public ::testing::TestWithParam<CommentCase> {};

// The record id and URL are written into a YAML comment; a line break there
// (CR, NEL, LS and PS are line breaks to YAML 1.1 readers such as PyYAML)
// would end the comment and turn the rest into YAML.
TEST_P(ImporterComment, HostileTextStaysInsideTheComment) {
  const CommentCase& c = GetParam();
  const std::string yaml = import_records(record(c.field, c.value), "in.json");
  const auto cat = CatalogBuilder().add_yaml(yaml, "imported.yaml").build();
  EXPECT_EQ(cat->size(), 1u);
  EXPECT_NE(yaml.find(c.expected), std::string::npos) << yaml;
  const std::optional<bool> pyyaml = pyyaml_loads(yaml);
  if (!pyyaml) GTEST_SKIP() << "python3 with PyYAML is not installed";
  EXPECT_TRUE(*pyyaml) << yaml;
}

INSTANTIATE_TEST_SUITE_P(
    Importer, ImporterComment,
    ::testing::Values(
        CommentCase{"IdWithCR", "id", R"("r1\revil: 1")", R"(# imported from record r1\x0Devil: 1)"},
        CommentCase{"IdWithLF", "id", R"("r1\nevil: 1")", R"(# imported from record r1\x0Aevil: 1)"},
        CommentCase{"IdWithNEL", "id", R"("r1\u0085evil: 1")", R"(# imported from record r1\u0085evil: 1)"},
        CommentCase{"IdWithLS", "id", R"("r1\u2028evil: 1")", R"(# imported from record r1\u2028evil: 1)"},
        CommentCase{"IdWithPS", "id", R"("r1\u2029evil: 1")", R"(# imported from record r1\u2029evil: 1)"},
        CommentCase{"IdWithEscAndDel", "id", R"("r1\u001b[31m\u007f")", R"(# imported from record r1\x1B[31m\x7F)"},
        CommentCase{"IdWithC1Control", "id", R"("r1\u009b")", R"(# imported from record r1\u009B)"},
        CommentCase{"UrlWithLF", "githubUrl", R"("https://x/y\nevil: 1")", R"(r1 https://x/y\x0Aevil: 1)"},
        CommentCase{"UrlWithLS", "githubUrl", R"("https://x/y\u2028evil: 1")", R"(r1 https://x/y\u2028evil: 1)"},
        CommentCase{"PrintableTextIsKept", "id", R"("r1 caf\u00e9 \u2192 ok")", "# imported from record r1 café → ok"}),
    [](const ::testing::TestParamInfo<CommentCase>& info) { return std::string(info.param.name); });

TEST(Importer, InputNameInTheHeaderCommentIsEscaped) {
  const std::string hostile = std::string("in\r") + "\xE2\x80\xA8" + "evil: 1\n.json";
  const std::string escaped = import_records(record(), hostile);
  EXPECT_NE(escaped.find("from in\\x0D\\u2028evil: 1\\x0A.json."), std::string::npos) << escaped;
  EXPECT_EQ(CatalogBuilder().add_yaml(escaped, "imported.yaml").build()->size(), 1u);
  const std::optional<bool> pyyaml = pyyaml_loads(escaped);
  if (pyyaml) {
    EXPECT_TRUE(*pyyaml) << escaped;
  }
}

}  // namespace
}  // namespace errshim
