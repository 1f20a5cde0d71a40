// Finding and explaining the errors in a log.
//
//   errshim::ScanSummary summary;
//   std::ifstream log("serve.log", std::ios::binary);
//   errshim::scan(log, "serve.log", *errshim::Catalog::embedded(),
//                 [&](const errshim::ScanBlock& b) { summary.add(b); });
//   // or, by path (-j style threads):
//   errshim::scan_file("serve.log", *errshim::Catalog::embedded(),
//                      [&](const errshim::ScanBlock& b) { summary.add(b); });
//   fmt::print("{}", summary.to_text());
//
// The log is read once in bounded memory whatever its size: a line longer
// than ScanOptions::max_line_bytes is cut, a block longer than
// max_block_bytes keeps its head and tail, and nothing else is held. Each
// block is handed to the visitor as soon as it ends, so output can stream.
// Lines are classified only where a literal search over the bytes finds a
// marker that can open a block (see src/report/scan_candidates.hpp); the result is
// the same as classifying every line. scan_file() reads the file with
// read() and pread(), never through a mapping, and can split it across
// threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/context.hpp"
#include "errshim/diagnosis.hpp"

namespace errshim {

class Catalog;  // errshim/catalog.hpp

// What opened a block. A block grows into another kind when the log shows
// more of it: an ERROR line followed by a traceback is one python_traceback.
enum class BlockKind {
  python_traceback,  // "Traceback (most recent call last):" ... "ValueError: ...", chained ones included
  rust_error,  // "Error: ..." with "Caused by:" entries and a "Stack backtrace:"
  rust_panic,  // "thread 'main' panicked at ...", its message, note and backtrace
  libtorch,  // a c10::Error what(): message, "Exception raised from ...", "frame #N" lines
  error_line,  // one line: an ERROR/CRITICAL/FATAL log record or a bare "SomeError: ..."
};
std::string_view to_string(BlockKind kind) noexcept;  // "python-traceback", "rust-error", ...

// One error found in a log, with the catalog's verdict.
struct ScanBlock {
  std::string file;  // the name scan() was given
  std::uint64_t line = 0;  // 1-based line where the block starts in its file
  std::uint64_t lines = 0;  // lines the block spans, dropped ones included
  BlockKind kind = BlockKind::error_line;
  std::string text;  // its lines, '\n'-joined, as they appear in the log
  bool truncated = false;  // lines dropped from the middle, or a line cut
  std::optional<Diagnosis> diagnosis;  // empty: no catalog entry matches
  std::vector<std::string> problems;  // from Catalog::match (regex limit hit, ...)
};

struct ScanOptions {
  Context context;  // passed to every match
  std::size_t max_line_bytes = 32u << 10;  // the rest of a longer line is skipped unread into memory
  std::size_t max_block_bytes = 128u << 10;  // over it, a block keeps its first quarter and last lines
  // Called with the bytes read so far (this input), every progress_every
  // bytes and once at the end. For progress bars; may be empty.
  std::function<void(std::uint64_t bytes_read)> on_progress;
  std::uint64_t progress_every = 4u << 20;
  // Threads for scan_file() on one file: parts of it are scanned at once,
  // split at line boundaries, and the blocks still come in log order (a
  // block across a split is found once). 0: the core count for a file of
  // kParallelFrom bytes or more, else 1. scan() on a stream uses one.
  unsigned threads = 0;
  static constexpr std::uint64_t kParallelFrom = 64u << 20;
  // Verdicts kept per scanning thread for block texts seen before (a log
  // repeats its errors word for word): a block whose text equals an earlier
  // one's gets the same diagnosis and problems without matching again.
  // Texts over match_cache_text_bytes are not kept. 0 entries: no cache.
  std::size_t match_cache_entries = 128;
  std::size_t match_cache_text_bytes = 8u << 10;
  // Off: scan_file() reads a regular file as a stream on one thread,
  // whatever `threads` says. The name is kept from when files were read
  // through a memory mapping (which a file cut short while mapped, as by
  // logrotate's copytruncate, killed with SIGBUS); files are no longer
  // mapped, and a file cut short while it is scanned ends the scan where it
  // now ends either way.
  bool map_file = true;
};

struct ScanStats {
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t blocks = 0;
  std::uint64_t matched = 0;
};

using BlockVisitor = std::function<void(const ScanBlock& block)>;

// Output made from each block, for when making it costs about as much as
// finding the block (`errshim scan --json`): scan_file() with threads calls
// `render` and `write` on its scanning threads, and the bytes still come out
// in log order.
struct BlockOutput {
  // Appends the bytes for `block` to `out`. May be called from several
  // threads at once when scan_file() runs threads: it must not touch shared
  // state unguarded.
  std::function<void(const ScanBlock& block, std::string& out)> render;
  // Called in log order, one call at a time, with the bytes of whole blocks:
  // at the end of each read of a stream (about 256 KiB) and whenever
  // kFlushBytes have gathered, on the calling thread; for a file split
  // across threads, in pieces of about a read's size, on the scanning thread
  // that rendered them (each call happens after the one before it). Rendered
  // bytes are written as they gather: output held until its turn cost page
  // faults and cold writes.
  std::function<void(std::string_view bytes)> write;
  static constexpr std::size_t kFlushBytes = 1u << 20;
};

// Reads `in` to its end and calls `visit` for each error block, in log
// order. What is recognised as a block: Python tracebacks (from the
// "Traceback" header to the exception line, its message lines and chained
// tracebacks), Rust "Error:" chains with "Caused by:" and "Stack backtrace:",
// Rust panics, libtorch what() texts with "Exception raised from" and frame
// lines (the message lines above them included), and single error lines (an
// ERROR, CRITICAL or FATAL level, a glog E/F record, or "SomeError: ..."). An
// ERROR record directly followed by a traceback or a "Caused by:" chain is
// one block. Lines of a block may carry a log prefix of the same shape as its
// first line ("worker-1  | ", a timestamp per line).
//
// Matching never throws; scan() throws only what `visit` or on_progress
// throw, and std::bad_alloc.
ScanStats scan(std::istream& in, std::string_view file, const Catalog& catalog, const BlockVisitor& visit,
               const ScanOptions& options = {});

// The same for a file given by path. A regular file is scanned with
// options.threads threads, each reading its parts with pread(); other
// files, FIFOs among them, are read as a stream.
// Blocks name the file `path`.
// Throws std::system_error when the file cannot be opened or read.
ScanStats scan_file(const std::string& path, const Catalog& catalog, const BlockVisitor& visit,
                    const ScanOptions& options = {});

// The same two, with each block rendered by `output.render` and written by
// `output.write` instead of visited. Throws what they throw.
ScanStats scan(std::istream& in, std::string_view file, const Catalog& catalog, const BlockOutput& output,
               const ScanOptions& options = {});
ScanStats scan_file(const std::string& path, const Catalog& catalog, const BlockOutput& output,
                    const ScanOptions& options = {});

// One line of JSON for a block: the object `errshim explain --json` prints,
// plus "file", "line", "lines" and "kind"; an unmatched block is
// {"matched": false, "file", "line", "lines", "kind", "text"}.
std::string to_json(const ScanBlock& block);

// Counts blocks per entry id and keeps the first example of each, plus the
// unrecognised blocks grouped by their message. Memory is bounded by the
// catalog size and `max_unmatched`.
class ScanSummary {
 public:
  struct Recognised {
    std::string id;
    std::uint64_t count = 0;
    ScanBlock first;
  };
  struct Unrecognised {
    std::uint64_t count = 0;
    ScanBlock first;
  };

  explicit ScanSummary(std::size_t max_unmatched = 50) : max_unmatched_(max_unmatched) {}

  void add(const ScanBlock& block);

  // Most frequent first; on a tie, the one seen first.
  std::vector<Recognised> recognised() const;
  // In order of first appearance.
  const std::vector<Unrecognised>& unrecognised() const noexcept { return unmatched_; }
  std::uint64_t blocks() const noexcept { return blocks_; }
  std::uint64_t matched() const noexcept { return matched_; }
  // Unmatched blocks beyond max_unmatched distinct messages: counted only.
  std::uint64_t unmatched_not_kept() const noexcept { return dropped_; }

  // The report `errshim scan` prints: a count line, then per entry id its
  // count, first location, message and first remediation, then the
  // unrecognised blocks with their text (long ones shortened).
  std::string to_text() const;

 private:
  std::size_t max_unmatched_;
  std::map<std::string, std::size_t, std::less<>> by_id_;  // id -> index in recognised_
  std::map<std::string, std::size_t, std::less<>> by_message_;  // message -> index in unmatched_
  std::vector<Recognised> recognised_;  // in order of first appearance
  std::vector<Unrecognised> unmatched_;
  std::uint64_t blocks_ = 0, matched_ = 0, dropped_ = 0;
};

}  // namespace errshim
