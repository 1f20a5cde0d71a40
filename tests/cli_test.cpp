// The errshim command line, run as a user runs it: exit codes, text and JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
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
  const CliRun r =
      cli("explain --json " + quote("Error: Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], "
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
  const CliRun applied =
      cli("fix --config " + f + " --allow safe,slower,changes-output " + quote("only kv-repeat = 1 is supported"));
  EXPECT_EQ(applied.code, 0);
  EXPECT_EQ(applied.out, "transformer:\n  num_heads: 8\n  kv_repeat: 1\n  context: 250\n");
  const CliRun dry =
      cli("fix --config " + f + " --dry-run --allow changes-output " + quote("only kv-repeat = 1 is supported"));
  EXPECT_EQ(dry.code, 0);
  EXPECT_EQ(dry.out, "transformer.kv_repeat: 2 -> 1\n");
}

TEST(Cli, FixPinnedKeyIsRefused) {
  const std::string f = write_temp("errshim_fix_pin.yaml", "kv_cache_enabled: true\n");
  EXPECT_EQ(
      cli("fix --config " + f + " --pin kv_cache_enabled " + quote("kv_cache_enabled=true is not supported")).code, 1);
  EXPECT_EQ(cli("fix --config " + f + " " + quote("kv_cache_enabled=true is not supported")).out,
            "kv_cache_enabled: false\n");
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
  const CliRun r = cli("check --config " + bad + " --model metavoiceio/metavoice-1B-v0.1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("will fail: candle.metavoice.kv_cache_enabled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("because: kv_cache_enabled = true"), std::string::npos) << r.out;
  const std::string good = write_temp("errshim_check_good.yaml", "n_head: 16\nkv_cache_enabled: false\n");
  EXPECT_EQ(cli("check --config " + good + " --model metavoiceio/metavoice-1B-v0.1").code, 0);
}

TEST(Cli, SnapshotLoadsAsACatalogAndAnswersAlike) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto user = dir / "errshim_cli_snap_user.yaml";
  std::ofstream(user) << errshim::testing::file_yaml(
      errshim::testing::entry_yaml("user.snap", "my snapshotted failure"));
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
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache"))
    entries += e.path().extension() == ".snapshot";
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

INSTANTIATE_TEST_SUITE_P(Cli, CliStdinBound,
                         ::testing::Values(BoundCase{"Explain", "explain -", "'tail -c 1M LOG | errshim explain -'"},
                                           BoundCase{"ExplainJson", "explain --json -", "'errshim scan LOG'"},
                                           BoundCase{"Fix", "fix --config /nonexistent.json -",
                                                     "'tail -c 1M LOG | errshim fix --config FILE -'"},
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

// scan --json -j 2 cuts the file into parts of 1 MiB, scanned and rendered
// on two threads: its output is byte for byte that of -j 1, with a traceback
// across each split, an ERROR record above each, and repeated texts (which
// the verdict cache serves) among unique ones.
TEST(Cli, ScanJsonInParallelWritesWhatOneThreadWrites) {
  const auto f = std::filesystem::temp_directory_path() / ("errshim_cli_par." + std::to_string(getpid()) + ".log");
  std::size_t tracebacks = 0;
  {
    std::string log;
    const std::size_t mib = 1u << 20;
    for (std::size_t i = 0; log.size() < 6 * mib; ++i) {
      const std::size_t to_split = mib - log.size() % mib;
      if (to_split < 300 || i % 37 == 0) {
        // A split point falls inside this block when it is near one.
        log += "2026-11-30 10:00:00,000 ERROR server - request " + std::to_string(i % 3 == 0 ? 7 : i) + " failed\n";
        log += "Traceback (most recent call last):\n  File \"/app/a.py\", line 12, in handle\n    run()\n";
        log += "  File \"/app/b.py\", line 3, in run\n    raise ValueError(x)\n";
        log += i % 2 == 0 ? "ValueError: bad input\n" : "KeyError: 'k" + std::to_string(i % 5) + "'\n";
        ++tracebacks;
      } else {
        log += "2026-11-30 10:00:00,000 INFO server - handled request " + std::to_string(i) + " in 12ms\n";
      }
    }
    std::ofstream(f, std::ios::binary) << log;
  }
  const CliRun one = cli("scan --json -j 1 " + f.string());
  const CliRun two = cli("scan --json -j 2 " + f.string());
  std::filesystem::remove(f);
  EXPECT_EQ(one.code, two.code);
  EXPECT_GE(static_cast<std::size_t>(std::count(one.out.begin(), one.out.end(), '\n')), tracebacks);
  EXPECT_TRUE(one.out == two.out) << "-j 1 and -j 2 differ, " << one.out.size() << " and " << two.out.size()
                                  << " bytes";
}

// A block whose text was seen before is written from the earlier JSON line
// (scan's repeat cache): the same line but for its own number, here at line
// numbers of 1 to 4 digits, on standard input and in a file.
TEST(Cli, ScanJsonRepeatedBlocksCarryTheirOwnLineNumbers) {
  const std::string block =
      "Traceback (most recent call last):\n  File \"/app/a.py\", line 12, in handle\nValueError: bad input\n";
  std::string log;
  std::vector<std::size_t> starts;
  for (const std::size_t at : {1u, 9u, 95u, 998u, 1003u}) {
    while (std::count(log.begin(), log.end(), '\n') + 1 < static_cast<std::ptrdiff_t>(at)) log += "INFO server - ok\n";
    starts.push_back(at);
    log += block;
  }
  const auto f = std::filesystem::temp_directory_path() / ("errshim_cli_rep." + std::to_string(getpid()) + ".log");
  std::ofstream(f, std::ios::binary) << log;
  const CliRun file = cli("scan --json " + f.string());
  std::filesystem::remove(f);
  const CliRun in = cli("scan --json -", log);
  for (const CliRun* r : {&file, &in}) {
    std::vector<std::string> lines;
    std::istringstream s(r->out);
    for (std::string l; std::getline(s, l);) lines.push_back(l);
    ASSERT_EQ(lines.size(), starts.size()) << r->out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::string want = lines[0];
      const std::string first = "\"line\": 1, ";
      ASSERT_NE(want.rfind(first), std::string::npos) << want;  // the block's, after the entry's source line
      want.replace(want.rfind(first), first.size(), "\"line\": " + std::to_string(starts[i]) + ", ");
      EXPECT_EQ(lines[i], want) << i;
    }
  }
}

TEST(Cli, VersionAndHelp) {
  EXPECT_EQ(cli("--version").out.rfind("errshim ", 0), 0u);
  const CliRun h = cli("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("exit codes:"), std::string::npos);
}

}  // namespace

namespace {

// Runs `env VARS errshim ARGS` (standard error merged when asked).
CliRun cli_env(const std::string& env, const std::string& args, Stderr err = Stderr::discard) {
  return run_shell("env -u NO_COLOR -u CLICOLOR_FORCE " + env + " " + std::string(ERRSHIM_CLI) + " " + args +
                   " < /dev/null" + (err == Stderr::merge ? " 2>&1" : " 2>/dev/null"));
}

const std::string kGolden = std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/golden/cli/catalog.yaml";
const std::string kGoldenMessage = "'golden cache: sequence length 9000 exceeds the cache of 4096 positions'";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (std::to_string(getpid()) + "." + name)).string();
}

TEST(Cli, CommandHelpIsTheCommandsOwn) {
  const CliRun fix = cli("fix --help");
  EXPECT_EQ(fix.code, 0);
  EXPECT_NE(fix.out.find("Usage: errshim fix"), std::string::npos) << fix.out;
  EXPECT_NE(fix.out.find("--in-place"), std::string::npos) << fix.out;
  const CliRun list = cli("list --help");
  EXPECT_EQ(list.code, 0);
  EXPECT_NE(list.out.find("--library"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("\n  --dry-run"), std::string::npos) << list.out;
  EXPECT_EQ(cli("help").code, 0);
}

TEST(Cli, OptionsOfAnotherCommandAreRefused) {
  const CliRun r = cli("list --dry-run", "", Stderr::merge);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--dry-run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("errshim list --help"), std::string::npos) << r.out;
  EXPECT_EQ(cli("explain --in-place x").code, 2);
  EXPECT_EQ(cli("check --allow safe --config x.yaml").code, 2);
}

TEST(Cli, OptionEqualsValueWorksForEveryOption) {
  const std::string f = write_temp("errshim_fix_eq.yaml", "transformer:\n  kv_repeat: 2\n");
  const CliRun r =
      cli("fix --config=" + f + " --allow=safe,changes-output --pin=other " + quote("only kv-repeat = 1 is supported"));
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "transformer:\n  kv_repeat: 1\n");
  const std::string bad = write_temp("errshim_check_eq.yaml", "n_head: 16\nkv_cache_enabled: true\n");
  EXPECT_EQ(cli("check --config=" + bad + " --model=metavoiceio/metavoice-1B-v0.1").code, 1);
}

TEST(Cli, ExplainAnEntryIdPrintsTheEntry) {
  const CliRun r = cli_env("COLUMNS=100", "explain candle.metavoice.kv_cache_enabled");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("error: candle.metavoice.kv_cache_enabled [unsupported-feature]\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("examples (messages this entry explains):"), std::string::npos) << r.out;
  const CliRun j = cli("explain --json candle.metavoice.kv_cache_enabled");
  EXPECT_EQ(j.code, 0);
  EXPECT_NE(j.out.find("\"id\": \"candle.metavoice.kv_cache_enabled\""), std::string::npos) << j.out;
}

TEST(Cli, ListFiltersByLibraryTagAndText) {
  const CliRun lib = cli_env("COLUMNS=1000", "list --library=libtorch");
  EXPECT_EQ(lib.code, 0);
  std::size_t ids = 0;
  for (std::size_t at = 0; (at = lib.out.find('\n', at)) != std::string::npos && at + 1 < lib.out.size(); ++at) {
    if (lib.out[at + 1] == ' ') continue;  // the sentence under an id
    ++ids;
    EXPECT_EQ(lib.out.compare(at + 1, 9, "libtorch."), 0) << lib.out.substr(at + 1, 80);
  }
  EXPECT_GT(ids, 10u);
  const CliRun tag = cli("list --tag metavoice --tag kv-cache");
  EXPECT_NE(tag.out.find("candle.metavoice.kv_cache_enabled\n"), std::string::npos) << tag.out;
  EXPECT_EQ(tag.out.find("candle.metavoice.only_torch_attn"), std::string::npos) << tag.out;
  const CliRun text = cli("list KEY/VALUE cache MetaVoice");  // every word, any case
  EXPECT_NE(text.out.find("candle.metavoice.kv_cache_enabled\n"), std::string::npos) << text.out;
  EXPECT_EQ(cli("list --library=none-such").code, 1);
}

TEST(Cli, ListPrintsWholeFirstSentences) {
  const CliRun r = cli_env("COLUMNS=1000", "list metavoice");
  EXPECT_NE(
      r.out.find("candle.metavoice.kv_cache_enabled\n    The MetaVoice GPT stage in candle has no key/value cache, "
                 "so it refuses a config that asks for one.\n"),
      std::string::npos)
      << r.out;
}

TEST(Cli, ColourFollowsTheFlagThenNoColorThenClicolorForce) {
  const std::string args = "explain " + quote("kv_cache_enabled=true is not supported");
  EXPECT_EQ(cli_env("", args).out.find('\x1b'), std::string::npos);  // not a terminal
  EXPECT_NE(cli_env("CLICOLOR_FORCE=1", args).out.find("\x1b[1;31merror\x1b[0m"), std::string::npos);
  EXPECT_EQ(cli_env("CLICOLOR_FORCE=1 NO_COLOR=1", args).out.find('\x1b'), std::string::npos);
  EXPECT_EQ(cli_env("CLICOLOR_FORCE=1", args + " --color=never").out.find('\x1b'), std::string::npos);
  EXPECT_NE(cli_env("NO_COLOR=1", args + " --color=always").out.find("\x1b]8;;https://github.com/"), std::string::npos);
  EXPECT_EQ(cli(args + " --color=sometimes").code, 2);
}

TEST(Cli, TextIsWrappedToColumns) {
  for (const int width : {60, 100}) {
    const CliRun r = cli_env("COLUMNS=" + std::to_string(width), "explain candle.metavoice.kv_cache_enabled");
    std::size_t widest = 0;
    for (std::size_t start = 0, end; start < r.out.size(); start = end + 1) {
      end = r.out.find('\n', start);
      const std::string line = r.out.substr(start, end - start);
      if (line.find("https://") == std::string::npos) widest = std::max(widest, line.size());
    }
    EXPECT_LE(widest, static_cast<std::size_t>(width)) << r.out;
    EXPECT_GT(widest, static_cast<std::size_t>(width) - 15) << r.out;
  }
}

TEST(Cli, VersionAndEveryJsonDocumentNameTheCatalogVersion) {
  const CliRun v = cli("--version");
  const std::size_t at = v.out.find("catalog 0.");
  ASSERT_NE(at, std::string::npos) << v.out;
  const std::string version = v.out.substr(at + 8, v.out.find(',', at) - at - 8);
  EXPECT_NE(version.find("+catalog."), std::string::npos) << version;
  const std::string field = "\"catalog\": {\"version\": \"" + version + "\"";
  EXPECT_NE(cli("explain --json " + quote("kv_cache_enabled=true is not supported")).out.find(field),
            std::string::npos);
  EXPECT_NE(cli("list --json --tag metavoice").out.find(field), std::string::npos);
  const std::string good = write_temp("errshim_check_version.yaml", "kv_cache_enabled: false\n");
  EXPECT_NE(cli("check --json --config " + good).out.find(field), std::string::npos);
  // A user layer changes the catalog, and so its version.
  EXPECT_EQ(cli("explain --json --catalog " + kGolden + " " + kGoldenMessage).out.find(field), std::string::npos);
}

// Generated layers ship beside the library and are loaded by library name.
TEST(Cli, GeneratedLayersLoadByLibraryName) {
  const std::string env = std::string("ERRSHIM_GENERATED_DIR=") + ERRSHIM_GENERATED_LAYER_DIR;
  const std::string message = quote("Metal contiguous elu F16 not implemented");
  EXPECT_EQ(cli_env(env, "explain " + message).code, 1);  // the embedded catalog does not know it
  for (const std::string layer : {"candle", "all"}) {
    const CliRun r = cli_env(env, "explain --json --generated " + layer + " " + message);
    EXPECT_EQ(r.code, 0) << layer;
    EXPECT_NE(r.out.find("\"id\": \"candle.gen.core.metal-contiguous-elu-not-implemented\""), std::string::npos)
        << r.out;
  }
  const CliRun missing = cli_env(env, "explain --generated nosuchlib " + message, Stderr::merge);
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("no generated layer 'nosuchlib'"), std::string::npos) << missing.out;
  const CliRun none =
      cli_env("ERRSHIM_GENERATED_DIR=/nonexistent", "explain --generated all " + message, Stderr::merge);
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find("--generated all: no generated layer found"), std::string::npos) << none.out;
}

TEST(Cli, CheckJsonPrintsADocumentEvenWithNothingToReport) {
  const std::string good = write_temp("errshim_check_json_good.yaml", "n_head: 16\nkv_cache_enabled: false\n");
  const CliRun r = cli("check --json --config " + good);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("{\"config\": \"" + good + "\", \"findings\": [], \"catalog\": {", 0), 0u) << r.out;
  const std::string bad = write_temp("errshim_check_json_bad.yaml", "n_head: 16\nkv_cache_enabled: true\n");
  const CliRun b = cli("check --json --model metavoiceio/metavoice-1B-v0.1 --config " + bad);
  EXPECT_EQ(b.code, 1);
  EXPECT_NE(b.out.find("\"findings\": [{\"id\": \"candle.metavoice.kv_cache_enabled\", \"because\": "
                       "[\"kv_cache_enabled = true\"], \"remediation\": [{\"step\": 0, "),
            std::string::npos)
      << b.out;
}

TEST(Cli, FixInPlaceWritesTheFileAndKeepsABackup) {
  const std::string f = temp_path("errshim_fix_inplace.yaml");
  const std::string before = "max_seq_len: 4096\nmax_new_tokens: 1024\n";
  std::ofstream(f) << before;
  const CliRun r = cli("fix --in-place --backup=.orig --config " + f + " --catalog " + kGolden + " " + kGoldenMessage);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");  // nothing on standard output: the file is the result
  EXPECT_EQ(read_file(f), "max_seq_len: 8192\nmax_new_tokens: 1024\n");
  EXPECT_EQ(read_file(f + ".orig"), before);
  EXPECT_EQ(cli("fix --backup .orig --config " + f + " " + kGoldenMessage).code, 2);  // --backup needs --in-place
  EXPECT_EQ(cli("fix --in-place --dry-run --config " + f + " " + kGoldenMessage).code, 2);
  std::filesystem::remove(f);
  std::filesystem::remove(f + ".orig");
}

// A config yaml-cpp reads but errshim cannot write back so that it reads
// the same (a fuzz finding: stray bytes after the last key): the fix is
// refused with the reason, the file keeps every byte, nothing says applied.
TEST(Cli, FixOfAConfigThatCannotBeWrittenBackLeavesTheFile) {
  const std::string given = read_file(std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/config_unwritable.yaml");
  const std::string f = temp_path("errshim_fix_unwritable.yaml");
  std::ofstream(f, std::ios::binary) << given;
  const CliRun r = cli("fix --in-place --config " + f + " kv_cache_enabled=true is not supported", "", Stderr::merge);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("nothing was written"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("applied"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(f), given);
  std::filesystem::remove(f);
}

TEST(Cli, FixStepChoosesTheStepByItsIndex) {
  const std::string f = write_temp("errshim_fix_step.yaml", "max_seq_len: 4096\nmax_new_tokens: 1024\n");
  const std::string base = "fix --config " + f + " --catalog " + kGolden + " ";
  const CliRun one = cli(base + "--step 1 --allow safe,slower,changes-output " + kGoldenMessage);
  EXPECT_EQ(one.code, 0);
  EXPECT_EQ(one.out, "max_seq_len: 4096\nmax_new_tokens: 512\n");
  const CliRun refused = cli(base + "--step 1 " + kGoldenMessage, "", Stderr::merge);
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.out.find("step 1 is not allowed"), std::string::npos) << refused.out;
  const CliRun past = cli(base + "--step 9 " + kGoldenMessage, "", Stderr::merge);
  EXPECT_EQ(past.code, 2);
  EXPECT_NE(past.out.find("has steps 0 to 3"), std::string::npos) << past.out;
}

TEST(Cli, FixDiffPrintsAUnifiedDiffOfTheChange) {
  const std::string f = write_temp("errshim_fix_diff.yaml", "max_seq_len: 4096\nmax_new_tokens: 1024\n");
  const CliRun r = cli("fix --diff --config " + f + " --catalog " + kGolden + " " + kGoldenMessage);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "--- " + f + "\n+++ " + f +
                       "\n@@ -1,2 +1,2 @@\n-max_seq_len: 4096\n+max_seq_len: 8192\n max_new_tokens: 1024\n");
  EXPECT_EQ(read_file(f), "max_seq_len: 4096\nmax_new_tokens: 1024\n");
}

TEST(Cli, FixInteractiveRefusesWithoutATerminal) {
  const std::string f = write_temp("errshim_fix_tty.yaml", "max_seq_len: 4096\n");
  const CliRun r =
      cli("fix --interactive --config " + f + " --catalog " + kGolden + " " + kGoldenMessage, "1\n", Stderr::merge);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--interactive needs a terminal on standard input"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(f), "max_seq_len: 4096\n");
}

TEST(Cli, FixInteractiveAppliesTheConfirmedStepOnATerminal) {
  if (run_shell("command -v script >/dev/null").code != 0) GTEST_SKIP() << "script(1) is not installed";
  const std::string f = write_temp("errshim_fix_pty.yaml", "max_seq_len: 4096\nmax_new_tokens: 1024\n");
  // script(1) gives the CLI a terminal; the answer '1' is typed into it.
  const std::string cmd = std::string(ERRSHIM_CLI) + " fix --interactive --allow safe,slower,changes-output --config " +
                          f + " --catalog " + kGolden + " " + kGoldenMessage;
  const CliRun r = run_shell("printf '1\\n' | script -qec " + quote(cmd) + " /dev/null");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[0] Build the model with a larger"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max_new_tokens: 1024 -> 512"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not possible: host action 'truncate-prompt' is not registered"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max_new_tokens: 512"), std::string::npos) << r.out;
}

TEST(Cli, DraftWritesAnEntryThatLintRefusesOnlyForItsTodoMarkers) {
  const CliRun r = cli("draft RuntimeError: shard 3 lost its KV block at 0x7f3a0010");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("template: \"shard {num1} lost its KV block at {hex1}\""), std::string::npos) << r.out;
  const std::string f = write_temp("errshim_draft.yaml", r.out);
  const CliRun lint = cli("lint " + f, "", Stderr::merge);
  EXPECT_NE(lint.code, 0) << lint.out;
  EXPECT_NE(lint.out.find("cause holds an authoring note ('TODO')"), std::string::npos) << lint.out;
  // Every problem line (they name the file) is one of the markers.
  std::size_t problems = 0;
  for (std::size_t at = lint.out.find(f + ":"); at != std::string::npos; at = lint.out.find(f + ":", at + 1)) {
    ++problems;
    const std::string line = lint.out.substr(at, lint.out.find('\n', at) - at);
    EXPECT_NE(line.find("holds an authoring note ('TODO')"), std::string::npos) << line;
  }
  EXPECT_EQ(problems, 3u) << lint.out;
}

TEST(Cli, DraftFromScanGivesOneEntryPerFingerprintWithItsCount) {
  const std::string log = std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/scan/workers.log";
  const CliRun r = cli("draft --from-scan " + log + " --top 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("# seen 4 times"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# seen 3 times"), std::string::npos) << r.out;
  std::size_t ids = 0;
  for (std::size_t at = r.out.find("- id: draft."); at != std::string::npos; at = r.out.find("- id: draft.", at + 1))
    ++ids;
  EXPECT_EQ(ids, 2u) << r.out;
  EXPECT_EQ(cli("draft --from-scan " + log + " some message").code, 2);
  const CliRun from_stdin = cli("draft -", "ValueError: unsupported sampler 'beam' for 4 beams\n");
  EXPECT_EQ(from_stdin.code, 0);
  EXPECT_NE(from_stdin.out.find("template: \"unsupported sampler 'beam' for {num1} beams\""), std::string::npos)
      << from_stdin.out;
}

}  // namespace
