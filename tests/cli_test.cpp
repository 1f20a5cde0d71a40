// The errshim command line, run as a user runs it: exit codes, text and JSON.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "test_catalogs.hpp"

namespace {

struct CliRun {
  int code;
  std::string out;
};

enum class Stderr { discard, merge };

// Runs a shell command line; its standard output (and what it redirects there).
CliRun run_shell(const std::string& cmd) {
  CliRun r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs the CLI through the shell with `input` on standard input.
CliRun cli(const std::string& args, const std::string& input = "", Stderr err = Stderr::discard) {
  // One file per process: ctest runs tests of this binary in parallel.
  const auto in = std::filesystem::temp_directory_path() / ("errshim_cli_stdin." + std::to_string(getpid()) + ".txt");
  std::ofstream(in, std::ios::binary) << input;
  CliRun r = run_shell(std::string(ERRSHIM_CLI) + " " + args + " < " + in.string() +
                       (err == Stderr::merge ? " 2>&1" : " 2>/dev/null"));
  std::error_code ec;
  std::filesystem::remove(in, ec);
  return r;
}

// Runs `producer | errshim ARGS` through the shell, standard error merged.
CliRun piped(const std::string& producer, const std::string& args) {
  return run_shell(producer + " | " + std::string(ERRSHIM_CLI) + " " + args + " 2>&1");
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

TEST(Cli, ExplainMatchedExitsZeroWithTextForm) {
  const CliRun r = cli("explain " + quote("kv_cache_enabled=true is not supported"));
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("candle.metavoice.kv_cache_enabled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("candle-transformers/src/models/metavoice.rs:449"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("https://github.com/huggingface/candle/blob/"), std::string::npos) << r.out;
  // Steps are numbered by their index, as in the JSON, the API and --step.
  EXPECT_NE(r.out.find("\n  [0] "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  [1] "), std::string::npos) << r.out;
}

TEST(Cli, ExplainJsonHasTheDocumentedFields) {
  const CliRun r = cli("explain --json " + quote("Error: Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], "
                                              "k dims [1, 8, 7, 48], v dims [1, 8, 7, 48]."));
  EXPECT_EQ(r.code, 0);
  for (const char* field : {"\"matched\": true", "\"id\": \"candle.sdpa.unsupported_head_dim\"", "\"source\": {",
                            "\"repo\": \"huggingface/candle\"", "\"path\": \"candle-nn/src/ops.rs\"", "\"line\": 1098",
                            "\"commit\": ", "\"cause\": ", "\"trigger\": ", "\"remediation\": [", "\"captures\": {",
                            "\"q_head\": \"48\"", "\"k_dims\": \"[1, 8, 7, 48]\"", "\"message\": "})
    EXPECT_NE(r.out.find(field), std::string::npos) << field << "\n" << r.out;
}

TEST(Cli, ExplainReadsAWholeTracebackFromStdin) {
  const CliRun r = cli("explain --json -",
                    "Traceback (most recent call last):\n"
                    "  File \"gen.py\", line 3, in <module>\n"
                    "    model.generate(cache_implementation=\"quantized\")\n"
                    "ValueError: This model does not support the quantized cache. If you want your model to support "
                    "quantized cache, please open an issue and tag @zucchini-nlp.\n");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("\"id\": \"transformers.generation.quantized_cache_unsupported\""), std::string::npos) << r.out;
}

TEST(Cli, ExplainUnknownMessageExitsOne) {
  EXPECT_EQ(cli("explain " + quote("the weather is nice")).code, 1);
  const CliRun r = cli("explain --json " + quote("the weather is nice"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out.rfind("{\"matched\": false, \"catalog\": {\"version\": \"", 0), 0u) << r.out;
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(cli("").code, 2);
  EXPECT_EQ(cli("explain").code, 2);
  EXPECT_EQ(cli("explain --bogus x").code, 2);
  EXPECT_EQ(cli("frobnicate").code, 2);
}

TEST(Cli, BrokenUserCatalogExitsTwoAndNamesThePlace) {
  const auto f = std::filesystem::temp_directory_path() / "errshim_cli_bad.yaml";
  std::ofstream(f) << errshim::testing::file_yaml(errshim::testing::entry_yaml("user.bad", "x", "    cuase: 1\n"));
  const CliRun r = cli("explain --catalog " + f.string() + " x", "", Stderr::merge);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(f.string() + ":16:5: entry 'user.bad': unknown entry key 'cuase'"), std::string::npos) << r.out;
}

TEST(Cli, UserCatalogExtendsTheEmbeddedOne) {
  const auto f = std::filesystem::temp_directory_path() / "errshim_cli_user.yaml";
  std::ofstream(f) << errshim::testing::file_yaml(errshim::testing::entry_yaml("user.thing", "my own failure"));
  EXPECT_EQ(cli("explain --catalog " + f.string() + " " + quote("my own failure")).code, 0);
  EXPECT_EQ(cli("explain --catalog " + f.string() + " " + quote("only TorchAttn is supported")).code, 0);
}

TEST(Cli, LintFailsOnAnExampleThatDoesNotMatch) {
  const auto f = std::filesystem::temp_directory_path() / "errshim_cli_lint.yaml";
  std::string y = errshim::testing::entry_yaml("user.a", "one thing");
  y.replace(y.find("match: ['one thing']"), 20, "match: ['other thing']");
  std::ofstream(f) << errshim::testing::file_yaml(y);
  const CliRun r = cli("lint " + f.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(f.string() + ":15:"), std::string::npos) << r.out;
}

TEST(Cli, LintPassesOnTheShippedCatalog) {
  const CliRun r = cli(std::string("lint ") + ERRSHIM_SOURCE_DIR + "/patterns");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(Cli, ListPrintsEveryEntryOnce) {
  const CliRun r = cli("list");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("candle.metavoice.kv_cache_enabled"), std::string::npos);
  EXPECT_NE(r.out.find("transformers.generation.quantized_cache_unsupported"), std::string::npos);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto f = std::filesystem::temp_directory_path() / name;
  std::ofstream(f) << text;
  return f.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const char* kQuantized =
    "ValueError: This model does not support the quantized cache. If you want your model to support quantized cache, "
    "please open an issue and tag @zucchini-nlp.";

TEST(Cli, FixAppliesSafeFixToNestedJsonKeyAndKeepsJson) {
  const std::string json =
      "{\n  \"max_new_tokens\": 64,\n  \"generation_config\": {\n    \"cache_implementation\": \"quantized\",\n"
      "    \"num_beams\": 1\n  }\n}\n";
  const std::string f = write_temp("errshim_fix.json", json);
  const CliRun r = cli("fix --config " + f + " " + quote(kQuantized));
  EXPECT_EQ(r.code, 0);
  std::string want = json;
  want.replace(want.find("\"quantized\""), 11, "\"dynamic\"");
  EXPECT_EQ(r.out, want);
  EXPECT_EQ(read_file(f), json);  // the input file is never modified
}

TEST(Cli, FixKeepsYamlAndRefusesChangesOutputUnlessAllowed) {
  const std::string yaml = "transformer:\n  num_heads: 8\n  kv_repeat: 2\n  context: 250\n";
  const std::string f = write_temp("errshim_fix.yaml", yaml);
  const CliRun refused = cli("fix --config " + f + " " + quote("only kv-repeat = 1 is supported"), "", Stderr::merge);
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.out.find("safety class 'changes-output' is not allowed"), std::string::npos) << refused.out;
  const CliRun applied = cli("fix --config " + f + " --allow safe,slower,changes-output " + quote("only kv-repeat = 1 is supported"));
  EXPECT_EQ(applied.code, 0);
  EXPECT_EQ(applied.out, "transformer:\n  num_heads: 8\n  kv_repeat: 1\n  context: 250\n");
  const CliRun dry = cli("fix --config " + f + " --dry-run --allow changes-output " + quote("only kv-repeat = 1 is supported"));
  EXPECT_EQ(dry.code, 0);
  EXPECT_EQ(dry.out, "transformer.kv_repeat: 2 -> 1\n");
}

TEST(Cli, FixPinnedKeyIsRefused) {
  const std::string f = write_temp("errshim_fix_pin.yaml", "kv_cache_enabled: true\n");
  EXPECT_EQ(cli("fix --config " + f + " --pin kv_cache_enabled " + quote("kv_cache_enabled=true is not supported")).code, 1);
  EXPECT_EQ(cli("fix --config " + f + " " + quote("kv_cache_enabled=true is not supported")).out, "kv_cache_enabled: false\n");
}

TEST(Cli, FixAppliesTheRootCauseWhenAFakeErrorInALaterExceptionWinsTheMatch) {
  // The later exception echoes a prompt holding a more specific fake error:
  // the root cause (the first exception) is what gets fixed, the fake's
  // value is never written.
  const std::string text = errshim::testing::kRootCauseThenEchoedFake;
  const std::string f = write_temp("errshim_fix_root.yaml", "kv_cache_enabled: true\nnum_beams: 4\n");
  const CliRun r = cli("fix --config " + f + " -", text);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "kv_cache_enabled: false\nnum_beams: 4\n");
}

TEST(Cli, FixUnknownMessageOrBadConfig) {
  const std::string f = write_temp("errshim_fix_other.yaml", "a: 1\n");
  EXPECT_EQ(cli("fix --config " + f + " " + quote("the weather is nice")).code, 1);
  EXPECT_EQ(cli("fix --config /nonexistent/x.yaml " + quote("only kv-repeat = 1 is supported")).code, 2);
  EXPECT_EQ(cli("fix " + quote("only kv-repeat = 1 is supported")).code, 2);  // --config missing
  EXPECT_EQ(cli("fix --config " + f + " --allow risky x").code, 2);
}

TEST(Cli, CheckReportsKnownErrorsAhead) {
  const std::string bad = write_temp("errshim_check_bad.yaml", "n_head: 16\nkv_cache_enabled: true\n");
  const CliRun r = cli("check --config " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("will fail: candle.metavoice.kv_cache_enabled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("because: kv_cache_enabled = true"), std::string::npos) << r.out;
  const std::string good = write_temp("errshim_check_good.yaml", "n_head: 16\nkv_cache_enabled: false\n");
  EXPECT_EQ(cli("check --config " + good).code, 0);
}

TEST(Cli, SnapshotLoadsAsACatalogAndAnswersAlike) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto user = dir / "errshim_cli_snap_user.yaml";
  std::ofstream(user) << errshim::testing::file_yaml(errshim::testing::entry_yaml("user.snap", "my snapshotted failure"));
  const auto snap = dir / "errshim_cli_user.snapshot";
  std::filesystem::remove(snap);
  EXPECT_EQ(cli("snapshot --catalog " + user.string() + " " + snap.string()).code, 0);
  ASSERT_TRUE(std::filesystem::exists(snap));
  EXPECT_FALSE(std::filesystem::exists(dir / "errshim_cli_user.snapshot.tmp"));
  // The snapshot holds the user layer and the embedded catalog, and answers as the YAML does.
  for (const std::string msg : {"my snapshotted failure", "only TorchAttn is supported"}) {
    const CliRun from_yaml = cli("explain --json --catalog " + user.string() + " " + quote(msg));
    const CliRun from_snapshot = cli("explain --json --catalog " + snap.string() + " " + quote(msg));
    EXPECT_EQ(from_snapshot.code, 0) << msg;
    EXPECT_EQ(from_snapshot.out, from_yaml.out) << msg;
  }
  EXPECT_EQ(cli("snapshot " + (dir / "errshim_cli_user.bin").string()).code, 2);  // not named *.snapshot
  // A damaged snapshot is a catalog that cannot be loaded, named in the error.
  const auto broken = dir / "errshim_cli_broken.snapshot";
  std::ofstream(broken, std::ios::binary) << "not a snapshot";
  const CliRun r = cli("explain --catalog " + broken.string() + " x", "", Stderr::merge);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(broken.string()), std::string::npos) << r.out;
}

TEST(Cli, CacheKeepsASnapshotOfEachYamlLayer) {
  const auto dir = std::filesystem::temp_directory_path() / "errshim_cli_cache";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "cache");
  const auto user = dir / "user.yaml";
  std::ofstream(user) << errshim::testing::file_yaml(errshim::testing::entry_yaml("user.cached", "my cached failure"));
  const std::string args = "explain --json --cache " + (dir / "cache").string() + " --catalog " + user.string() + " ";
  const CliRun first = cli(args + quote("my cached failure"));
  EXPECT_EQ(first.code, 0);
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache")) entries += e.path().extension() == ".snapshot";
  EXPECT_EQ(entries, 1u);
  const CliRun second = cli(args + quote("my cached failure"));  // from the cache
  EXPECT_EQ(second.code, 0);
  EXPECT_EQ(second.out, first.out);
  EXPECT_EQ(cli("explain --cache", "", Stderr::merge).code, 2);  // needs a DIR
  std::filesystem::remove_all(dir);
}

constexpr std::size_t kReadBound = 16u << 20;  // what explain, fix and import read whole

struct BoundCase {
  const char* name;
  const char* args;
  const char* advice;  // what the error tells the user to do instead
};

void PrintTo(const BoundCase& c, std::ostream* os) { *os << c.name; }

class CliStdinBound : public ::testing::TestWithParam<BoundCase> {};

// Standard input is read whole by these commands: past the bound they stop
// with a usage error that says the bound and what to do, instead of reading
// a pipe (from /dev/zero, a runaway log) for as long as it gives bytes.
TEST_P(CliStdinBound, RefusesInputPastTheBoundWithAdvice) {
  const BoundCase& c = GetParam();
  const CliRun r = piped("head -c " + std::to_string(kReadBound + 1) + " /dev/zero", c.args);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("errshim: standard input holds more than 16 MiB, the most errshim reads; "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(c.advice), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Cli, CliStdinBound,
    ::testing::Values(BoundCase{"Explain", "explain -", "'tail -c 1M LOG | errshim explain -'"},
                      BoundCase{"ExplainJson", "explain --json -", "'errshim scan LOG'"},
                      BoundCase{"Fix", "fix --config /nonexistent.json -", "'tail -c 1M LOG | errshim fix --config FILE -'"},
                      BoundCase{"Import", "import -", "split the records into several files"}),
    [](const ::testing::TestParamInfo<BoundCase>& info) { return std::string(info.param.name); });

TEST(Cli, ExplainReadsStandardInputUpToTheBound) {
  const CliRun r = piped("head -c " + std::to_string(kReadBound) + " /dev/zero", "explain -");
  EXPECT_EQ(r.code, 1) << r.out;  // read, and not recognised
  EXPECT_EQ(r.out.find("holds more than"), std::string::npos) << r.out;
}

TEST(Cli, ImportRefusesAFilePastTheBound) {
  const auto f = std::filesystem::temp_directory_path() / ("errshim_cli_big." + std::to_string(getpid()) + ".json");
  {
    std::ofstream out(f, std::ios::binary);
    out << std::string(kReadBound + 1, ' ');
  }
  const CliRun r = cli("import " + f.string(), "", Stderr::merge);
  std::filesystem::remove(f);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("'" + f.string() + "' holds more than 16 MiB, the most errshim reads; split the records"),
            std::string::npos)
      << r.out;
}

// A log line can carry terminal escape sequences (a window title, a screen
// clear, colours); scan's text report shows them as escapes, never raw.
TEST(Cli, ScanTextReportEscapesControlCharacters) {
  const auto f = std::filesystem::temp_directory_path() / ("errshim_cli_esc." + std::to_string(getpid()) + ".log");
  {
    std::ofstream out(f, std::ios::binary);
    out << "2026-01-01 12:00:00 ERROR worker: the flux capacitor failed \x1b]0;owned\x07 \x1b[2J\x1b[31mred "
           "back \xC2\x9B 1m \x9b\n"
        << "2026-01-01 12:00:01 INFO next\n";
  }
  const CliRun r = cli("scan " + f.string());
  std::filesystem::remove(f);
  EXPECT_EQ(r.code, 1) << r.out;  // one block, not recognised
  ASSERT_NE(r.out.find("not recognised:"), std::string::npos) << r.out;
  for (const char raw : {'\x1b', '\x07', '\x9b'}) EXPECT_EQ(r.out.find(raw), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\xC2\x9B"), std::string::npos) << r.out;  // U+009B, CSI in 8 bits
  EXPECT_NE(r.out.find(R"(failed \x1B]0;owned\x07 \x1B[2J\x1B[31mred back \u009B 1m \x9B)"), std::string::npos)
      << r.out;
}

TEST(Cli, VersionAndHelp) {
  EXPECT_EQ(cli("--version").out.rfind("errshim ", 0), 0u);
  const CliRun h = cli("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("exit codes:"), std::string::npos);
}

}  // namespace
