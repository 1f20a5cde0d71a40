// errshim::BlockFollower: the blocks scan() finds, emitted while the log is
// still being written, as soon as each is complete; and errshim::follow()
// over a pipe and a rotated file. Time is a fake clock pushed by hand.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <errshim/catalog.hpp>
#include <errshim/follow.hpp>
#include <errshim/scan.hpp>

namespace {

using errshim::BlockFollower;
using errshim::ScanBlock;
using Clock = BlockFollower::Clock;
using std::chrono::milliseconds;

const Clock::time_point t0{};

std::string id_of(const ScanBlock& b) { return b.diagnosis ? b.diagnosis->id() : "<unmatched>"; }

std::string describe(const ScanBlock& b) {
  return "line " + std::to_string(b.line) + " +" + std::to_string(b.lines) + " " + std::string(to_string(b.kind)) +
         " " + id_of(b) + (b.truncated ? " truncated" : "") + "\n" + b.text;
}

std::vector<ScanBlock> scan_whole(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::vector<ScanBlock> out;
  errshim::scan(in, name, *errshim::Catalog::embedded(), [&](const ScanBlock& b) { out.push_back(b); });
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Collect {
  std::vector<ScanBlock> blocks;
  errshim::BlockVisitor visitor() {
    return [this](const ScanBlock& b) { blocks.push_back(b); };
  }
};

BlockFollower make(Collect& c, errshim::FollowOptions o = {}) {
  return BlockFollower("test.log", errshim::Catalog::embedded(), c.visitor(), o);
}

constexpr const char* kQuantized = "transformers.generation.quantized_cache_unsupported";
const std::string kTraceback =
    "Traceback (most recent call last):\n"
    "  File \"/app/x.py\", line 3, in <module>\n"
    "    generate()\n"
    "ValueError: This model does not support the quantized cache. If you want your model to support quantized "
    "cache, please open an issue and tag @zucchini-nlp.\n";

// ------------------------------------------------------------ same blocks as scan()

struct Split {
  const char* name;
  std::size_t chunk;  // bytes per push; 0: a line per push
};
void PrintTo(const Split& s, std::ostream* os) { *os << s.name; }

class FollowSameAsScan : public ::testing::TestWithParam<Split> {};

// Every sample log, fed in pieces with the clock never reaching the idle
// timeout between them: the blocks, their bounds, text and verdict are the
// ones scan() finds in the whole file.
TEST_P(FollowSameAsScan, SampleLogsInPieces) {
  for (const char* log : {"candle.log", "compose.log", "libtorch.log", "serving.log"}) {
    const std::string text = read_file(std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/scan/" + log);
    const auto expected = scan_whole(text, "test.log");
    ASSERT_FALSE(expected.empty()) << log;
    Collect c;
    BlockFollower f = make(c);
    Clock::time_point now = t0;
    const std::size_t chunk = GetParam().chunk;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t n = chunk > 0 ? std::min(chunk, text.size() - at) : text.find('\n', at) + 1 - at;
      now += milliseconds(1);
      f.push(std::string_view(text).substr(at, n), now);
      f.tick(now);
      at += n;
    }
    f.finish();
    ASSERT_EQ(c.blocks.size(), expected.size()) << log;
    for (std::size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(describe(c.blocks[i]), describe(expected[i])) << log << " block " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Splits, FollowSameAsScan,
                         ::testing::Values(Split{"byte_by_byte", 1}, Split{"seven_bytes", 7}, Split{"line_by_line", 0},
                                           Split{"whole", 1u << 20}),
                         [](const auto& info) { return std::string(info.param.name); });

// ------------------------------------------------------------ when a block is emitted

TEST(Follow, ABlockIsEmittedWhenTheNextRecordArrives) {
  Collect c;
  BlockFollower f = make(c);
  f.push("2026-11-30 10:00:00,001 INFO start\n" + kTraceback, t0);
  EXPECT_TRUE(c.blocks.empty()) << "the message may still have more lines";
  f.push("2026-11-30 10:00:00,002 INFO next request\n", t0 + milliseconds(1));
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_EQ(c.blocks[0].line, 2u);
  EXPECT_EQ(c.blocks[0].lines, 4u);
  EXPECT_EQ(id_of(c.blocks[0]), kQuantized);
  EXPECT_EQ(f.stats().matched, 1u);
}

TEST(Follow, AnOpenBlockIsEmittedAfterTheIdleTimeoutOnly) {
  Collect c;
  errshim::FollowOptions o;
  o.idle = milliseconds(200);
  BlockFollower f = make(c, o);
  f.push(kTraceback, t0);
  ASSERT_TRUE(f.deadline().has_value());
  EXPECT_EQ(*f.deadline(), t0 + milliseconds(200));
  f.tick(t0 + milliseconds(199));
  EXPECT_TRUE(c.blocks.empty());
  f.push("", t0 + milliseconds(150));  // bytes of nothing still count as input
  f.tick(t0 + milliseconds(349));
  EXPECT_TRUE(c.blocks.empty());
  f.tick(t0 + milliseconds(350));
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_EQ(c.blocks[0].lines, 4u);
  EXPECT_FALSE(f.deadline().has_value());
  f.tick(t0 + milliseconds(10000));
  f.finish();
  EXPECT_EQ(c.blocks.size(), 1u) << "emitted once";
}

// A chained traceback bridges blank lines: a blank line after the exception
// line must not emit the first half, however slowly the rest arrives.
TEST(Follow, BlankLinesInsideAChainDoNotEndTheBlock) {
  const std::string chain = kTraceback +
                            "\n"
                            "During handling of the above exception, another exception occurred:\n"
                            "\n"
                            "Traceback (most recent call last):\n"
                            "  File \"/app/x.py\", line 5, in <module>\n"
                            "RuntimeError: request failed\n";
  for (const char* prefix : {"", "worker-1   | "}) {
    Collect c;
    BlockFollower f = make(c);
    Clock::time_point now = t0;
    std::istringstream in(chain);
    for (std::string line; std::getline(in, line);) {
      now += milliseconds(400);
      f.push(prefix + line + "\n", now);
      f.tick(now);
    }
    EXPECT_TRUE(c.blocks.empty()) << prefix;
    f.push(std::string(prefix) + "2026-11-30 10:00:02 INFO next\n", now + milliseconds(1));
    ASSERT_EQ(c.blocks.size(), 1u) << prefix;
    EXPECT_EQ(c.blocks[0].lines, 10u) << prefix;
    EXPECT_EQ(c.blocks[0].kind, errshim::BlockKind::python_traceback);
  }
}

// Three lines after a block's last one always decide it, even lines that
// could be a bridged blank (a bare prefix).
TEST(Follow, ThreePrefixOnlyLinesEndTheBlock) {
  Collect c;
  BlockFollower f = make(c);
  f.push("worker-1   | ValueError: bad value\n", t0);
  f.push("worker-1   | \nworker-1   | \n", t0);
  EXPECT_TRUE(c.blocks.empty());
  f.push("worker-1   | \n", t0);
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_EQ(c.blocks[0].lines, 1u);
}

TEST(Follow, LineNumbersRunAcrossPushesAndRestartWithTheFile) {
  Collect c;
  BlockFollower f = make(c);
  f.push("a\nb\nc\n", t0);
  f.push("RuntimeError: one\nd\n", t0);
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_EQ(c.blocks[0].line, 4u);
  f.push("RuntimeError: two", t0);  // no newline yet: held until the rest or the end
  f.restart_file();
  ASSERT_EQ(c.blocks.size(), 2u);
  EXPECT_EQ(c.blocks[1].line, 6u);
  f.push("x\nRuntimeError: three\n", t0);
  f.finish();
  ASSERT_EQ(c.blocks.size(), 3u);
  EXPECT_EQ(c.blocks[2].line, 2u);
  EXPECT_EQ(f.stats().lines, 8u);
}

// ------------------------------------------------------------ bounds

TEST(Follow, AHugeOpenTracebackIsHeldInBoundedMemory) {
  Collect c;
  errshim::FollowOptions o;
  o.scan.max_block_bytes = 16u << 10;
  BlockFollower f = make(c, o);
  f.push("Traceback (most recent call last):\n", t0);
  const std::string frame = "  File \"/app/recursive.py\", line 7, in f\n    return f(n - 1)\n";
  std::size_t most = 0;
  for (int i = 0; i < 3000; ++i) {
    f.push(frame, t0);
    most = std::max(most, f.pending_bytes());
  }
  EXPECT_LE(most, (16u << 10) + frame.size());
  f.push("RecursionError: maximum recursion depth exceeded\n2026-11-30 10:00:00 INFO next\n", t0);
  ASSERT_EQ(c.blocks.size(), 1u);
  const ScanBlock& b = c.blocks[0];
  EXPECT_EQ(b.line, 1u);
  EXPECT_EQ(b.lines, 6002u);
  EXPECT_TRUE(b.truncated);
  EXPECT_EQ(b.text.rfind("Traceback (most recent call last):\n", 0), 0u);
  EXPECT_NE(b.text.find("lines omitted] ..."), std::string::npos);
  EXPECT_NE(b.text.find("\nRecursionError: maximum recursion depth exceeded"), std::string::npos);
}

TEST(Follow, LogNoiseIsNotHeld) {
  Collect c;
  BlockFollower f = make(c);
  for (int i = 0; i < 5000; ++i) f.push("2026-11-30 10:00:00 INFO request " + std::to_string(i) + " done\n", t0);
  EXPECT_LT(f.pending_bytes(), 2000u);
  f.push("RuntimeError: after the noise\nx\n", t0);
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_EQ(c.blocks[0].line, 5001u);
}

TEST(Follow, AnEndlessLineIsCut) {
  Collect c;
  errshim::FollowOptions o;
  o.scan.max_line_bytes = 1024;
  BlockFollower f = make(c, o);
  f.push("RuntimeError: ", t0);
  for (int i = 0; i < 1000; ++i) f.push(std::string(1000, 'x'), t0);
  EXPECT_LE(f.pending_bytes(), 1025u);
  f.finish();
  ASSERT_EQ(c.blocks.size(), 1u);
  EXPECT_TRUE(c.blocks[0].truncated);
  EXPECT_EQ(c.blocks[0].text.size(), 1024u);
}

// ------------------------------------------------------------ rsyslog's escapes

TEST(Follow, SyslogEscapedNewlinesSplitARecordIntoItsLines) {
  std::string escaped = kTraceback;
  escaped.pop_back();
  for (std::size_t at; (at = escaped.find('\n')) != std::string::npos;) escaped.replace(at, 1, "#012");
  escaped.replace(escaped.find("  File"), 2, "#011");
  for (bool unescape : {true, false}) {
    Collect c;
    errshim::FollowOptions o;
    o.syslog_escapes = unescape;
    BlockFollower f = make(c, o);
    f.push(escaped + "\n", t0);
    f.finish();
    if (unescape) {
      ASSERT_EQ(c.blocks.size(), 1u);
      EXPECT_EQ(c.blocks[0].lines, 4u);
      EXPECT_EQ(c.blocks[0].kind, errshim::BlockKind::python_traceback);
      EXPECT_EQ(id_of(c.blocks[0]), kQuantized);
      EXPECT_NE(c.blocks[0].text.find("\n\tFile"), std::string::npos);
    } else {
      EXPECT_TRUE(c.blocks.empty() || c.blocks[0].kind != errshim::BlockKind::python_traceback);
    }
  }
}

// ------------------------------------------------------------ follow() on real files

TEST(Follow, APipeIsReadToItsEnd) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string log = "INFO x\n" + kTraceback + "INFO y\n" + "RuntimeError: last, no newline";
  std::thread writer([&] {
    for (std::size_t at = 0; at < log.size(); at += 50) {
      const std::string_view piece = std::string_view(log).substr(at, 50);
      if (::write(fds[1], piece.data(), piece.size()) < 0) break;
    }
    ::close(fds[1]);
  });
  // The pipe becomes standard input for the call: follow("-") reads fd 0.
  const int saved = ::dup(STDIN_FILENO);
  ::dup2(fds[0], STDIN_FILENO);
  ::close(fds[0]);
  Collect c;
  BlockFollower f = make(c);
  std::uint64_t confirmed = 0;
  errshim::follow(
      "-", f, [] { return false; }, [&](std::uint64_t n) { confirmed += n; });
  writer.join();
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  ASSERT_EQ(c.blocks.size(), 2u);
  EXPECT_EQ(c.blocks[0].line, 2u);
  EXPECT_EQ(id_of(c.blocks[0]), kQuantized);
  EXPECT_EQ(c.blocks[1].line, 7u);
  EXPECT_EQ(confirmed, 6u) << "lines completed by a newline";
}

// The file is rotated (renamed, a new one created) and later truncated; each
// step happens from the stop() callback once the previous block came out.
TEST(Follow, AFileIsFollowedThroughRotationAndTruncation) {
  const auto dir = std::filesystem::temp_directory_path() / ("errshim-follow-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "serve.log").string();
  const auto write = [&](const std::string& text, std::ios::openmode mode) {
    std::ofstream out(path, std::ios::binary | mode);
    out << text;
  };
  write("INFO a\nRuntimeError: first\nINFO b\n", std::ios::trunc);
  Collect c;
  BlockFollower f("serve.log", errshim::Catalog::embedded(), c.visitor());
  int step = 0, calls = 0;
  const auto stop = [&] {
    if (++calls > 200000) return true;  // the test fails below instead of hanging
    if (step == 0 && c.blocks.size() == 1) {
      std::filesystem::rename(path, path + ".1");
      write("RuntimeError: second\nINFO c\n", std::ios::trunc);
      ++step;
    } else if (step == 1 && c.blocks.size() == 2) {
      write("INFO d\nINFO e\nINFO f\nINFO g\nINFO h\n", std::ios::app);
      ++step;
    } else if (step == 2 && f.stats().lines >= 10) {
      write("RuntimeError: third\nINFO i\n", std::ios::trunc);
      ++step;
    }
    return c.blocks.size() == 3;
  };
  errshim::follow(path, f, stop, {}, milliseconds(1));
  std::filesystem::remove_all(dir);
  ASSERT_EQ(c.blocks.size(), 3u) << "stop() calls: " << calls;
  EXPECT_EQ(c.blocks[0].line, 2u);
  EXPECT_NE(c.blocks[1].text.find("second"), std::string::npos);
  EXPECT_EQ(c.blocks[1].line, 1u) << "the new file counts from 1";
  EXPECT_NE(c.blocks[2].text.find("third"), std::string::npos);
  EXPECT_EQ(c.blocks[2].line, 1u);
}

TEST(Follow, AMissingFileIsAClearError) {
  Collect c;
  BlockFollower f = make(c);
  try {
    errshim::follow("/nonexistent/errshim/x.log", f, [] { return false; });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read '/nonexistent/errshim/x.log'"), std::string::npos) << e.what();
  }
}

}  // namespace
