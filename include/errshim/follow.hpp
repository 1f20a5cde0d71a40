// Streaming scan: error blocks out of a log that is still being written.
//
//   errshim::BlockFollower f("serve.log", errshim::Catalog::embedded(),
//                            [](const errshim::ScanBlock& b) { puts(errshim::to_json(b).c_str()); });
//   f.push(bytes, Clock::now());   // whatever arrived: any cut, lines end at '\n'
//   f.tick(Clock::now());          // when nothing arrived: emits a block idle for FollowOptions::idle
//   f.finish();                    // end of input
//
// A block is emitted once no later line can change it: when a line the
// block does not take has arrived (the block ends before it), when the input
// has been idle for FollowOptions::idle, or at the end. Blocks, their text
// and diagnoses are those scan() finds in the same lines; line numbers count
// from the first byte pushed (from 1 again after restart_file()).
//
// Memory is bounded: the lines held are those of the block still open (its
// head and its last lines past ScanOptions::max_block_bytes, as scan() keeps
// them) and a few lines before it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "errshim/catalog.hpp"
#include "errshim/scan.hpp"

namespace errshim {

struct FollowOptions {
  ScanOptions scan;  // context, max_line_bytes, max_block_bytes (on_progress is not used)
  // A block still open when no byte has arrived for this long is emitted as
  // it stands: a log that stops after a traceback still reports it.
  std::chrono::milliseconds idle{500};
  // rsyslog escapes control characters on receipt ("#012" for a newline), so
  // a multi-line record (a traceback logged by Python's SysLogHandler)
  // arrives as one line. With this set, "#012" splits it into its lines
  // again and "#011" is a tab.
  bool syslog_escapes = false;
};

class BlockFollower {
 public:
  using Clock = std::chrono::steady_clock;

  BlockFollower(std::string file, CatalogPtr catalog, BlockVisitor visit, FollowOptions options = {});

  // Takes bytes as they arrive; emits the blocks they complete. Returns the
  // number of lines ('\n'-terminated) the bytes completed.
  std::uint64_t push(std::string_view bytes, Clock::time_point now);
  // Emits the open block when the input has been idle long enough.
  void tick(Clock::time_point now);
  // When tick() would next emit something; empty when nothing waits.
  std::optional<Clock::time_point> deadline() const;
  // End of input: a last line without '\n' is a line, every block is emitted.
  void finish();
  // The input starts again from its first line (a rotated or truncated file):
  // finish(), then number lines from 1.
  void restart_file();

  const ScanStats& stats() const noexcept { return stats_; }
  // Bytes held: the lines of a block that may still grow, a line not ended yet.
  std::size_t pending_bytes() const noexcept { return pending_bytes_ + partial_.size(); }

 private:
  struct Line {
    std::string text;
    std::uint64_t number;  // in its file, 1-based
    bool cut;  // longer than max_line_bytes: the rest was skipped
  };

  void add_line(std::string text, bool cut);
  void rescan(bool final);
  bool surely_closed(const ScanBlock& block, std::size_t last) const;
  void emit(ScanBlock block, std::size_t first, std::size_t last);
  void bound();

  std::string file_;
  CatalogPtr catalog_;
  BlockVisitor visit_;
  FollowOptions options_;
  ScanStats stats_;
  std::deque<Line> pending_;
  std::size_t pending_bytes_ = 0;
  std::string partial_;  // bytes of a line whose '\n' has not arrived
  bool partial_cut_ = false;
  std::uint64_t next_line_ = 1;
  bool open_ = false;  // the last scan ended inside a block: it may still grow
  Clock::time_point last_input_{};
};

// Follows `path` ("-": standard input) into `follower` until stop() returns
// true or, for a pipe, a terminal or standard input, at its end; a regular
// file is waited on for more bytes and reopened from its start when it is
// replaced (a new inode at `path`: log rotation) or truncated. Polls `path`
// and stop() at least every `poll` interval. Calls on_lines with the number
// of lines each read completed (for omprog confirmations). Throws
// std::runtime_error when `path` cannot be opened or read.
void follow(const std::string& path, BlockFollower& follower, const std::function<bool()>& stop,
            const std::function<void(std::uint64_t lines)>& on_lines = {},
            std::chrono::milliseconds poll = std::chrono::milliseconds(100));

}  // namespace errshim
