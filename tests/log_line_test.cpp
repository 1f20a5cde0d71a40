// The log-line grammar (src/grammar/log_line.hpp): its rules case by case, the
// disagreements between the normaliser and the scanner it settled, and the
// normaliser and the scanner reading every line of the test corpora alike.

#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <errshim/catalog.hpp>
#include <errshim/normalize.hpp>
#include <errshim/scan.hpp>

#include "log_line.hpp"

namespace {

namespace ll = errshim::log_line;
using ll::Level;
using ll::Marker;
namespace fs = std::filesystem;

// ------------------------------------------------------------ the grammar's cases

struct Case {
  const char* name;
  const char* line;
  const char* rest;  // what is left after the prefix
  Level level;
  bool record;
  Marker marker;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

class LogLineGrammar : public ::testing::TestWithParam<Case> {};

TEST_P(LogLineGrammar, ReadsThePrefixLevelAndMarker) {
  const Case& c = GetParam();
  const ll::Prefix p = ll::read_prefix(c.line);
  EXPECT_EQ(std::string(c.line).substr(p.length), c.rest);
  EXPECT_EQ(p.level, c.level);
  EXPECT_EQ(p.record, c.record);
  EXPECT_EQ(ll::marker_of(std::string_view(c.line).substr(p.length)), c.marker);
}

// clang-format off
const Case kCases[] = {
  {"IsoTimestampAndLevel", "2026-11-30 10:01:42,123 ERROR boom", "boom", Level::error, true, Marker::none},
  {"IsoTimestampWithZone", "2026-11-30T10:01:42.123Z WARN boom", "boom", Level::other, true, Marker::none},
  {"PanicIsAnErrorLevel", "2026-11-30 10:01:42 PANIC worker lost", "worker lost", Level::error, true, Marker::none},
  {"BarePanicLevel", "PANIC: worker lost", "worker lost", Level::error, true, Marker::none},
  {"BracketedLevelAnyCase", "[2026-11-30 10:01:42] [error] boom", "boom", Level::error, true, Marker::none},
  {"EnvLoggerBracket", "[2026-11-30T10:01:42Z ERROR candle_app] boom", "boom", Level::error, true, Marker::none},
  {"GlogErrorRecord", "E1130 10:01:42.123456  1234 runner.cc:12] boom", "boom", Level::error, true, Marker::none},
  {"GlogInfoRecord", "I1130 10:01:42.123456  1234 runner.cc:12] ok", "ok", Level::other, true, Marker::none},
  {"PythonLoggerGlued", "ERROR:root:boom", "boom", Level::error, true, Marker::none},
  {"LoggerNameAfterTimestamp", "2026-11-30 10:00:00,101 INFO serve - step 100 done", "step 100 done", Level::other,
   true, Marker::none},
  {"TracingTargetPath", "2026-11-30T10:01:42Z ERROR candle_examples::metavoice: boom", "boom", Level::error, true,
   Marker::none},
  {"TracingTargetCrateRoot", "2026-11-30T10:00:00.001Z  INFO candle_server: listening", "listening", Level::other,
   true, Marker::none},
  {"OrdinaryWordAfterLevelStays", "ERROR failed: no device", "failed: no device", Level::error, true, Marker::none},
  {"RankTagIsNoRecord", "[rank0]: Traceback (most recent call last):", "Traceback (most recent call last):",
   Level::none, false, Marker::traceback_header},
  {"RankTagKeepsFrameIndentation", "[rank0]:   File \"/srv/a.py\", line 1, in f", "  File \"/srv/a.py\", line 1, in f",
   Level::none, false, Marker::py_frame},
  {"ComposeTag", "worker-1   | ValueError: bad", "ValueError: bad", Level::none, false, Marker::exception},
  {"RayTag", "(RayWorker pid=123) boom", "boom", Level::none, false, Marker::none},
  {"ErrnoBracketIsMessage", "[Errno 2] No such file", "[Errno 2] No such file", Level::none, false, Marker::none},
  {"WordBracketWithColonIsATag", "[Bug]: RuntimeError: boom", "RuntimeError: boom", Level::none, false,
   Marker::exception},
  {"WordBracketOpeningAMessageStays", "[QConv3D] Unknown quantization scheme", "[QConv3D] Unknown quantization scheme",
   Level::none, false, Marker::none},
  {"BareRustErrorIsNoLevel", "Error: boom", "Error: boom", Level::none, false, Marker::rust_error},
  {"TimeAloneInMessageStays", "12:30:00 is not a valid time", "12:30:00 is not a valid time", Level::none, false,
   Marker::none},
  {"ChainMarker", "The above exception was the direct cause of the following exception:",
   "The above exception was the direct cause of the following exception:", Level::none, false,
   Marker::chain_marker},
  {"CausedBy", "Caused by:", "Caused by:", Level::none, false, Marker::caused_by},
  {"StackBacktrace", "Stack backtrace:", "Stack backtrace:", Level::none, false, Marker::backtrace_header},
  {"RustBacktraceNote", "note: run with `RUST_BACKTRACE=1`", "note: run with `RUST_BACKTRACE=1`", Level::none,
   false, Marker::note},
  {"ColorbtNote", "Run with COLORBT_SHOW_HIDDEN=1 environment variable to disable frame filtering.",
   "Run with COLORBT_SHOW_HIDDEN=1 environment variable to disable frame filtering.", Level::none, false,
   Marker::note},
  {"PanicLine", "thread 'main' panicked at src/main.rs:10:5:", "thread 'main' panicked at src/main.rs:10:5:",
   Level::none, false, Marker::panic},
  {"TerminateQuoted", "terminate called after throwing an instance of 'c10::Error'",
   "terminate called after throwing an instance of 'c10::Error'", Level::none, false, Marker::terminate},
  {"TerminateUnquoted", "terminate called after throwing an instance of std::bad_alloc",
   "terminate called after throwing an instance of std::bad_alloc", Level::none, false, Marker::terminate},
  {"LibcxxAbi", "libc++abi: terminating due to uncaught exception of type c10::Error: boom",
   "libc++abi: terminating due to uncaught exception of type c10::Error: boom", Level::none, false,
   Marker::terminate},
  {"C10Raised", "Exception raised from f at a.cpp:1 (most recent call first):",
   "Exception raised from f at a.cpp:1 (most recent call first):", Level::none, false, Marker::c10_raised},
  {"C10Frame", "frame #0: c10::Error::Error() + 0x96", "frame #0: c10::Error::Error() + 0x96", Level::none, false,
   Marker::c10_frame},
  {"RustFrame", "   3: candle_core::tensor::Tensor::matmul", "   3: candle_core::tensor::Tensor::matmul",
   Level::none, false, Marker::rust_frame},
  {"CppExceptionLine", "c10::Error: boom", "c10::Error: boom", Level::none, false, Marker::exception},
  {"DottedExceptionLine", "torch.OutOfMemoryError: CUDA out of memory", "torch.OutOfMemoryError: CUDA out of memory",
   Level::none, false, Marker::exception},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(LogLine, LogLineGrammar, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(LogLine, EscapeSequencesEndWhereTheirKindSays) {
  const std::string csi = "\x1b[1;31mred";
  EXPECT_EQ(ll::escape_end(csi, 0), csi.find('r'));
  const std::string osc = "\x1b]8;;http://x\x1b\\link";
  EXPECT_EQ(ll::escape_end(osc, 0), osc.find("link"));
  const std::string charset = "\x1b(Bplain";
  EXPECT_EQ(ll::escape_end(charset, 0), charset.find("plain"));
  EXPECT_EQ(ll::escape_end("\x1b", 0), 1u);
}

// ------------------------------------------------------------ settled disagreements

std::vector<std::string> segment_texts(std::string_view text) {
  std::vector<std::string> out;
  for (const errshim::Segment& s : errshim::normalize(text).segments) out.push_back(s.text + "|" + s.exception_class);
  return out;
}

// The scanner took PANIC for an error level, the normaliser kept it in the message.
TEST(LogLine, NormaliserStripsAPanicLevelAsTheScannerReadsIt) {
  EXPECT_EQ(segment_texts("2026-11-30 10:01:42 PANIC worker 3 lost its device"),
            std::vector<std::string>{"worker 3 lost its device|"});
  EXPECT_EQ(ll::scanner_class("2026-11-30 10:01:42 PANIC worker 3 lost its device").level, Level::error);
}

struct Blocks {
  std::vector<std::size_t> lines;
  std::vector<std::uint64_t> first;
};

Blocks scan_blocks(const std::string& log) {
  Blocks out;
  std::istringstream in(log);
  errshim::scan(in, "x.log", *errshim::Catalog::embedded(), [&](const errshim::ScanBlock& b) {
    out.lines.push_back(b.lines);
    out.first.push_back(b.line);
  });
  return out;
}

// The normaliser knew color-backtrace's note, the scanner took it for message text.
TEST(LogLine, ScannerEndsARustErrorAtTheColorbtNote) {
  const Blocks b = scan_blocks(
      "Error: generation failed\n"
      "Run with COLORBT_SHOW_HIDDEN=1 environment variable to disable frame filtering.\n"
      "serving the next request\n");
  ASSERT_EQ(b.lines.size(), 1u);
  EXPECT_EQ(b.lines[0], 2u);
}

// The scanner opened a block on an unquoted class, the normaliser did not read it.
TEST(LogLine, NormaliserReadsATerminateLineWithAnUnquotedClass) {
  EXPECT_EQ(segment_texts("terminate called after throwing an instance of std::runtime_error\n"
                          "  what():  CUDA driver version is insufficient\n"),
            std::vector<std::string>{"CUDA driver version is insufficient|std::runtime_error"});
}

// The scanner opened a block on "c10::Error: msg", the normaliser kept the class in the text.
TEST(LogLine, NormaliserReadsACppQualifiedExceptionLine) {
  EXPECT_EQ(segment_texts("c10::Error: boom"), std::vector<std::string>{"boom|c10::Error"});
}

// The scanner stripped a crate-root tracing target and a plain logger name
// after a timestamp; the normaliser kept them in the message.
TEST(LogLine, NormaliserStripsTheLoggerNamesTheScannerStrips) {
  EXPECT_EQ(segment_texts("2026-11-30T10:00:00.001Z ERROR candle_server: model not loaded"),
            std::vector<std::string>{"model not loaded|"});
  EXPECT_EQ(segment_texts("2026-11-30 10:00:00,101 ERROR serve - model not loaded"),
            std::vector<std::string>{"model not loaded|"});
}

// The scanner opened a traceback on a header after other text (a progress
// bar, DataLoader's "Original Traceback"); the normaliser read the header only
// on a line of its own.
TEST(LogLine, NormaliserReadsATracebackHeaderAfterOtherText) {
  EXPECT_EQ(segment_texts("loading 50%|#####     | 1/2 [00:01<00:01]Traceback (most recent call last):\n"
                          "worker.Stopped: the batch was cancelled\n"),
            std::vector<std::string>{"the batch was cancelled|worker.Stopped"});
  // With no exception after it, the line stays message text.
  EXPECT_EQ(segment_texts("Original Traceback (most recent call last):\nnothing else"),
            std::vector<std::string>{"Original Traceback (most recent call last):\nnothing else|"});
}

// ------------------------------------------------------------ every corpus line

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every string scalar of a YAML file (messages, examples, pasted logs).
void yaml_strings(const YAML::Node& n, std::vector<std::string>& out) {
  if (n.IsScalar()) {
    out.push_back(n.as<std::string>());
  } else if (n.IsSequence() || n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (n.IsMap())
        yaml_strings(it->second, out);
      else
        yaml_strings(*it, out);
    }
  }
}

struct Corpus {
  std::string where;
  std::string text;
};

// The string literals of a test source (normalize_test's and scan_test's
// inputs), escapes decoded; a literal split across source lines is read
// piece by piece, which still gives whole lines where its pieces end in "\n".
std::vector<std::string> string_literals(const std::string& src) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '/' && i + 1 < src.size() && src[i + 1] == '/') {  // a comment: to the line end
      i = src.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    if (src[i] == '\'') {  // a character literal: skip it
      i += (i + 1 < src.size() && src[i + 1] == '\\') ? 3 : 2;
      continue;
    }
    if (src[i] != '"') continue;
    std::string lit;
    for (++i; i < src.size() && src[i] != '"'; ++i) {
      if (src[i] != '\\' || i + 1 >= src.size()) {
        lit += src[i];
        continue;
      }
      const char e = src[++i];
      if (e == 'n')
        lit += '\n';
      else if (e == 't')
        lit += '\t';
      else if (e == 'r')
        lit += '\r';
      else if (e == '0')
        lit += '\0';
      else if (e == 'x' && i + 2 < src.size()) {
        lit += static_cast<char>(std::stoi(src.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else
        lit += e;
    }
    out.push_back(std::move(lit));
  }
  return out;
}

std::vector<Corpus> corpora() {
  std::vector<Corpus> out;
  const fs::path root(ERRSHIM_SOURCE_DIR);
  for (const char* dir : {"tests/data/scan", "tests/data/golden/cli"}) {
    for (const auto& e : fs::directory_iterator(root / dir))
      if (e.is_regular_file()) out.push_back({e.path().string(), read_file(e.path())});
  }
  for (const char* test : {"tests/normalize_test.cpp", "tests/scan_test.cpp"})
    for (std::string& lit : string_literals(read_file(root / test))) out.push_back({test, std::move(lit)});
  std::vector<fs::path> yamls;
  for (const char* dir : {"tests/data/realworld", "tests/data/corpus"})
    for (const auto& e : fs::directory_iterator(root / dir))
      if (e.path().extension() == ".yaml") yamls.push_back(e.path());
  const fs::path shared = fs::path(ERRSHIM_SHARED_DIR) / "corpus";
  std::error_code ec;
  if (fs::is_directory(shared, ec))
    for (const auto& e : fs::directory_iterator(shared, ec))
      if (e.path().extension() == ".yaml") yamls.push_back(e.path());
  for (const fs::path& p : yamls) {
    std::vector<std::string> strings;
    yaml_strings(YAML::LoadFile(p.string()), strings);
    for (std::string& s : strings) out.push_back({p.string(), std::move(s)});
  }
  return out;
}

std::string show(const ll::LineClass& c) {
  return "prefix=" + std::to_string(c.prefix) + " level=" + std::to_string(static_cast<int>(c.level)) +
         " record=" + std::to_string(c.record) + " marker=" + std::to_string(static_cast<int>(c.marker));
}

TEST(LogLine, NormaliserAndScannerClassifyEveryCorpusLineAlike) {
  std::size_t lines = 0, from_tests = 0, marked = 0, prefixed = 0;
  for (const Corpus& c : corpora()) {
    for (const std::string& line : lines_of(c.text)) {
      const ll::LineClass n = ll::normaliser_class(line);
      const ll::LineClass s = ll::scanner_class(line);
      EXPECT_EQ(n, s) << c.where << ": " << line << "\n  normaliser " << show(n) << "\n  scanner    " << show(s);
      ++lines;
      from_tests += c.where.size() > 4 && c.where.compare(c.where.size() - 4, 4, ".cpp") == 0;
      marked += n.marker != Marker::none;
      prefixed += n.prefix > 0;
    }
  }
  // The corpora are there and hold the lines this is about.
  EXPECT_GT(lines, 5000u);
  EXPECT_GT(from_tests, 300u);
  EXPECT_GT(marked, 500u);
  EXPECT_GT(prefixed, 200u);
}

}  // namespace
