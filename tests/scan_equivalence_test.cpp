// The fast scanner (literal search, look-back replay, parallel parts) gives
// exactly what the line-by-line scanner gave (tests/scan_reference.hpp): the
// same blocks in the same order, field for field, and the same counts, on
// the test corpora and on generated logs.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <errshim/catalog.hpp>
#include <errshim/scan.hpp>

#include "scan_candidates.hpp"
#include "scan_detail.hpp"
#include "scan_reference.hpp"

namespace {

using errshim::ScanBlock;
using errshim::ScanOptions;
using errshim::ScanStats;

const errshim::Catalog& catalog() { return *errshim::Catalog::embedded(); }

// Everything a block carries, as one comparable string.
std::string describe(const ScanBlock& b) {
  std::string out = errshim::to_json(b);
  out += b.truncated ? " truncated" : " whole";
  if (b.diagnosis) out += " text=" + b.text;
  for (const std::string& p : b.problems) out += " problem=" + p;
  return out;
}

struct Result {
  std::vector<std::string> blocks;
  ScanStats stats;
};

std::string stats_of(const ScanStats& s) {
  return std::to_string(s.bytes) + "B " + std::to_string(s.lines) + "L " + std::to_string(s.blocks) + "b " +
         std::to_string(s.matched) + "m";
}

Result reference(const std::string& log, const ScanOptions& options) {
  Result r;
  std::istringstream in(log);
  r.stats = errshim::reference::scan_reference(
      in, "x.log", catalog(), [&](const ScanBlock& b) { r.blocks.push_back(describe(b)); }, options);
  return r;
}

Result fast_stream(const std::string& log, const ScanOptions& options) {
  Result r;
  std::istringstream in(log);
  r.stats = errshim::scan(
      in, "x.log", catalog(), [&](const ScanBlock& b) { r.blocks.push_back(describe(b)); }, options);
  return r;
}

// A temporary file named x.log in its own directory, so blocks carry the
// same file name as the stream scans'.
class TempLog {
 public:
  explicit TempLog(const std::string& text) {
    char dir[] = "/tmp/errshim-scan-XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/x.log";
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempLog() {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

Result fast_file(const TempLog& file, const ScanOptions& options, unsigned threads, std::size_t part_bytes) {
  Result r;
  // Block file names are the path; compare them as the stream's "x.log".
  r.stats = errshim::detail::scan_file_parts(
      file.path(), catalog(),
      [&](const ScanBlock& b) {
        ScanBlock c = b;
        EXPECT_EQ(c.file, file.path());
        c.file = "x.log";
        r.blocks.push_back(describe(c));
      },
      options, threads, part_bytes);
  return r;
}

// A scan through BlockOutput: each block's description and a separator,
// rendered (on the workers when parallel) and written in pieces.
struct Written {
  std::string bytes;
  std::size_t writes = 0;
  ScanStats stats;
};

constexpr char kEndOfBlock = '\x1e';

errshim::BlockOutput output_to(Written& w, const std::string& path) {
  errshim::BlockOutput out;
  out.render = [path](const ScanBlock& b, std::string& bytes) {
    ScanBlock c = b;
    if (c.file == path) c.file = "x.log";
    bytes += describe(c);
    bytes += kEndOfBlock;
  };
  auto inside = std::make_shared<std::atomic<int>>(0);
  out.write = [&w, inside](std::string_view bytes) {
    // One call at a time (from the scanning threads when parallel), whole
    // blocks only, never an empty write.
    EXPECT_EQ(inside->fetch_add(1), 0) << "two writes at once";
    EXPECT_FALSE(bytes.empty());
    EXPECT_EQ(bytes.empty() ? '\0' : bytes.back(), kEndOfBlock);
    w.bytes += bytes;
    ++w.writes;
    inside->fetch_sub(1);
  };
  return out;
}

Written written_stream(const std::string& log, const ScanOptions& options) {
  Written w;
  std::istringstream in(log);
  w.stats = errshim::scan(in, "x.log", catalog(), output_to(w, "x.log"), options);
  return w;
}

Written written_file(const TempLog& file, const ScanOptions& options, unsigned threads, std::size_t part_bytes) {
  Written w;
  w.stats =
      errshim::detail::scan_file_parts(file.path(), catalog(), output_to(w, file.path()), options, threads, part_bytes);
  return w;
}

void expect_same_bytes(const Result& want, const Written& got, const std::string& how) {
  EXPECT_EQ(stats_of(want.stats), stats_of(got.stats)) << how;
  std::string bytes;
  for (const std::string& b : want.blocks) bytes += b + kEndOfBlock;
  EXPECT_EQ(bytes, got.bytes) << how;
}

void expect_same(const Result& want, const Result& got, const std::string& how) {
  EXPECT_EQ(stats_of(want.stats), stats_of(got.stats)) << how;
  ASSERT_EQ(want.blocks.size(), got.blocks.size()) << how;
  for (std::size_t i = 0; i < want.blocks.size(); ++i)
    EXPECT_EQ(want.blocks[i], got.blocks[i]) << how << " block " << i;
}

// The stream scan, the file scan on one thread, and parallel scans with splits
// every few hundred bytes, all against the reference.
void expect_equivalent(const std::string& log, const ScanOptions& options, const std::string& name) {
  const Result want = reference(log, options);
  expect_same(want, fast_stream(log, options), name + " stream");
  const TempLog file(log);
  expect_same(want, fast_file(file, options, 1, 0), name + " file");
  for (const std::size_t part : {std::size_t{97}, std::size_t{600}, std::size_t{4096}})
    for (const unsigned threads : {2u, 3u})
      expect_same(want, fast_file(file, options, threads, part),
                  name + " parallel j" + std::to_string(threads) + " part " + std::to_string(part));
  // Rendered and written instead of visited: the same bytes in log order.
  expect_same_bytes(want, written_stream(log, options), name + " stream output");
  expect_same_bytes(want, written_file(file, options, 1, 0), name + " file output");
  for (const std::size_t part : {std::size_t{97}, std::size_t{600}})
    expect_same_bytes(want, written_file(file, options, 2, part),
                      name + " parallel output part " + std::to_string(part));
  // Without the verdict cache: the cache changes nothing.
  ScanOptions uncached = options;
  uncached.match_cache_entries = 0;
  expect_same(want, fast_file(file, uncached, 2, 600), name + " parallel uncached");
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string source(const std::string& rel) { return std::string(ERRSHIM_SOURCE_DIR) + "/" + rel; }

const std::vector<std::string>& scan_logs() {
  static const std::vector<std::string> logs = {
      read(source("tests/data/scan/serving.log")), read(source("tests/data/scan/candle.log")),
      read(source("tests/data/scan/libtorch.log")), read(source("tests/data/scan/compose.log"))};
  return logs;
}

// The pasted error output of the real-report corpus.
std::vector<std::string> realworld_texts() {
  std::vector<std::string> out;
  for (const char* lib : {"candle", "pytorch", "transformers"}) {
    const YAML::Node doc = YAML::LoadFile(source(std::string("tests/data/realworld/") + lib + ".yaml"));
    for (const auto& c : doc["cases"]) out.push_back(c["text"].as<std::string>());
  }
  return out;
}

// The catalog's example messages: the texts the normaliser's tests and
// the catalog checks feed it.
std::vector<std::string> catalog_examples() {
  std::vector<std::string> out;
  for (const auto& e : catalog().entries()) {
    for (const auto& m : e->match_examples) out.push_back(m.text);
    for (const auto& m : e->no_match_examples) out.push_back(m.text);
  }
  return out;
}

TEST(ScanEquivalence, SameBlocksOnTheScanCorpus) {
  for (std::size_t i = 0; i < scan_logs().size(); ++i) {
    expect_equivalent(scan_logs()[i], {}, "scan log " + std::to_string(i));
    ScanOptions tight;
    tight.max_line_bytes = 300;
    tight.max_block_bytes = 4096;
    expect_equivalent(scan_logs()[i], tight, "scan log tight " + std::to_string(i));
  }
}

// Each text scanned alone (stream), then all of them as one log, `gap`
// between them (every path).
void expect_equivalent_texts(const std::vector<std::string>& texts, const std::string& gap, const std::string& name) {
  std::string all;
  for (const auto& t : texts) {
    all += t + gap;
    expect_same(reference(t, {}), fast_stream(t, {}), t.substr(0, 80));
  }
  expect_equivalent(all, {}, name + ", concatenated");
}

TEST(ScanEquivalence, SameBlocksOnTheRealWorldCorpus) {
  const auto texts = realworld_texts();
  ASSERT_GT(texts.size(), 50u);
  expect_equivalent_texts(texts, "\n", "realworld");
}

TEST(ScanEquivalence, SameBlocksOnTheCatalogExamples) {
  const auto texts = catalog_examples();
  ASSERT_GT(texts.size(), 100u);
  expect_equivalent_texts(texts, "\n\n", "catalog examples");
}

// ------------------------------------------------------------ generated logs

// Lines that sit on the scanner's decisions: markers in noise, near-markers,
// continuation shapes, colour codes, carriage returns.
const std::vector<std::string> kTricky = {
    "",
    "   ",
    "    at some_function (file.py:12)",
    "\tindented with a tab",
    "loading shards 3/8",
    "a paragraph line above a c10 message",
    "Error: something failed",
    "Error:",
    "ValueError: bad value",
    "torch.OutOfMemoryError: CUDA out of memory.",
    "c10::Error: boom",
    "my.pkg.CustomException: went wrong",
    "Caused by:",
    "    0: candle_core::error::Error::bt",
    "Stack backtrace:",
    "stack backtrace:",
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    "thread 'main' panicked at src/main.rs:12:5:",
    "thread 'tokio-runtime-worker' panicked at 'oops', src/lib.rs:1:1",
    "terminate called after throwing an instance of 'c10::Error'",
    "libc++abi: terminating due to uncaught exception of type std::runtime_error: x",
    "  what():  Expected all tensors to be on the same device",
    "Exception raised from check at aten/src/ATen/native/X.cpp:12 (most recent call first):",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x6c (0x7f in libc10.so)",
    "frame #12: <unknown function> + 0x1234",
    "<omitting python frames>",
    "Traceback (most recent call last):",
    "  File \"/app/server.py\", line 42, in handle",
    "    raise ValueError('x')",
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
    "INFO error_rate=0.0 stderr redirected, no interrupt",
    "DEBUG the traceback printer is off; fatalism and panicky terminates are words",
    "WARNING: Error: this is below error level",
    "WARN ValueError: logged as a warning",
    "ERROR:root:request failed",
    "ERROR server - request failed: Error: inner",
    "2026-11-30 10:01:42,123 ERROR app - boom",
    "2026-11-30 10:01:42,123 CRITICAL app - boom",
    "[2026-11-30T10:01:42Z ERROR candle_app::model] weight missing",
    "[error] lower case level",
    "[Fatal] mixed case level",
    "E1130 10:01:42.123456 12 file.cc:3] glog error",
    "F1130 10:01:42.123456 12 file.cc:3] glog fatal",
    "I1130 10:01:42.123456 12 file.cc:3] glog info",
    "E123 not glog",
    "W1130 10:01:42.123456 12 file.cc:3] glog warning",
    "\x1b[31mERROR\x1b[0m coloured level",
    "\x1b[32mINFO\x1b[0m coloured noise",
    "Trace\x1b[0mback (most recent call last):",
    "50%|#####     |\r100%|##########|",
    "progress\rERROR after a carriage return",
    "ERROR before a carriage return\rprogress",
    "progress\rE1130 10:01:42.123456 12 file.cc:3] glog after CR",
    "worker-1  | INFO ready",
    "worker-1  | Traceback (most recent call last):",
    "worker-1  |   File \"/app/x.py\", line 3, in <module>",
    "worker-1  | RuntimeError: compose error",
    "(pid=123) ERROR ray worker failed",
    "Python\x00NUL byte line",
};

const std::vector<std::string> kNoise = {
    "2026-11-30 10:00:01,123 INFO server - handled request id=42 in 12ms",
    "2026-11-30 10:00:01,124 DEBUG cache - hit ratio 0.93",
    "[2026-11-30T10:00:01Z INFO app] tick 1234",
    "I1130 10:00:01.123 12 server.cc:3] batch done",
    "GET /v1/completions 200 12ms tokens=123",
    "worker-2  | INFO generated 64 tokens",
};

std::string line_prefix(std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0: return "worker-" + std::to_string(rng() % 3) + "  | ";
    case 1: return "2026-11-30 10:0" + std::to_string(rng() % 10) + ":4" + std::to_string(rng() % 10) + ",123 ";
    case 2: return "[rank" + std::to_string(rng() % 2) + "]: ";
    default: return "";
  }
}

std::uint64_t k_line(std::mt19937_64& rng) { return 1 + rng() % 999; }

struct Generated {
  std::string text;
  ScanOptions options;
};

Generated generate(std::uint64_t seed, double error_share) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Generated g;
  if (seed % 2 == 1) {
    g.options.max_line_bytes = 300;
    g.options.max_block_bytes = 4096;
  }
  const std::size_t max_line = std::max<std::size_t>(g.options.max_line_bytes, 256);
  const bool crlf = seed % 3 == 0;
  const auto& logs = scan_logs();
  std::vector<std::string> lines;
  const std::size_t items = 200 + rng() % 400;
  for (std::size_t i = 0; i < items; ++i) {
    const double r = u(rng);
    if (r < error_share) {
      // A slice of a corpus log: blocks, their edges and their prefixes.
      std::vector<std::string> src;
      std::istringstream in(logs[rng() % logs.size()]);
      for (std::string l; std::getline(in, l);) src.push_back(l);
      const std::size_t from = rng() % src.size(), n = 1 + rng() % 30;
      const std::string prefix = rng() % 4 == 0 ? line_prefix(rng) : "";
      for (std::size_t k = from; k < std::min(src.size(), from + n); ++k) lines.push_back(prefix + src[k]);
    } else if (r < error_share * 2) {
      lines.push_back(line_prefix(rng) + kTricky[rng() % kTricky.size()]);
    } else if (r < error_share * 2.5) {
      // A c10 message printed raw: a paragraph of 1-12 plain lines (the
      // look-back takes at most 8), sometimes broken by a blank or a record.
      const std::size_t n = 1 + rng() % 12;
      for (std::size_t k = 0; k < n; ++k) {
        const auto pick = rng() % 10;
        lines.push_back(pick == 0 ? "" : pick == 1 ? kNoise[0] : "paragraph line " + std::to_string(k));
      }
      lines.push_back(std::string(rng() % 3 == 0 ? "[rank0]: " : "") +
                      "Exception raised from check at aten/src/X.cpp:" + std::to_string(k_line(rng)) +
                      " (most recent call first):");
      lines.push_back("frame #0: c10::Error::Error + 0x6c (0x7f in libc10.so)");
    } else if (r < error_share * 2.5 + 0.01) {
      // Lines at the size limit, a marker just inside or just past it.
      const std::size_t len = max_line - 8 + rng() % 16;
      std::string l(len, 'x');
      const std::string marker = rng() % 2 ? "Error: y" : "Exception raised from z";
      l.replace(len - std::min(len, marker.size() + rng() % 12), std::min(len, marker.size()), marker);
      if (rng() % 2) l.replace(0, 6, "ERROR ");
      lines.push_back(l);
    } else {
      lines.push_back(kNoise[rng() % kNoise.size()]);
    }
  }
  for (const std::string& l : lines) g.text += l + (crlf ? "\r\n" : "\n");
  if (seed % 4 == 1) {  // no newline at the end
    while (!g.text.empty() && (g.text.back() == '\n' || g.text.back() == '\r')) g.text.pop_back();
  }
  return g;
}

class GeneratedLog : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(GeneratedLog, SameBlocksAsTheReference) {
  for (const double share : {0.02, 0.15, 0.45}) {
    const Generated g = generate(GetParam() * 7 + static_cast<std::uint64_t>(share * 100), share);
    expect_equivalent(g.text, g.options, "seed " + std::to_string(GetParam()) + " share " + std::to_string(share));
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, GeneratedLog, ::testing::Range<std::uint64_t>(1, 9));

// Lines longer than the 1 MiB read buffer: their head is classified, the
// rest skipped, on both sides of the buffer boundary.
TEST(ScanEquivalence, SameBlocksAcrossReadBufferBoundaries) {
  std::string log;
  for (int i = 0; i < 3; ++i) {
    log += "ValueError: before " + std::to_string(i) + "\n";
    log += "ERROR " + std::string((1u << 20) + 37u * static_cast<unsigned>(i), 'y') + " Error: tail\n";
    log += std::string(200000, 'n') + "\n";
    log += "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nKeyError: 'k'\n";
  }
  log += std::string((1u << 20) - 3, 'z') + "\nRuntimeError: last";
  expect_equivalent(log, {}, "long lines");
}

// A file is read a chunk of 256 KiB at a time, and split for threads into
// parts of 4 MiB: blocks across a part's end and a read's end at the
// default sizes come out as the line-by-line scanner gives them.
TEST(ScanEquivalence, SameBlocksAcrossTheDefaultReadsAndParts) {
  const std::string noise = "2026-11-30 10:00:00,001 INFO server - a line of ordinary noise\n";
  const std::string block =
      "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\n"
      "ValueError: kv_cache_enabled=true is not supported\n";
  // A traceback far longer than the head a part keeps for the scan coming
  // from the part before, which must read on past it.
  std::string long_block = "Traceback (most recent call last):\n";
  for (int i = 0; i < 2000; ++i) long_block += "  File \"a.py\", line " + std::to_string(i + 1) + ", in f\n    g()\n";
  long_block += "ValueError: kv_cache_enabled=true is not supported\n";
  std::string log;
  for (const std::size_t boundary : {std::size_t{256} << 10, std::size_t{4} << 20, std::size_t{8} << 20}) {
    const std::string& b = boundary == (std::size_t{8} << 20) ? long_block : block;
    while (log.size() + noise.size() < boundary - b.size() / 2) log += noise;
    log += b;  // across the read's and the part's nominal end
  }
  while (log.size() < (9u << 20)) log += noise;
  log += "RuntimeError: the last line, without a newline";
  const Result want = reference(log, {});
  ASSERT_EQ(want.blocks.size(), 4u);
  const TempLog file(log);
  expect_same(want, fast_file(file, {}, 1, 0), "reads, one thread");
  expect_same(want, fast_file(file, {}, 2, 0), "default parts, two threads");
  expect_same_bytes(want, written_file(file, {}, 2, 0), "default parts, two threads, output");
}

// ------------------------------------------------------------ the kernels

// Every kernel finds the same first candidate and counts the same newlines,
// at every alignment, on text dense with markers, near-markers and breaks.
TEST(ScanCandidates, KernelsAgreeWithTheScalarDefinition) {
  using errshim::detail::CandidateKernel;
  const std::vector<std::string> pieces = {
      "err",  "eRr",       "er",        "fatal",     "FATAL",    "fata",      "crItical",  "critica", "panic",
      "pani", "TraceBack", "traceback", "exception", "exceptio", "Terminate", "e\nr",      "\x1b",    "\nE1",
      "\rF9", "\nE",       "E1",        "\n",        "x",        " ",         "execution", "\r"};
  std::mt19937_64 rng(5);
  for (int round = 0; round < 400; ++round) {
    std::string text;
    const std::size_t target = rng() % 300;
    while (text.size() < target) {
      if (rng() % 3 == 0) {
        text += pieces[rng() % pieces.size()];
      } else {
        text += static_cast<char>('a' + rng() % 26);
      }
    }
    for (std::size_t from = 0; from <= std::min<std::size_t>(text.size(), 40); ++from) {
      const char* b = text.data() + from;
      const char* e = text.data() + text.size();
      std::uint64_t want_nl = 0;
      const std::size_t want = errshim::detail::find_candidate(b, e, want_nl, CandidateKernel::scalar);
      for (const CandidateKernel k : {CandidateKernel::sse2, CandidateKernel::avx2, CandidateKernel::best}) {
        if (!errshim::detail::candidate_kernel_available(k)) continue;
        std::uint64_t nl = 0;
        EXPECT_EQ(errshim::detail::find_candidate(b, e, nl, k), want) << static_cast<int>(k) << " from " << from;
        EXPECT_EQ(nl, want_nl) << static_cast<int>(k) << " from " << from;
      }
    }
  }
}

TEST(ScanCandidates, FindsEachMarkerInAnyCaseAndNothingInPlainNoise) {
  using errshim::detail::find_candidate;
  const std::string noise = "2026-11-30 10:00:01,123 INFO server - handled request id=42 in 12ms\n";
  std::string text;
  for (int i = 0; i < 50; ++i) text += noise;
  std::uint64_t nl = 0;
  EXPECT_EQ(find_candidate(text.data(), text.data() + text.size(), nl), text.size());
  EXPECT_EQ(nl, 50u);
  for (const std::string marker :
       {"ERROR", "Error", "fatal", "CRITICAL", "panicked", "Traceback", "Exception", "terminate", "\x1b[0m", "E1130"}) {
    const std::string t = text + marker + " tail\n" + text;
    EXPECT_EQ(find_candidate(t.data(), t.data() + t.size(), nl), text.size()) << marker;
    EXPECT_EQ(nl, 50u) << marker;
  }
}

}  // namespace
