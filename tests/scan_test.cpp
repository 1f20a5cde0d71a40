// errshim::scan: error blocks cut out of logs that mix every supported
// format with ordinary log noise (tests/data/scan/*.log), and the bounds.

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errshim/catalog.hpp>
#include <errshim/fingerprint.hpp>
#include <errshim/scan.hpp>

#include "scan_detail.hpp"
#include "test_catalogs.hpp"

namespace {

using errshim::BlockKind;
using errshim::ScanBlock;

constexpr const char* kQuantized = "transformers.generation.quantized_cache_unsupported";
constexpr const char* kQuantizedMessage =
    "This model does not support the quantized cache. If you want your model to support quantized cache, please "
    "open an issue and tag @zucchini-nlp.";
constexpr const char* kDeviceMismatch = "test.c10.device_mismatch";

// The embedded catalog plus one c10 entry of the test's own, with a priority
// that makes it win over any libtorch entry the shipped catalog gains.
const errshim::Catalog& catalog() {
  static const errshim::CatalogPtr c =
      errshim::CatalogBuilder()
          .add_embedded()
          .add_yaml(errshim::testing::file_yaml(
                        "  - id: test.c10.device_mismatch\n"
                        "    pattern: 'Expected all tensors to be on the same device, but found at least two "
                        "devices, (?<first>[a-z0-9:]+) and (?<second>[a-z0-9:]+)!'\n"
                        "    priority: 100\n"
                        "    source: {path: aten/src/ATen/TensorIterator.cpp, line: 377}\n"
                        "    error_class: c10::Error\n"
                        "    kind: validation\n"
                        "    cause: c\n"
                        "    trigger: t\n"
                        "    remediation:\n"
                        "      - text: r\n"
                        "    examples:\n"
                        "      match: ['Expected all tensors to be on the same device, but found at least two "
                        "devices, cuda:0 and cpu!']\n"),
                    "scan_test.yaml")
          .build();
  return *c;
}

std::vector<ScanBlock> scan_text(const std::string& text, errshim::ScanOptions options = {},
                                 errshim::ScanStats* stats = nullptr) {
  std::istringstream in(text);
  std::vector<ScanBlock> blocks;
  const auto s = errshim::scan(
      in, "test.log", catalog(), [&](const ScanBlock& b) { blocks.push_back(b); }, options);
  if (stats != nullptr) *stats = s;
  return blocks;
}

std::vector<ScanBlock> scan_file(const std::string& name) {
  const std::string path = std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/scan/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::vector<ScanBlock> blocks;
  errshim::scan(in, name, catalog(), [&](const ScanBlock& b) { blocks.push_back(b); });
  return blocks;
}

std::string id_of(const ScanBlock& b) { return b.diagnosis ? b.diagnosis->id() : "<unmatched>"; }

// The block's lines, for checks on where it starts and stops.
std::vector<std::string> lines_of(const ScanBlock& b) {
  std::vector<std::string> out;
  std::istringstream in(b.text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// ------------------------------------------------------------ the sample logs

TEST(Scan, ServingLogPythonTracebacksAmongLogRecords) {
  const auto blocks = scan_file("serving.log");
  ASSERT_EQ(blocks.size(), 4u);

  // logging.exception(): the ERROR record and the traceback under it are one block.
  EXPECT_EQ(blocks[0].file, "serving.log");
  EXPECT_EQ(blocks[0].line, 6u);
  EXPECT_EQ(blocks[0].lines, 11u);
  EXPECT_EQ(blocks[0].kind, BlockKind::python_traceback);
  EXPECT_EQ(id_of(blocks[0]), kQuantized);
  EXPECT_EQ(blocks[0].diagnosis->exception_class, "ValueError");
  EXPECT_EQ(lines_of(blocks[0]).back(), std::string("ValueError: ") + kQuantizedMessage);

  EXPECT_EQ(blocks[1].line, 19u);
  EXPECT_EQ(id_of(blocks[1]), kQuantized);

  // An unknown chained traceback, without an ERROR record above it.
  EXPECT_EQ(blocks[2].line, 28u);
  EXPECT_EQ(blocks[2].kind, BlockKind::python_traceback);
  EXPECT_EQ(blocks[2].lines, 13u);
  EXPECT_FALSE(blocks[2].diagnosis);
  EXPECT_NE(blocks[2].text.find("During handling of the above exception"), std::string::npos);
  EXPECT_EQ(lines_of(blocks[2]).back(), "server.errors.HTTPError: (500, 'postprocessing failed')");

  EXPECT_EQ(blocks[3].line, 43u);
  EXPECT_EQ(blocks[3].kind, BlockKind::error_line);
  EXPECT_EQ(blocks[3].lines, 1u);
  EXPECT_FALSE(blocks[3].diagnosis);
}

TEST(Scan, CandleLogErrorChainPanicAndErrorRecord) {
  const auto blocks = scan_file("candle.log");
  ASSERT_EQ(blocks.size(), 3u);

  EXPECT_EQ(blocks[0].line, 5u);
  EXPECT_EQ(blocks[0].kind, BlockKind::rust_error);
  EXPECT_EQ(blocks[0].lines, 15u);  // "Error:", the Caused by chain and the whole backtrace
  EXPECT_EQ(id_of(blocks[0]), "candle.sdpa.unsupported_head_dim");
  ASSERT_TRUE(blocks[0].diagnosis);
  ASSERT_NE(blocks[0].diagnosis->capture("q_head"), nullptr);
  EXPECT_EQ(*blocks[0].diagnosis->capture("q_head"), "48");
  EXPECT_NE(blocks[0].text.find("Stack backtrace:"), std::string::npos);
  EXPECT_EQ(blocks[0].text.find("shutting down"), std::string::npos);

  EXPECT_EQ(blocks[1].line, 22u);
  EXPECT_EQ(blocks[1].kind, BlockKind::rust_panic);
  EXPECT_EQ(blocks[1].lines, 3u);  // location, message, note
  EXPECT_EQ(id_of(blocks[1]), "candle.flash_attn.feature_not_compiled");

  // A tracing ERROR record, target and all.
  EXPECT_EQ(blocks[2].line, 26u);
  EXPECT_EQ(blocks[2].kind, BlockKind::error_line);
  EXPECT_EQ(id_of(blocks[2]), "candle.mimi.kv_repeat");
}

TEST(Scan, LibtorchLogThreeWaysAC10ErrorIsPrinted) {
  const auto blocks = scan_file("libtorch.log");
  ASSERT_EQ(blocks.size(), 3u);
  for (const auto& b : blocks) {
    EXPECT_EQ(b.kind, BlockKind::libtorch);
    EXPECT_EQ(id_of(b), kDeviceMismatch);
  }
  // An [error] record with the what() text, then the frames (and the blank after them).
  EXPECT_EQ(blocks[0].line, 3u);
  EXPECT_EQ(blocks[0].lines, 7u);
  // what() printed raw: the message is the line above "Exception raised from".
  EXPECT_EQ(blocks[1].line, 12u);
  EXPECT_EQ(blocks[1].lines, 4u);
  ASSERT_NE(blocks[1].diagnosis->capture("first"), nullptr);
  EXPECT_EQ(*blocks[1].diagnosis->capture("first"), "cuda:1");
  // std::terminate: "what():" and the frames, not the shell's "Aborted".
  EXPECT_EQ(blocks[2].line, 17u);
  EXPECT_EQ(blocks[2].lines, 5u);
  EXPECT_EQ(blocks[2].text.find("Aborted"), std::string::npos);
}

TEST(Scan, ComposeLogPrefixedTraceback) {
  const auto blocks = scan_file("compose.log");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].line, 3u);
  EXPECT_EQ(blocks[0].lines, 6u);  // every line carries "worker-1   | "; the next record ends it
  EXPECT_EQ(blocks[0].kind, BlockKind::python_traceback);
  EXPECT_EQ(id_of(blocks[0]), kQuantized);
  EXPECT_EQ(blocks[1].line, 11u);
  EXPECT_EQ(blocks[1].kind, BlockKind::error_line);
  EXPECT_FALSE(blocks[1].diagnosis);
}

TEST(Scan, AllLogsInOneStreamAndTheSummary) {
  std::string all;
  for (const char* name : {"serving.log", "candle.log", "libtorch.log", "compose.log"}) {
    std::ifstream in(std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/scan/" + name, std::ios::binary);
    all.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  errshim::ScanStats stats;
  errshim::ScanSummary summary;
  for (const auto& b : scan_text(all, {}, &stats)) summary.add(b);
  EXPECT_EQ(stats.blocks, 12u);
  EXPECT_EQ(stats.matched, 9u);
  EXPECT_EQ(stats.bytes, all.size());
  EXPECT_EQ(summary.blocks(), 12u);
  EXPECT_EQ(summary.matched(), 9u);

  const auto rec = summary.recognised();
  ASSERT_EQ(rec.size(), 5u);
  EXPECT_EQ(rec[0].id, kQuantized);  // 3 times: the most frequent comes first
  EXPECT_EQ(rec[0].count, 3u);
  EXPECT_EQ(rec[0].first.line, 6u);  // the first example is kept
  EXPECT_EQ(rec[1].id, kDeviceMismatch);
  EXPECT_EQ(rec[1].count, 3u);
  EXPECT_EQ(summary.unrecognised().size(), 3u);

  const std::string text = summary.to_text();
  EXPECT_NE(text.find("12 error block(s): 9 recognised (5 distinct), 3 not recognised"), std::string::npos) << text;
  EXPECT_NE(text.find("      3x  transformers.generation.quantized_cache_unsupported"), std::string::npos) << text;
  EXPECT_NE(text.find("first:   test.log:6 (python-traceback)"), std::string::npos) << text;
  EXPECT_NE(text.find("not recognised:"), std::string::npos);
  EXPECT_NE(text.find("server.errors.HTTPError"), std::string::npos);
}

// ------------------------------------------------------------ block rules

TEST(Scan, OrdinaryLogNoiseMakesNoBlocks) {
  errshim::ScanStats stats;
  const auto blocks = scan_text(
      "2026-11-30 10:00:00,001 INFO server - Error rate is 0.0%\n"
      "2026-11-30 10:00:00,002 WARNING server - retrying after ValueError: timeout\n"
      "[2026-11-30 10:00:00.003] [debug] errors=0\n"
      "loading shards: 100%|##########| 4/4\n"
      "\n"
      "I1130 10:01:42.123456  1234 server.cc:12] serving\n",
      {}, &stats);
  EXPECT_TRUE(blocks.empty());
  EXPECT_EQ(stats.lines, 6u);
}

// Lines that are an error block of one line each, however the error is marked.
struct ErrorLineCase {
  const char* name;
  std::string line;
};

std::ostream& operator<<(std::ostream& os, const ErrorLineCase& c) { return os << c.name; }

const std::vector<ErrorLineCase>& error_line_cases() {
  static const std::vector<ErrorLineCase> cases = {
      {"PythonExceptionLine", "ValueError: " + std::string(kQuantizedMessage)},
      {"PythonLoggingLevel", "ERROR:root:something broke"},
      {"GlogErrorRecord", "E1130 10:01:42.123456  1234 server.cc:12] CUDA out of memory"},
      {"RankTaggedException", "[rank0]: RuntimeError: NCCL timeout"},
      {"FatalLevelAfterTimestamp", "2026-11-30T10:00:00Z FATAL app: disk full"},
  };
  return cases;
}

class ScanErrorLine : public ::testing::TestWithParam<ErrorLineCase> {};

TEST_P(ScanErrorLine, IsABlockOfOneLine) {
  const auto blocks = scan_text(GetParam().line + "\n");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].kind, BlockKind::error_line);
  EXPECT_EQ(blocks[0].line, 1u);
  EXPECT_EQ(blocks[0].lines, 1u);
}

INSTANTIATE_TEST_SUITE_P(Scan, ScanErrorLine, ::testing::ValuesIn(error_line_cases()),
                         [](const ::testing::TestParamInfo<ErrorLineCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(Scan, SingleErrorLinesInARowAreBlocksOfTheirOwn) {
  std::string log;
  for (const ErrorLineCase& c : error_line_cases()) log += c.line + "\n";
  const auto blocks = scan_text(log);
  ASSERT_EQ(blocks.size(), error_line_cases().size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].kind, BlockKind::error_line) << i;
    EXPECT_EQ(blocks[i].line, i + 1) << i;
    EXPECT_EQ(blocks[i].lines, 1u) << i;
  }
  EXPECT_EQ(id_of(blocks[0]), kQuantized);
}

TEST(Scan, PythonChainedExceptionsAreOneBlock) {
  const auto blocks = scan_text(
      "Traceback (most recent call last):\n"
      "  File \"/app/x.py\", line 3, in <module>\n"
      "    generate()\n"
      "ValueError: " +
      std::string(kQuantizedMessage) +
      "\n"
      "\n"
      "The above exception was the direct cause of the following exception:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/x.py\", line 5, in <module>\n"
      "    raise RuntimeError('request failed') from e\n"
      "RuntimeError: request failed\n"
      "\n"
      "done\n");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].lines, 11u);
  EXPECT_EQ(id_of(blocks[0]), kQuantized);
}

TEST(Scan, PythonMultiLineMessageStopsAtABlankLineOrARecord) {
  const auto blocks = scan_text(
      "Traceback (most recent call last):\n"
      "  File \"/app/x.py\", line 3, in <module>\n"
      "pydantic.ValidationError: 1 validation error for Config\n"
      "max_new_tokens\n"
      "  Input should be a valid integer [type=int_parsing]\n"
      "2026-11-30 10:00:00,001 INFO server - next request\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/y.py\", line 3, in <module>\n"
      "KeyError: 'a'\n"
      "\n"
      "plain output after a blank line\n");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].lines, 5u);
  EXPECT_EQ(blocks[1].line, 7u);
  EXPECT_EQ(blocks[1].lines, 3u);
}

TEST(Scan, RustPanicOldStyleAndWithBacktrace) {
  const auto blocks = scan_text(
      "thread 'main' panicked at 'not implemented: compile with '--features flash-attn'', src/main.rs:10:5\n"
      "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
      "thread 'tokio-runtime-worker' panicked at src/model.rs:40:9:\n"
      "not implemented: compile with '--features flash-attn'\n"
      "stack backtrace:\n"
      "   0: rust_begin_unwind\n"
      "             at /rustc/abc/library/std/src/panicking.rs:652:5\n"
      "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n"
      "after\n");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].lines, 2u);
  EXPECT_EQ(blocks[1].line, 3u);
  EXPECT_EQ(blocks[1].lines, 6u);
  for (const auto& b : blocks) {
    EXPECT_EQ(b.kind, BlockKind::rust_panic);
    EXPECT_EQ(id_of(b), "candle.flash_attn.feature_not_compiled");
  }
}

TEST(Scan, ErrorRecordFollowedByARustCauseChain) {
  // tracing's error!("{err:?}") of an anyhow error: the record, then the chain.
  const auto blocks = scan_text(
      "2026-11-30T10:00:00.000000Z ERROR app::serve: generation failed\n"
      "\n"
      "Caused by:\n"
      "    only kv-repeat = 1 is supported\n"
      "2026-11-30T10:00:01.000000Z  INFO app::serve: next\n");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].kind, BlockKind::rust_error);
  EXPECT_EQ(blocks[0].lines, 4u);
  EXPECT_EQ(id_of(blocks[0]), "candle.mimi.kv_repeat");
}

TEST(Scan, CrLfLineEndsColoursAndProgressRedraws) {
  const auto blocks = scan_text(
      "loading 10%\rloading 100%\r\n"
      "\x1b[2m2026-11-30T10:00:00Z\x1b[0m \x1b[31mERROR\x1b[0m \x1b[2mapp\x1b[0m: only kv-repeat = 1 is supported\r\n"
      "\x1b[2m2026-11-30T10:00:01Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mapp\x1b[0m: retrying\r\n"
      "Traceback (most recent call last):\r\n"
      "  File \"/app/x.py\", line 3, in <module>\r\n"
      "ValueError: " +
      std::string(kQuantizedMessage) + "\r\n");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].line, 2u);
  EXPECT_EQ(blocks[0].lines, 1u);
  EXPECT_EQ(id_of(blocks[0]), "candle.mimi.kv_repeat");
  EXPECT_EQ(blocks[1].line, 4u);
  EXPECT_EQ(blocks[1].lines, 3u);
  EXPECT_EQ(id_of(blocks[1]), kQuantized);
}

TEST(Scan, LookBackForAC10MessageStopsAtABlankLine) {
  const auto blocks = scan_text(
      "unrelated stdout\n"
      "\n"
      "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
      "Exception raised from compute_types at aten/src/ATen/TensorIterator.cpp:377 (most recent call first):\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96\n");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].line, 3u);
  EXPECT_EQ(blocks[0].lines, 3u);
  EXPECT_EQ(id_of(blocks[0]), kDeviceMismatch);
}

TEST(Scan, LastLineWithoutNewlineAndEmptyInput) {
  EXPECT_EQ(scan_text("").size(), 0u);
  const auto blocks = scan_text("info\nRuntimeError: boom");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].line, 2u);
  EXPECT_EQ(blocks[0].text, "RuntimeError: boom");
}

// ------------------------------------------------------------ bounds

TEST(Scan, AHugeTracebackKeepsItsHeadAndItsEnd) {
  errshim::ScanOptions options;
  options.max_block_bytes = 16u << 10;
  const std::string frames = repeat("  File \"/app/recurse.py\", line 7, in f\n    return f(n - 1)\n", 50000);
  const auto blocks = scan_text(
      "Traceback (most recent call last):\n" + frames + "ValueError: " + kQuantizedMessage + "\nINFO after\n", options);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_TRUE(blocks[0].truncated);
  EXPECT_EQ(blocks[0].lines, 100002u);
  EXPECT_LE(blocks[0].text.size(), options.max_block_bytes + 64);
  EXPECT_EQ(lines_of(blocks[0]).front(), "Traceback (most recent call last):");
  EXPECT_EQ(lines_of(blocks[0]).back(), std::string("ValueError: ") + kQuantizedMessage);
  EXPECT_NE(blocks[0].text.find("lines omitted"), std::string::npos);
  EXPECT_EQ(id_of(blocks[0]), kQuantized);
}

TEST(Scan, AnEndlessLineIsCutNotHeld) {
  errshim::ScanOptions options;
  options.max_line_bytes = 4096;
  errshim::ScanStats stats;
  const std::string endless = "RuntimeError: " + std::string(8u << 20, 'x');
  const auto blocks = scan_text(endless + "\nnext\n", options, &stats);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_TRUE(blocks[0].truncated);
  EXPECT_EQ(blocks[0].text.size(), 4096u);
  EXPECT_EQ(stats.lines, 2u);
  EXPECT_EQ(stats.bytes, endless.size() + 6);
}

TEST(Scan, ProgressIsReportedAndEndsAtTheTotal) {
  std::string log;
  while (log.size() < (3u << 20)) log += "2026-11-30 10:00:00,001 INFO server - a line of ordinary noise\n";
  errshim::ScanOptions options;
  options.progress_every = 1u << 20;
  std::vector<std::uint64_t> seen;
  options.on_progress = [&](std::uint64_t n) { seen.push_back(n); };
  scan_text(log, options);
  ASSERT_GE(seen.size(), 3u);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]);
  EXPECT_EQ(seen.back(), log.size());
}

TEST(Scan, AVisitorExceptionStopsTheScan) {
  std::istringstream in("RuntimeError: a\nRuntimeError: b\n");
  int calls = 0;
  EXPECT_THROW(errshim::scan(in, "x", catalog(),
                             [&](const ScanBlock&) {
                               ++calls;
                               throw std::runtime_error("stop");
                             }),
               std::runtime_error);
  EXPECT_EQ(calls, 1);
}

TEST(Scan, UnmatchedGroupsAreBounded) {
  // Messages that differ by a word: a number alone would be masked into one fingerprint.
  const auto word = [](int i) { return std::string{static_cast<char>('a' + i / 26), static_cast<char>('a' + i % 26)}; };
  std::string log;
  for (int i = 0; i < 100; ++i) log += "RuntimeError: unknown failure " + word(i) + "\n";
  for (int i = 0; i < 5; ++i) log += "RuntimeError: unknown failure " + word(1) + "\n";
  errshim::ScanSummary summary(10);
  for (const auto& b : scan_text(log)) summary.add(b);
  EXPECT_EQ(summary.blocks(), 105u);
  ASSERT_EQ(summary.unrecognised().size(), 10u);
  EXPECT_EQ(summary.unrecognised()[1].count, 6u);  // the same message is one group
  EXPECT_EQ(summary.unmatched_not_kept(), 90u);
  EXPECT_NE(summary.to_text().find("90 more unrecognised block(s)"), std::string::npos);
}

// ------------------------------------------------------------ the verdict cache

const char* const kOom =
    "Traceback (most recent call last):\n"
    "  File \"a.py\", line 1, in <module>\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "7.79 GiB of which 1.00 GiB is free.\n";
// The same first lines, another verdict (nothing knows it).
const char* const kSameHeadUnknown =
    "Traceback (most recent call last):\n"
    "  File \"a.py\", line 1, in <module>\n"
    "KeyError: zzz\n";

// A text seen before gets its verdict again, and the block stays its own:
// its line, and for another text of the same head, its own verdict; a cache
// of one entry (emptied at each new text) gives the same.
TEST(Scan, RepeatedBlockTextsKeepTheirOwnPlaceAndVerdict) {
  std::string log;
  for (int i = 0; i < 3; ++i) log += std::string("INFO a\n") + kOom + "INFO b\n" + kSameHeadUnknown;
  errshim::ScanOptions uncached;
  uncached.match_cache_entries = 0;
  errshim::ScanOptions tiny;
  tiny.match_cache_entries = 1;
  const auto want = scan_text(log, uncached);
  ASSERT_EQ(want.size(), 6u);
  for (const errshim::ScanOptions& options : {errshim::ScanOptions{}, tiny}) {
    const auto got = scan_text(log, options);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].line, 2 + 4 * i) << i;
      EXPECT_EQ(id_of(got[i]), i % 2 == 0 ? "libtorch.memory.cuda_oom" : "<unmatched>") << i;
      EXPECT_EQ(errshim::to_json(got[i]), errshim::to_json(want[i])) << i;
    }
  }
}

// ------------------------------------------------------------ JSON

TEST(Scan, JsonLineHasTheExplainFieldsPlusWhere) {
  const auto blocks = scan_file("candle.log");
  ASSERT_EQ(blocks.size(), 3u);
  const std::string j = errshim::to_json(blocks[0]);
  EXPECT_EQ(j.find('\n'), std::string::npos);
  EXPECT_EQ(j.rfind("{\"matched\": true, \"id\": \"candle.sdpa.unsupported_head_dim\"", 0), 0u) << j;
  EXPECT_NE(j.find("\"captures\": {\"q_head\": \"48\""), std::string::npos) << j;
  EXPECT_NE(j.find(", \"file\": \"candle.log\", \"line\": 5, \"lines\": 15, \"kind\": \"rust-error\"}"),
            std::string::npos)
      << j;
  EXPECT_EQ(j.back(), '}');

  const auto unknown = scan_text("KeyError: 'x\"y'\n");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(errshim::to_json(unknown[0]),
            "{\"matched\": false, \"file\": \"test.log\", \"line\": 1, \"lines\": 1, \"kind\": \"error-line\", "
            "\"fingerprint\": \"" +
                errshim::fingerprint("KeyError: 'x\"y'").id +
                "\", \"template\": \"KeyError: 'x\\\"y'\", "
                "\"text\": \"KeyError: 'x\\\"y'\"}");
}

// ------------------------------------------------------------ scan_file

std::string scan_dir() { return std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/scan/"; }

TEST(ScanFile, NamesBlocksByPathAndFindsWhatTheStreamScanFinds) {
  const std::string path = scan_dir() + "candle.log";
  std::vector<ScanBlock> blocks;
  errshim::ScanOptions options;
  options.threads = 2;
  const auto stats = errshim::scan_file(
      path, catalog(), [&](const ScanBlock& b) { blocks.push_back(b); }, options);
  const auto streamed = scan_file("candle.log");
  ASSERT_EQ(blocks.size(), streamed.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].file, path);
    EXPECT_EQ(blocks[i].line, streamed[i].line);
    EXPECT_EQ(blocks[i].text, streamed[i].text);
    EXPECT_EQ(id_of(blocks[i]), id_of(streamed[i]));
  }
  EXPECT_EQ(stats.lines, 27u);
  EXPECT_EQ(stats.blocks, 3u);
  EXPECT_EQ(stats.matched, 3u);
}

TEST(ScanFile, AMissingFileThrowsSystemErrorNamingIt) {
  const std::string path = scan_dir() + "no-such.log";
  try {
    errshim::scan_file(path, catalog(), [](const ScanBlock&) {});
    FAIL() << "no exception";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// A FIFO cannot be split or read at offsets: it is read as a stream, with
// the same result.
TEST(ScanFile, ReadsAFifoAsAStream) {
  char dir[] = "/tmp/errshim-fifo-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/log";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << "INFO ok\nValueError: from a pipe\nINFO ok\n"; });
  std::vector<ScanBlock> blocks;
  const auto stats = errshim::scan_file(fifo, catalog(), [&](const ScanBlock& b) { blocks.push_back(b); });
  writer.join();
  unlink(fifo.c_str());
  rmdir(dir);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].line, 2u);
  EXPECT_EQ(blocks[0].text, "ValueError: from a pipe");
  EXPECT_EQ(stats.lines, 3u);
}

TEST(ScanFile, ProgressEndsAtTheFileSize) {
  const std::string path = scan_dir() + "serving.log";
  std::vector<std::uint64_t> seen;
  errshim::ScanOptions options;
  options.on_progress = [&](std::uint64_t n) { seen.push_back(n); };
  const auto stats = errshim::scan_file(
      path, catalog(), [](const ScanBlock&) {}, options);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), stats.bytes);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(stats.bytes, static_cast<std::uint64_t>(st.st_size));
}

// A 4 MiB log with a one-line block every 100 lines, deleted at the end.
class BigLog {
 public:
  BigLog() {
    char dir[] = "/tmp/errshim-scanfile-XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    path_ = dir_ + "/big.log";
    std::ofstream out(path_, std::ios::binary);
    const std::string noise(100, 'n');
    for (int i = 0; i < 40000; ++i) out << noise << "\n" << (i % 100 == 0 ? "RuntimeError: x\n" : "");
  }
  ~BigLog() {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

// A log cut short while it is scanned (logrotate's copytruncate): the scan
// ends where the file now ends (a reader of a mapping would die with SIGBUS
// at the first page past the new end), on one thread as a stream and split
// across threads alike.
struct CutShortCase {
  const char* name;
  bool map_file;  // off: a stream, one thread however many are asked for
  unsigned threads;
};

class CutShort : public ::testing::TestWithParam<CutShortCase> {};

TEST_P(CutShort, ALogCutShortWhileScannedEndsTheScan) {
  const BigLog log;
  struct stat st {};
  ASSERT_EQ(stat(log.path().c_str(), &st), 0);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  errshim::ScanOptions options;
  options.map_file = GetParam().map_file;
  options.progress_every = 1;
  bool cut = false;
  options.on_progress = [&](std::uint64_t) {
    if (!cut) cut = ::truncate(log.path().c_str(), 0) == 0;
  };
  std::size_t blocks = 0;
  // Parts of 64 KiB: the threads scan a few parts ahead of the first
  // progress report, not the whole log.
  const auto stats = errshim::detail::scan_file_parts(
      log.path(), catalog(), [&](const ScanBlock&) { ++blocks; }, options, GetParam().threads, 64u << 10);
  ASSERT_TRUE(cut);
  EXPECT_GT(stats.bytes, 0u);
  EXPECT_LT(stats.bytes, size);  // what was read before the cut
  EXPECT_GT(blocks, 0u);
  EXPECT_LT(blocks, 400u);  // the whole log has 400
}

INSTANTIATE_TEST_SUITE_P(ScanFile, CutShort,
                         ::testing::Values(CutShortCase{"OneThread", true, 1}, CutShortCase{"TwoThreads", true, 2},
                                           CutShortCase{"MapFileOff", false, 2}),
                         [](const ::testing::TestParamInfo<CutShortCase>& i) { return std::string(i.param.name); });

// Cut mid-line in a part no thread has read yet (they read at most a few
// parts ahead of the first progress report): that part ends without a line
// break, the parts after it are empty, and the scan comes out as a scan of
// the cut log does. (The part's scanner, handed on with its look-back lines
// still in the part's buffer, once read them from the next part's.)
TEST(ScanFile, APartCutShortMidLineGivesWhatAScanOfTheCutLogGives) {
  const BigLog log;
  std::ifstream in(log.path(), std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::size_t cut = 20 * (64u << 10) + 40000;  // well inside part 20: the scan from part 19 stops early in it
  while (text[cut - 1] == '\n') ++cut;
  ASSERT_NE(text[cut - 1], '\n');
  errshim::ScanOptions options;
  options.progress_every = 1;
  bool done = false;
  options.on_progress = [&](std::uint64_t) {
    if (!done) done = ::truncate(log.path().c_str(), static_cast<off_t>(cut)) == 0;
  };
  std::vector<std::string> got;
  const auto stats = errshim::detail::scan_file_parts(
      log.path(), catalog(), [&](const ScanBlock& b) { got.push_back(std::to_string(b.line) + " " + b.text); }, options,
      2, 64u << 10);
  ASSERT_TRUE(done);
  std::vector<std::string> want;
  std::istringstream cut_log(text.substr(0, cut));
  const auto want_stats = errshim::scan(cut_log, log.path(), catalog(), [&](const ScanBlock& b) {
    want.push_back(std::to_string(b.line) + " " + b.text);
  });
  EXPECT_EQ(got, want);
  EXPECT_EQ(stats.bytes, cut);
  EXPECT_EQ(stats.lines, want_stats.lines);
  EXPECT_GT(want.size(), 0u);
}

// A visitor's exception ends a parallel scan too (the workers are stopped
// and joined), and nothing after the throwing block is visited.
TEST(ScanFile, AVisitorExceptionStopsAParallelScan) {
  const BigLog log;
  errshim::ScanOptions options;
  options.threads = 2;
  int calls = 0;
  EXPECT_THROW(errshim::scan_file(
                   log.path(), catalog(),
                   [&](const ScanBlock&) {
                     ++calls;
                     throw std::runtime_error("stop");
                   },
                   options),
               std::runtime_error);
  EXPECT_EQ(calls, 1);
}

// A parallel scan holds what the parts ahead of the one handed out hold,
// whatever the file's length: a part handed out keeps nothing (it kept its
// blocks' storage, the heap growing with the file).
#if defined(__GLIBC__)
TEST(ScanFile, AParallelScanHoldsNoMoreAtTheEndThanNearTheStart) {
  char dir[] = "/tmp/errshim-scanfile-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/many.log";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 40000; ++i) out << "INFO ok\nRuntimeError: x\n";
  }
  const auto in_use = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  std::size_t blocks = 0, early = 0, late = 0;
  const auto stats = errshim::detail::scan_file_parts(
      path, catalog(),
      [&](const ScanBlock&) {
        ++blocks;
        if (blocks == 2000) early = in_use();
        if (blocks == 39000) late = in_use();
      },
      {}, 2, 4096);
  unlink(path.c_str());
  rmdir(dir);
  ASSERT_EQ(stats.blocks, 40000u);
  EXPECT_LT(late, early + (2u << 20)) << "held at block 2000: " << early << " bytes, at block 39000: " << late;
}
#endif

// The same for an output: a block that cannot be rendered (on a worker)
// ends the scan with its exception, and nothing is written after it.
TEST(ScanFile, ARenderExceptionStopsAParallelScan) {
  const BigLog log;
  errshim::ScanOptions options;
  options.threads = 2;
  std::atomic<int> renders{0};
  int writes = 0;
  errshim::BlockOutput output;
  output.render = [&](const ScanBlock& b, std::string& out) {
    ++renders;
    if (b.line == 2) throw std::runtime_error("stop");  // the first block
    out += std::to_string(b.line) + "\n";
  };
  output.write = [&](std::string_view) { ++writes; };
  EXPECT_THROW(errshim::scan_file(log.path(), catalog(), output, options), std::runtime_error);
  EXPECT_EQ(writes, 0);  // the first part's unit holds the failed block
  EXPECT_GT(renders.load(), 0);
}

// A write that fails (a closed pipe) on the worker that rendered the bytes
// ends the scan with its exception in the calling thread: no write after
// it, and the workers stop rendering. (Several scans: whether another unit
// is waiting when the write fails depends on the threads' timing.)
TEST(ScanFile, AWriteExceptionStopsAParallelScan) {
  const BigLog log;
  for (int run = 0; run < 8; ++run) {
    std::atomic<int> renders{0};
    int writes = 0;
    errshim::BlockOutput output;
    output.render = [&](const ScanBlock& b, std::string& out) {
      ++renders;
      out += std::to_string(b.line) + "\n";
    };
    output.write = [&](std::string_view) {
      ++writes;
      throw std::system_error(EPIPE, std::generic_category(), "cannot write standard output");
    };
    try {
      errshim::detail::scan_file_parts(log.path(), catalog(), output, {}, 2, 16u << 10);
      ADD_FAILURE() << "the write's exception did not come out";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), EPIPE);
    }
    EXPECT_EQ(writes, 1) << "run " << run;
    EXPECT_LT(renders.load(), 400) << "run " << run;  // of the log's 400 blocks
  }
}

}  // namespace
