// Golden files of the CLI's output, byte for byte: the text form with and
// without colour at two widths, the entry form, and the JSON form.
//
// The files are tests/data/golden/cli/*; the catalog layer they explain is
// tests/data/golden/cli/catalog.yaml (an id of its own, so edits to the
// shipped catalog leave them alone). After a deliberate change of the output,
// regenerate them and review the diff:
//
//   ERRSHIM_UPDATE_GOLDEN=1 build/tests/errshim_tests --gtest_filter='CliGolden*'
//
// The catalog version in JSON (its content hash and entry count change with
// every catalog edit) is compared as a placeholder.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <sys/wait.h>

namespace {

const std::string kDir = std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/golden/cli/";
const std::string kMessage = "'Error: golden cache: sequence length 9000 exceeds the cache of 4096 positions'";

struct GoldenCase {
  const char* name;  // the golden file
  std::string env;  // variables set for the run
  std::string args;  // after 'errshim'; the golden catalog is added
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

std::string run(const GoldenCase& c) {
  // Colour settings of the environment running the tests must not leak in.
  const std::string cmd = std::string("env -u NO_COLOR -u CLICOLOR_FORCE ") + c.env + " " + ERRSHIM_CLI + " " + c.args +
                          " --catalog " + kDir + "catalog.yaml 2>/dev/null";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::string stable(std::string s) {
  return std::regex_replace(s, std::regex(R"("catalog": \{"version": "[^"]*", "entries": [0-9]+\})"),
                            R"("catalog": {"version": "<version>", "entries": <n>})");
}

class CliGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(CliGolden, OutputMatchesTheGoldenFile) {
  const GoldenCase& c = GetParam();
  const std::string got = stable(run(c));
  const std::string path = kDir + c.name;
  if (const char* u = std::getenv("ERRSHIM_UPDATE_GOLDEN"); u && *u && std::string(u) != "0") {
    std::ofstream(path, std::ios::binary) << got;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing; regenerate with ERRSHIM_UPDATE_GOLDEN=1";
  const std::string want((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, want) << "regenerate with ERRSHIM_UPDATE_GOLDEN=1 if the change is intended";
}

INSTANTIATE_TEST_SUITE_P(
    Cli, CliGolden,
    ::testing::Values(GoldenCase{"explain.w100.txt", "COLUMNS=100", "explain " + kMessage},
                      GoldenCase{"explain.w60.txt", "COLUMNS=60", "explain " + kMessage},
                      GoldenCase{"explain.color.w100.txt", "COLUMNS=100", "explain --color=always " + kMessage},
                      GoldenCase{"explain.color.w60.txt", "COLUMNS=60 CLICOLOR_FORCE=1", "explain " + kMessage},
                      GoldenCase{"explain.verbose.w80.txt", "COLUMNS=80", "explain --verbose " + kMessage},
                      GoldenCase{"entry.w80.txt", "COLUMNS=80", "explain golden.cache.sequence_too_long"},
                      GoldenCase{"list.w80.txt", "COLUMNS=80", "list --library=golden"},
                      GoldenCase{"explain.json", "COLUMNS=60", "explain --json " + kMessage},
                      GoldenCase{"list.json", "", "list --json --tag golden"}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string n = info.param.name;
      for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

}  // namespace
