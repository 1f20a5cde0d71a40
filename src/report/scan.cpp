// Log scanning: one forward pass over lines, cutting out error blocks.
//
// The scanner only decides where a block starts and ends; what the block
// means is the matcher's business (Catalog::match normalises the block text
// the same way it normalises any message). So the line rules here are about
// boundaries: which lines continue a traceback, a Rust error chain, a panic,
// a c10 backtrace, and which line is ordinary log noise again. Every rule
// looks at one line (plus a count of held blank lines and, for c10 messages,
// a few lines above), so the pass is linear and its memory bounded.

#include "errshim/scan.hpp"

#include <algorithm>
#include <cstring>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <fstream>
#include <functional>
#include <istream>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#if defined(__unix__) || defined(__APPLE__)
#define ERRSHIM_SCAN_POSIX 1
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#else
#define ERRSHIM_SCAN_POSIX 0
#endif

#include <fmt/format.h>

#include "errshim/fingerprint.hpp"
#include "errshim/normalize.hpp"
#include "errshim/render.hpp"
#include "errshim/catalog.hpp"
#include "chars.hpp"
#include "escape.hpp"
#include "json.hpp"
#include "log_line.hpp"
#include "scan_candidates.hpp"
#include "scan_detail.hpp"
#include "text.hpp"

namespace errshim {

std::string_view to_string(BlockKind kind) noexcept {
  switch (kind) {
    case BlockKind::python_traceback: return "python-traceback";
    case BlockKind::rust_error: return "rust-error";
    case BlockKind::rust_panic: return "rust-panic";
    case BlockKind::libtorch: return "libtorch";
    case BlockKind::error_line: return "error-line";
  }
  return "error-line";
}

namespace {

using sv = std::string_view;
constexpr std::size_t npos = sv::npos;

// A read's size: small enough that the bytes read are still in the core's
// cache when they are scanned.
constexpr std::size_t kReadChunk = 256u << 10;
constexpr std::size_t kMaxMessageLines = 40;  // unmarked lines taken as one message's continuation
constexpr std::size_t kMaxHeldBlanks = 2;  // blank lines a block may bridge (Python chains use one)
constexpr std::size_t kLookBackLines = 8;  // lines above "Exception raised from" taken as its message

using detail::is_blank;
using detail::is_digit;
using detail::ltrim;
using detail::rtrim;
using detail::trim;
// The line grammar (log_line.hpp) is this file's vocabulary; the rules here
// only say where a block opens, goes on and ends.
using namespace log_line;

// Whether `line` begins with text shaped like `prefix`: equal but for
// digits, which may differ (timestamps, pids).
bool shape_match(sv prefix, sv line) {
  if (prefix.empty() || line.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i] == line[i]) continue;
    if (!(is_digit(prefix[i]) && is_digit(line[i]))) return false;
  }
  return true;
}

// ------------------------------------------------------------ line markers

// "ValueError: msg", "torch.OutOfMemoryError: msg", "c10::Error: msg":
// a line that names an exception class, with nothing above it to say so.
bool is_exception_line(sv c) { return log_line::exception_line(c, true).has_value(); }

// What a terminal finally shows of a line: no trailing CR, and only the last
// redraw of a progress bar ("\r" without "\n").
sv visible(sv line) {
  while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const std::size_t cr = line.rfind('\r');
  return cr == npos ? line : line.substr(cr + 1);
}

// The line without terminal colour codes, for classification only (blocks
// keep the raw text; the normaliser removes colours before matching).
sv uncoloured(sv line, std::string& scratch) {
  std::size_t esc = line.find('\x1b');
  if (esc == npos) return line;
  scratch.clear();
  std::size_t i = 0;
  while (esc != npos) {
    scratch.append(line.data() + i, esc - i);
    i = log_line::escape_end(line, esc);
    esc = i < line.size() ? line.find('\x1b', i) : npos;
  }
  if (i < line.size()) scratch.append(line.data() + i, line.size() - i);
  return scratch;
}

}  // namespace

log_line::LineClass log_line::scanner_class(std::string_view raw) {
  std::string scratch;
  const sv plain = uncoloured(visible(raw), scratch);
  // As Scanner::decide reads an opening line: a traceback header takes
  // whatever stands before it as its prefix.
  const log_line::Prefix p = read_prefix(plain);
  if (const std::size_t at = traceback_header_at(plain); at != npos && !is_traceback_header(plain.substr(p.length)))
    return {at, p.level, p.record, log_line::Marker::traceback_header};
  return {p.length, p.level, p.record, log_line::marker_of(rtrim(plain.substr(p.length)))};
}

namespace {

// ------------------------------------------------------------ block text

// A block's lines in bounded memory: the first quarter of the budget, then a
// sliding window of the last lines (a traceback's point is at its end).
class BlockText {
 public:
  explicit BlockText(std::size_t budget) : head_cap_(budget / 4), tail_cap_(budget - budget / 4) {}

  void add(sv line) {
    if (line.size() > tail_cap_) {
      line = line.substr(0, tail_cap_);
      cut_ = true;
    }
    if (tail_.empty() && head_.size() + line.size() + 1 <= head_cap_) {
      if (!head_.empty() || lines_ > 0) head_ += '\n';
      head_.append(line.data(), line.size());
      ++lines_;
      return;
    }
    tail_.emplace_back(line);
    tail_bytes_ += line.size() + 1;
    ++lines_;
    while (tail_bytes_ > tail_cap_ && tail_.size() > 1) {
      tail_bytes_ -= tail_.front().size() + 1;
      tail_.pop_front();
      ++dropped_;
    }
  }
  std::size_t lines() const { return lines_; }
  bool truncated() const { return dropped_ > 0 || cut_; }
  std::string take() {
    std::string out = std::move(head_);
    if (dropped_ > 0) out += fmt::format("\n... [{} lines omitted] ...", dropped_);
    for (const std::string& l : tail_) {
      if (!out.empty()) out += '\n';
      out += l;
    }
    return out;
  }

 private:
  std::size_t head_cap_, tail_cap_;
  std::string head_;
  std::deque<std::string> tail_;
  std::size_t tail_bytes_ = 0;
  std::size_t lines_ = 0;
  std::size_t dropped_ = 0;
  bool cut_ = false;
};

// ------------------------------------------------------------ the scanner

enum class State {
  py_frames,  // inside a traceback, before the exception line
  py_message,  // after the exception line: message lines, a chain marker
  py_chain,  // after a chain marker, before the next traceback
  rust_message,  // "Error: msg" and any further lines of that message
  rust_chain,  // "Caused by:" entries, "Stack backtrace:" frames
  panic_message,  // the panic's message lines
  panic_frames,  // "stack backtrace:" frames
  torch_message,  // after "terminate called ...": what() and message lines
  torch_frames,  // "Exception raised from ..." and "frame #N" lines
  error_line,  // one error record, which may grow into one of the above
};

// What a block does with the line in front of it.
enum class Verdict {
  take,  // the line belongs to the block (held blanks too)
  take_end,  // it belongs, and closes the block
  hold,  // a blank line: decided by the line after it
  end,  // the block ended before this line, which is looked at afresh
};

// Where a Scanner hands its blocks (which the receiver may move from).
using BlockSink = std::function<void(ScanBlock& block)>;

// The verdicts for block texts seen before (ScanOptions::match_cache_entries),
// one per scanning thread. Full, it starts again empty: the bound costs a
// log of many distinct errors only the hashing and the copies.
class MatchCache {
 public:
  explicit MatchCache(const ScanOptions& options)
      : max_entries_(options.match_cache_entries), max_text_(options.match_cache_text_bytes) {}

  MatchResult match(const Catalog& catalog, const std::string& text, const Context& context) {
    if (max_entries_ == 0 || text.size() > max_text_) return catalog.match(text, context);
    return *verdict(catalog, text, context);
  }

  // The same, shared with the cache: for a block kept a while, which holds
  // it instead of a copy.
  std::shared_ptr<const MatchResult> verdict(const Catalog& catalog, const std::string& text, const Context& context) {
    if (max_entries_ == 0 || text.size() > max_text_)
      return std::make_shared<const MatchResult>(catalog.match(text, context));
    if (const auto it = known_.find(text); it != known_.end()) return it->second;
    auto r = std::make_shared<const MatchResult>(catalog.match(text, context));
    if (known_.size() >= max_entries_) known_.clear();
    known_.emplace(text, r);
    return r;
  }

 private:
  std::size_t max_entries_, max_text_;
  std::unordered_map<std::string, std::shared_ptr<const MatchResult>> known_;
};

class Scanner {
 public:
  Scanner(std::string_view file, const Catalog& catalog, const BlockSink& visit, const ScanOptions& options,
          ScanStats& stats)
      : file_(file), catalog_(catalog), visit_(visit), options_(options), stats_(stats) {}

  void feed(sv raw, std::uint64_t number, bool cut) {
    const sv line = visible(raw);
    const sv plain = uncoloured(line, scratch_);
    if (open_) {
      switch (next(plain)) {
        case Verdict::take: take(line, cut); return;
        case Verdict::take_end:
          take(line, cut);
          close();
          return;
        case Verdict::hold: ++held_; return;
        case Verdict::end: close(); break;
      }
    }
    start(line, plain, number, cut);
  }

  void finish() {
    if (open_) close();
  }

  bool is_open() const noexcept { return open_; }
  // Whether feed(raw) would open a block, the scanner being closed.
  bool opens(sv raw) {
    const sv line = visible(raw);
    return decide(uncoloured(line, scratch_)).opens;
  }
  // The line that opened the block being handed to the visitor (for a c10
  // block with its message above, the "Exception raised from" line).
  std::uint64_t opened_at() const noexcept { return opened_at_; }
  // Added to the line numbers of the blocks handed out (the numbers fed
  // count from the start of a part of the file).
  void set_line_offset(std::uint64_t offset) noexcept { line_offset_ = offset; }
  // Where verdicts of texts seen before are kept; the cache must belong to
  // the thread that feeds this scanner.
  void set_cache(MatchCache* cache) noexcept { cache_ = cache; }
  // Blocks handed on without their file name, diagnosis and problems, which
  // take_verdict() gives (with the file name the scan was given): a block
  // kept a while holds the cached verdict, not copies whose allocations a
  // later thread frees in bulk.
  void set_keep_verdicts(bool on) noexcept { keep_verdicts_ = on; }
  std::shared_ptr<const MatchResult> take_verdict() noexcept { return std::move(verdict_); }

 private:
  struct Held {
    std::uint64_t number;
    std::string text;
    bool cut;
  };

  // -- continuing a block

  Verdict next(sv line) {
    const bool stripped = shape_match(prefix_, line);
    const sv c = stripped ? line.substr(prefix_.size()) : line;
    if (trim(c).empty()) return held_ < kMaxHeldBlanks ? Verdict::hold : Verdict::end;
    const bool record = read_prefix(c).record;
    const bool held = held_ > 0;
    switch (state_) {
      case State::py_frames:
        if (indented(c)) return Verdict::take;
        if (record || is_traceback_header(c)) return Verdict::end;
        state_ = State::py_message;  // the exception line
        return Verdict::take;
      case State::py_message:
        if (is_chain_marker(c)) return to(State::py_chain);
        if (held || record || starts_block(c)) return Verdict::end;
        if (is_c10_raised(c) || is_c10_frame(c)) return Verdict::take;  // TORCH_SHOW_CPP_STACKTRACES
        return message_line();
      case State::py_chain:
        if (is_traceback_header(c)) return to(State::py_frames);
        return Verdict::end;
      case State::rust_message:
        if (is_caused_by(c) || is_backtrace_header(c) || indented(c)) return to(State::rust_chain);
        if (is_rust_note(c)) return Verdict::take_end;
        if (held || record || starts_block(c)) return Verdict::end;
        return message_line();
      case State::rust_chain:
        if (is_caused_by(c) || is_backtrace_header(c) || indented(c)) return Verdict::take;
        if (is_rust_note(c)) return Verdict::take_end;
        return Verdict::end;
      case State::panic_message:
        if (held) return Verdict::end;
        if (is_rust_note(c)) return Verdict::take_end;
        if (is_backtrace_header(c)) return to(State::panic_frames);
        if (record || starts_block(c)) return Verdict::end;
        return message_line();
      case State::panic_frames:
        if (held) return Verdict::end;
        if (indented(c)) return Verdict::take;
        if (is_rust_note(c)) return Verdict::take_end;
        return Verdict::end;
      case State::torch_message:
        if (is_c10_raised(c)) return to(State::torch_frames);
        if (held || record || starts_block(c)) return Verdict::end;
        return message_line();
      case State::torch_frames:
        if (held) return Verdict::end;
        return (is_c10_frame(c) || indented(c)) ? Verdict::take : Verdict::end;
      case State::error_line:
        // An error record grows when the log shows more of the same error:
        // logging.exception() puts the traceback under it, a Rust error
        // logged with {:?} its "Caused by:" chain, C++ code a c10 backtrace.
        if (const std::size_t at = traceback_header_at(c); at != npos && trim(c.substr(0, at)).empty()) {
          kind_ = BlockKind::python_traceback;
          prefix_ = std::string(line.substr(0, line.size() - c.size() + at));
          return to(State::py_frames);
        }
        if (is_caused_by(c) || is_backtrace_header(c)) {
          kind_ = BlockKind::rust_error;
          return to(State::rust_chain);
        }
        if (is_c10_raised(c)) {
          kind_ = BlockKind::libtorch;
          return to(State::torch_frames);
        }
        if (held || record) return Verdict::end;
        if (indented(c)) return message_line();
        return Verdict::end;
    }
    return Verdict::end;
  }

  Verdict to(State s) {
    state_ = s;
    message_lines_ = 0;
    return Verdict::take;
  }

  Verdict message_line() { return ++message_lines_ <= kMaxMessageLines ? Verdict::take : Verdict::end; }

  // Lines that open a block of their own, and so end a message before them.
  static bool starts_block(sv c) {
    return is_traceback_header(c) || is_rust_error(c) || is_panic(c) || is_terminate(c);
  }

  void take(sv line, bool cut) {
    for (; held_ > 0; --held_) text_.add("");
    text_.add(line);
    truncated_ = truncated_ || cut;
  }

  // -- starting a block

  // What start() would open for this line, decided without touching the
  // scanner: also what the fast path asks of a candidate line.
  struct Opening {
    bool opens = false;
    bool lookback = false;  // a c10 what() whose message is the paragraph above
    BlockKind kind = BlockKind::error_line;
    State state = State::error_line;
    sv prefix;
    bool record = false;  // for a line that opens nothing: a log record of its own
  };

  static Opening decide(sv plain) {
    Opening o;
    const auto opening = [&](BlockKind kind, State state, sv prefix) {
      o.opens = true;
      o.kind = kind;
      o.state = state;
      o.prefix = prefix;
      return o;
    };
    if (const std::size_t at = traceback_header_at(plain); at != npos)
      return opening(BlockKind::python_traceback, State::py_frames, plain.substr(0, at));
    const log_line::Prefix p = read_prefix(plain);
    const sv c = ltrim(plain.substr(p.length));
    const sv prefix = plain.substr(0, plain.size() - c.size());
    if (is_panic(c)) return opening(BlockKind::rust_panic, State::panic_message, prefix);
    if (is_terminate(c)) return opening(BlockKind::libtorch, State::torch_message, prefix);
    if (is_c10_raised(c)) {
      o.lookback = true;
      return opening(BlockKind::libtorch, State::torch_frames, prefix);
    }
    const bool not_below_error = p.level != Level::other;
    if (not_below_error && is_rust_error(c)) return opening(BlockKind::rust_error, State::rust_message, prefix);
    if (p.level == Level::error || (p.level == Level::none && is_exception_line(c)))
      return opening(BlockKind::error_line, State::error_line, prefix);
    o.record = p.record;
    return o;
  }

  void start(sv line, sv plain, std::uint64_t number, bool cut) {
    held_ = 0;
    const Opening o = decide(plain);
    if (o.lookback) return open_with_lookback(o.prefix, line, number, cut);
    if (o.opens) return open(o.kind, o.state, o.prefix, line, number, cut);
    // Ordinary log noise. Unprefixed lines are kept for a moment: they may
    // be the message of a c10 backtrace that follows.
    if (trim(plain).empty() || o.record) {
      above_.clear();
    } else {
      if (above_.size() == kLookBackLines) above_.pop_front();
      above_.push_back(Held{number, std::string(line), cut});
    }
  }

  void open(BlockKind kind, State state, sv prefix, sv line, std::uint64_t number, bool cut) {
    open_ = true;
    kind_ = kind;
    state_ = state;
    prefix_ = std::string(prefix);
    first_line_ = number;
    opened_at_ = number;
    message_lines_ = 0;
    truncated_ = false;
    text_ = BlockText(std::max<std::size_t>(options_.max_block_bytes, 4096));
    above_.clear();
    take(line, cut);
  }

  // A c10::Error what() printed raw: its message is the paragraph just above.
  void open_with_lookback(sv prefix, sv line, std::uint64_t number, bool cut) {
    std::deque<Held> above = std::move(above_);
    open(BlockKind::libtorch, State::torch_frames, prefix, line, number, cut);
    if (above.empty()) return;
    BlockText text(std::max<std::size_t>(options_.max_block_bytes, 4096));
    for (const Held& h : above) {
      text.add(h.text);
      truncated_ = truncated_ || h.cut;
    }
    text.add(line);
    text_ = std::move(text);
    first_line_ = above.front().number;
  }

  void close() {
    open_ = false;
    held_ = 0;
    ScanBlock b;
    if (!keep_verdicts_) b.file = std::string(file_);
    b.line = first_line_ + line_offset_;
    b.lines = text_.lines();
    b.kind = kind_;
    b.truncated = truncated_ || text_.truncated();
    b.text = text_.take();
    text_ = BlockText(0);
    bool matched = false;
    if (keep_verdicts_) {
      verdict_ = cache_ != nullptr ? cache_->verdict(catalog_, b.text, options_.context)
                                   : std::make_shared<const MatchResult>(catalog_.match(b.text, options_.context));
      matched = verdict_->diagnosis.has_value();
    } else {
      MatchResult r = cache_ != nullptr ? cache_->match(catalog_, b.text, options_.context)
                                        : catalog_.match(b.text, options_.context);
      b.diagnosis = std::move(r.diagnosis);
      b.problems = std::move(r.problems);
      matched = b.diagnosis.has_value();
    }
    ++stats_.blocks;
    if (matched) ++stats_.matched;
    visit_(b);
  }

  sv file_;
  const Catalog& catalog_;
  const BlockSink& visit_;
  const ScanOptions& options_;
  ScanStats& stats_;
  MatchCache* cache_ = nullptr;
  bool keep_verdicts_ = false;
  std::shared_ptr<const MatchResult> verdict_;
  std::string scratch_;

  bool open_ = false;
  BlockKind kind_ = BlockKind::error_line;
  State state_ = State::error_line;
  std::string prefix_;  // the log prefix of the line that opened the block (or its traceback)
  std::uint64_t first_line_ = 0;
  std::uint64_t opened_at_ = 0;
  std::uint64_t line_offset_ = 0;
  std::size_t held_ = 0;  // blank lines seen and not yet placed
  std::size_t message_lines_ = 0;
  bool truncated_ = false;
  BlockText text_{0};
  std::deque<Held> above_;
};

// ------------------------------------------------------------ the fast path

// Feeds a Scanner only the lines that can matter, out of a buffer of whole
// lines. While no block is open, the literal search (scan_candidates.hpp)
// jumps to the next line that could open one; the lines passed over are
// noise, whose only effect on the scanner is the look-back window of a c10
// message (at most kLookBackLines lines, reset by blank and record lines).
// So before a line that opens a block, and at the end of each buffer, the
// last kLookBackLines of the lines passed over are fed, and the scanner is
// in the state a line-by-line pass would have left it in.
using detail::find_candidate;

// The last '\n' in [p, p + n), or null.
const void* last_newline(const char* p, std::size_t n) {
#if defined(__GLIBC__)
  return memrchr(p, '\n', n);
#else
  while (n > 0)
    if (p[--n] == '\n') return p + n;
  return nullptr;
#endif
}

// A line's bytes kept: the rest of a longer line is cut.
std::size_t max_line_of(const ScanOptions& options) { return std::max<std::size_t>(options.max_line_bytes, 256); }

class Driver {
 public:
  Driver(std::string_view file, const Catalog& catalog, const ScanOptions& options, BlockSink sink)
      : max_line_(max_line_of(options)), sink_(std::move(sink)), scanner_(file, catalog, forward_, options, stats_) {}
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Line numbers the driver hands out start after `lines`.
  void set_sink(BlockSink sink) { sink_ = std::move(sink); }
  void set_line_offset(std::uint64_t offset) { scanner_.set_line_offset(offset); }
  void set_cache(MatchCache* cache) { scanner_.set_cache(cache); }
  void set_keep_verdicts(bool on) { scanner_.set_keep_verdicts(on); }
  std::shared_ptr<const MatchResult> take_verdict() { return scanner_.take_verdict(); }
  // Called with a range [lo, hi] of this driver's line numbers before each
  // of which no block was open for kLookBackLines lines or more; a nonzero
  // answer in the range stops run() (the parallel scan's hand-over).
  void set_quiet_hook(std::function<std::uint64_t(std::uint64_t, std::uint64_t)> hook) { hook_ = std::move(hook); }
  // Keep the runs of line numbers where a block was open (for the hand-over).
  void record_active() { record_ = true; }
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& active() const { return active_; }

  std::uint64_t lines() const noexcept { return lines_; }
  std::uint64_t opened_at() const noexcept { return scanner_.opened_at(); }
  const ScanStats& stats() const noexcept { return stats_; }
  std::uint64_t stopped_at() const noexcept { return stopped_at_; }

  // The lines of [b, e), which ends with '\n' unless `final` (then a last
  // line without one counts). False when the quiet hook stopped it.
  bool run(const char* b, const char* e, bool final) {
    region_ = b;
    const char* p = b;
    while (p < e) {
      if (scanner_.is_open()) {
        p = feed_line(p, e);
        continue;
      }
      // A hand-over looks for quiet lines in bounded steps, so that it is
      // decided near where it can be, not at the next block.
      const char* const w = hook_ && static_cast<std::size_t>(e - p) > kHookStep ? p + kHookStep : e;
      std::uint64_t nl = 0;
      const char* const c = p + find_candidate(p, w, nl);
      if (c >= w && w < e) {
        const void* last = last_newline(p, static_cast<std::size_t>(w - p));
        if (last != nullptr) {
          skip(nl, static_cast<const char*>(last) + 1);
          p = gap_end_;
          if (quiet_until(lines_ + 1)) return false;
          continue;
        }
        nl = 0;  // one line longer than the step: search it whole
        const char* const c2 = p + find_candidate(p, e, nl);
        if (!handle_candidate(p, c2, e, nl, final)) return false;
        continue;
      }
      if (!handle_candidate(p, c, e, nl, final)) return false;
    }
    return true;
  }

  // At the end of a buffer: the look-back lines go in while they are at hand.
  void end_region() {
    if (!scanner_.is_open()) flush_gap();
  }

  // One line on its own (a line too long for the read buffer, cut).
  void line(sv raw, bool cut) {
    flush_gap();
    feed(raw, cut);
  }

  void finish() { scanner_.finish(); }

 private:
  static constexpr std::size_t kHookStep = 64u << 10;

  // The search from p (a line start) ended at c (< e: a candidate byte; e:
  // none), with `nl` newlines in between.
  bool handle_candidate(const char*& p, const char* c, const char* e, std::uint64_t nl, bool final) {
    if (c >= e) {
      const std::uint64_t n = nl + (final && e[-1] != '\n' ? 1 : 0);
      skip(n, e);
      p = e;
      return !quiet_until(lines_ + 1);
    }
    const char* ls = p;
    if (c > p) {
      const void* q = last_newline(p, static_cast<std::size_t>(c - p));
      if (q != nullptr) ls = static_cast<const char*>(q) + 1;
    }
    skip(nl, ls);
    p = ls;
    const char* le = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(e - p)));
    if (le == nullptr) le = e;
    const char* next = le < e ? le + 1 : e;
    const std::size_t len = static_cast<std::size_t>(le - p);
    const sv raw(p, std::min(len, max_line_));
    if (!scanner_.opens(raw)) {
      skip(1, next);
      p = next;
      return true;
    }
    if (quiet_until(lines_ + 1)) return false;
    flush_gap();
    feed(raw, len > max_line_);
    p = next;
    return true;
  }

  const char* feed_line(const char* p, const char* e) {
    const char* le = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(e - p)));
    if (le == nullptr) le = e;
    const std::size_t len = static_cast<std::size_t>(le - p);
    feed(sv(p, std::min(len, max_line_)), len > max_line_);
    return le < e ? le + 1 : e;
  }

  // n lines passed over, the last of them ending just before `end`.
  void skip(std::uint64_t n, const char* end) {
    lines_ += n;
    gap_ += n;
    gap_end_ = end;
  }

  void feed(sv raw, bool cut) {
    const bool was_open = scanner_.is_open();
    scanner_.feed(raw, ++lines_, cut);
    if (was_open || scanner_.is_open()) {
      last_active_ = lines_;
      if (record_) {
        if (!active_.empty() && active_.back().second + 1 == lines_) {
          active_.back().second = lines_;
        } else {
          active_.emplace_back(lines_, lines_);
        }
      }
    }
  }

  // The hook's turn: the lines from last_active_ + kLookBackLines + 1 up to
  // `until` are entered with no block open for kLookBackLines lines.
  bool quiet_until(std::uint64_t until) {
    if (!hook_) return false;
    const std::uint64_t lo = last_active_ + kLookBackLines + 1;
    if (lo > until) return false;
    stopped_at_ = hook_(lo, until);
    return stopped_at_ != 0;
  }

  // Feeds the last kLookBackLines lines passed over (all in this region).
  void flush_gap() {
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(gap_, kLookBackLines));
    std::pair<const char*, const char*> spans[kLookBackLines];
    const char* pos = gap_end_;
    for (std::size_t i = 0; i < k; ++i) {
      const char* content_end = pos;
      if (content_end > region_ && content_end[-1] == '\n') --content_end;
      const void* q =
          content_end > region_ ? last_newline(region_, static_cast<std::size_t>(content_end - region_)) : nullptr;
      const char* start = q != nullptr ? static_cast<const char*>(q) + 1 : region_;
      spans[k - 1 - i] = {start, content_end};
      pos = start;
    }
    lines_ -= k;
    for (std::size_t i = 0; i < k; ++i) {
      const std::size_t len = static_cast<std::size_t>(spans[i].second - spans[i].first);
      feed(sv(spans[i].first, std::min(len, max_line_)), len > max_line_);
    }
    gap_ = 0;
  }

  std::size_t max_line_;
  BlockSink sink_;
  BlockSink forward_ = [this](ScanBlock& b) { sink_(b); };
  ScanStats stats_;
  Scanner scanner_;
  std::function<std::uint64_t(std::uint64_t, std::uint64_t)> hook_;
  bool record_ = false;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> active_;
  const char* region_ = nullptr;
  const char* gap_end_ = nullptr;
  std::uint64_t gap_ = 0;  // lines passed over since the last one fed
  std::uint64_t lines_ = 0;  // lines seen
  std::uint64_t last_active_ = 0;  // the last line seen with a block open
  std::uint64_t stopped_at_ = 0;
};

// Throttled progress: every progress_every bytes, and the total at the end.
struct Progress {
  const ScanOptions& options;
  std::uint64_t reported = 0;
  void operator()(std::uint64_t done) {
    if (options.on_progress && done - reported >= options.progress_every) {
      reported = done;
      options.on_progress(done);
    }
  }
  void end(std::uint64_t total) const {
    if (options.on_progress) options.on_progress(total);
  }
};

// Blocks rendered into one buffer, written in pieces of whole blocks.
struct Buffered {
  explicit Buffered(const BlockOutput& o) : output(o) {}
  const BlockOutput& output;
  std::string bytes;
  void add(const ScanBlock& b) {
    output.render(b, bytes);
    if (bytes.size() >= BlockOutput::kFlushBytes) flush();
  }
  void flush() {
    if (bytes.empty()) return;
    output.write(bytes);
    bytes.clear();
  }
};

// Where a file scan's blocks go: to the visitor, or rendered and written.
struct Target {
  const BlockVisitor* visit = nullptr;
  const BlockOutput* output = nullptr;
};

// Room for reads, left unwritten until read into: zeroing it first touched
// every page of it before the first byte was read, which for a short log
// was most of the scan's cost.
class ReadBuffer {
 public:
  void reserve(std::size_t n) {
    if (n <= size_) return;
    data_.reset(new char[n]);
    size_ = n;
  }
  char* data() noexcept { return data_.get(); }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
};

// Runs `driver` over the lines of the bytes `read(dst, n)` gives (up to n
// of them; 0 at the end), up to `chunk` bytes a read into `buf`: a chunk's
// unfinished last line is carried into the next read, and of a line longer
// than `max_line` only its first max_line bytes are kept (the rest passes
// unread into memory). `chunk_done(bytes)` after each read. A last line
// without '\n' counts. False when the driver's quiet hook stopped it.
template <class Read, class Done>
bool run_chunks(Driver& driver, ReadBuffer& buf, std::size_t chunk, std::size_t max_line, Read&& read,
                Done&& chunk_done) {
  buf.reserve(chunk + max_line);
  std::size_t have = 0;
  bool skipping = false;  // inside a line longer than max_line, its head in `head`
  std::string head;
  for (;;) {
    const std::size_t got = read(buf.data() + have, chunk);
    if (got == 0) break;
    const char* b = buf.data();
    const char* e = buf.data() + have + got;
    if (skipping) {
      const void* nl = std::memchr(b, '\n', static_cast<std::size_t>(e - b));
      if (nl == nullptr) {
        have = 0;
        chunk_done(got);
        continue;
      }
      driver.line(head, true);
      skipping = false;
      b = static_cast<const char*>(nl) + 1;
    }
    const void* last = b < e ? last_newline(b, static_cast<std::size_t>(e - b)) : nullptr;
    const char* tail = b;
    if (last != nullptr) {
      tail = static_cast<const char*>(last) + 1;
      if (!driver.run(b, tail, false)) return false;
      driver.end_region();
    }
    const std::size_t rest = static_cast<std::size_t>(e - tail);
    if (rest > max_line) {
      head.assign(tail, max_line);
      skipping = true;
      have = 0;
    } else {
      std::memmove(buf.data(), tail, rest);
      have = rest;
    }
    chunk_done(got);
  }
  if (skipping) {
    driver.line(head, true);
  } else if (have > 0) {
    if (!driver.run(buf.data(), buf.data() + have, true)) return false;
    // The look-back lines go in while `buf` holds them: a part cut short
    // mid-line hands its driver on to scan parts in other buffers.
    driver.end_region();
  }
  return true;
}

// scan() on a stream, `region_done` called after each read's blocks.
ScanStats scan_stream(std::istream& in, std::string_view file, const Catalog& catalog, const BlockVisitor& visit,
                      const ScanOptions& options, const std::function<void()>& region_done) {
  ScanStats stats;
  Driver driver(file, catalog, options, [&](ScanBlock& b) {
    ++stats.blocks;
    if (b.diagnosis) ++stats.matched;
    visit(b);
  });
  MatchCache cache(options);
  driver.set_cache(&cache);
  Progress progress{options};
  ReadBuffer buf;
  std::streambuf* sb = in.rdbuf();
  if (sb != nullptr) {
    run_chunks(
        driver, buf, kReadChunk, max_line_of(options),
        [&](char* dst, std::size_t n) -> std::size_t {
          // sgetn on the buffer: no sentry or formatting work per chunk, and
          // a short read is the end of input.
          const std::streamsize got = sb->sgetn(dst, static_cast<std::streamsize>(n));
          return got > 0 ? static_cast<std::size_t>(got) : 0;
        },
        [&](std::size_t got) {
          stats.bytes += got;
          if (region_done) region_done();
          progress(stats.bytes);
        });
  }
  driver.finish();
  if (region_done) region_done();
  stats.lines = driver.lines();
  progress.end(stats.bytes);
  return stats;
}

}  // namespace

ScanStats scan(std::istream& in, std::string_view file, const Catalog& catalog, const BlockVisitor& visit,
               const ScanOptions& options) {
  return scan_stream(in, file, catalog, visit, options, nullptr);
}

ScanStats scan(std::istream& in, std::string_view file, const Catalog& catalog, const BlockOutput& output,
               const ScanOptions& options) {
  Buffered out(output);
  return scan_stream(
      in, file, catalog, [&](const ScanBlock& b) { out.add(b); }, options, [&] { out.flush(); });
}

// ------------------------------------------------------------ files

namespace {

#if ERRSHIM_SCAN_POSIX
[[noreturn]] void cannot_read(const std::string& path, int err);

struct Closer {
  int fd;
  Closer(const Closer&) = delete;
  Closer& operator=(const Closer&) = delete;
  ~Closer() { ::close(fd); }
};

// Up to n bytes of the file at `at`, fewer only at its end (a file cut
// short while it is read just ends sooner).
std::size_t pread_full(int fd, char* dst, std::size_t n, std::uint64_t at, const std::string& path) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) cannot_read(path, errno);
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

// One part of a file scanned by a worker from a fresh scanner, its blocks
// kept until the part before it has been handed out.
struct Part {
  // The part's bytes are [begin, end) of the file; its first lines are kept
  // in `head` for the scan coming from the part before, which reads the rest
  // from the file only if it goes on past them.
  std::uint64_t begin = 0, end = 0;
  std::string head;
  bool final = false;
  unsigned owner = 0;  // the worker that scanned it
  std::unique_ptr<Driver> driver;
  // A block as found, with what a ScanBlock adds kept once in the verdict
  // and its text in its part's `Kept::texts`: a whole ScanBlock is four
  // times the size, and the blocks of the parts in flight at high density
  // were thousands of pages touched fresh.
  struct Found {
    Found(ScanBlock& b, std::string& texts, std::uint64_t opened, std::shared_ptr<const MatchResult> v)
        : text_at(texts.size()),
          text_size(b.text.size()),
          line(b.line),
          lines(b.lines),
          opened_at(opened),
          verdict(std::move(v)),
          kind(b.kind),
          truncated(b.truncated) {
      texts += b.text;
    }
    std::size_t text_at, text_size;
    std::uint64_t line, lines, opened_at;
    std::shared_ptr<const MatchResult> verdict;
    BlockKind kind;
    bool truncated;
    // The whole block in `out` (its file name already there), `line_offset`
    // lines on: `out` assigned to again and again keeps its strings' room.
    void into(ScanBlock& out, std::uint64_t line_offset, const std::string& texts) const {
      out.line = line + line_offset;
      out.lines = lines;
      out.kind = kind;
      out.truncated = truncated;
      out.text.assign(texts, text_at, text_size);
      out.diagnosis = verdict->diagnosis;
      out.problems = verdict->problems;
    }
  };
  // A part's blocks and their texts, one after another. Taken from those
  // whose blocks were handed out (emptied, their room kept): each block's
  // own string, kept until its turn, grew the heap into fresh pages at high
  // density, and was freed cold.
  struct Kept {
    std::vector<Found> blocks;
    std::string texts;
  };
  Kept kept;
  std::uint64_t lines = 0;
  bool done = false;
  std::exception_ptr error;
};

// The blocks handed out for one part, to be rendered and written in order
// by a worker: those the scan coming from the part before found in its head
// (final line numbers), then the part's own from line `from` on (line
// numbers from the part's start, `line_offset` to add).
struct Unit {
  unsigned owner = 0;  // the worker that scanned its part
  std::vector<ScanBlock> blocks;
  Part::Kept found;
  std::uint64_t from = 0, line_offset = 0;
  bool taken = false;  // by the worker rendering it
};

// The first line in [lo, hi] (numbered from the part's start) before which
// the part's own scan had no block open for kLookBackLines lines, or 0.
// From such a line on, a scan that came from the part before and one that
// started fresh at the part are in the same state.
std::uint64_t first_quiet(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& active, std::uint64_t lo,
                          std::uint64_t hi) {
  std::uint64_t l = std::max<std::uint64_t>(lo, kLookBackLines + 1);
  for (const auto& [a, b] : active) {
    if (b + kLookBackLines < l) continue;
    if (a + 1 > l) break;
    l = b + kLookBackLines + 1;
  }
  return l <= hi ? l : 0;
}

// Workers scan parts from fresh scanners; this thread hands out the blocks
// in log order. At each split, the scan coming from the part before (whose
// state is exact) goes on into the next part until both are quiet at the
// same line (usually a few lines in); from there on the part's own results
// are the same as a continued scan's, and its scanner goes on. With an
// output, the blocks handed out for a part (a unit) are rendered and
// written by a worker when every unit before it has been written.
ScanStats scan_file_parallel(int fd, std::size_t size, unsigned threads, std::size_t part_bytes,
                             const std::string& path, const Catalog& catalog, const Target& target,
                             const ScanOptions& options) {
  ScanStats stats;  // its bytes: those read (fewer than `size` if the file is cut short meanwhile)
  // Parts of 4 MiB: smaller ones hold fewer blocks in flight when blocks are
  // dense, but the workers scanned slower with them when blocks are sparse,
  // the usual log.
  if (part_bytes == 0) part_bytes = 4u << 20;
  // Part i starts after the first '\n' at or after i * part_bytes (part 0
  // at 0) and ends where part i + 1 starts, found by the worker that takes
  // it. Workers read their parts with pread() a chunk at a time into a
  // buffer that stays in the core's cache; a mapping shared by the threads
  // cost page faults, and giving its pages back a TLB flush on every core,
  // work that grew with the threads (README.md, "Scanning logs"). Tests'
  // small parts get small chunks and heads, so that their splits fall
  // everywhere.
  std::vector<Part> parts((size + part_bytes - 1) / part_bytes);
  const std::size_t chunk = std::clamp<std::size_t>(part_bytes / 4, 64, kReadChunk);
  // A head of one page: the scan coming from the part before agrees with
  // the part's own a few lines in, and a head of 64 KiB per part, touched
  // fresh for each part in flight, cost more in page faults than the rare
  // transition that reads on past it.
  const std::size_t head_max = std::clamp<std::size_t>(part_bytes / 4, 16, 4u << 10);
  const std::size_t max_line = max_line_of(options);
  // Parts scanned ahead of the one handed out, and units not yet written,
  // bounding memory. The window lets a worker go on while this thread waits
  // for a core: with one part per worker it stalled.
  const std::size_t window = 2 * std::size_t{threads} + 4;
  const std::size_t max_units = threads;
  // Each side is woken only for what it waits for: on this VM a wake-up
  // across cores is an IPI, and waking everyone at every change (a part
  // done, a unit written, a part handed out) cost more CPU than the
  // hand-overs themselves.
  std::mutex mu;
  std::condition_variable main_cv;  // this thread: the part it hands out next, room for a unit, the end
  std::condition_variable work_cv;  // idle workers: a part to scan, a unit to render, the stop
  std::size_t waited_part = npos;  // what this thread waits for, if it does
  bool waits_units = false;
  unsigned idle = 0;  // workers waiting on work_cv
  std::size_t next = 0, handed = 0;
  bool stop = false;
  std::exception_ptr failed;  // what a render or a write threw
  // Handed out, not yet written; a deque keeps the others in place. Only the
  // front is rendered, by a worker that writes its bytes as they gather:
  // output that waited for its turn in memory, a part's worth of it per
  // worker, cost page faults and cold writes that made the scan slower with
  // threads at high density (README.md, "Scanning logs").
  std::deque<Unit> units;
  // The room of parts whose blocks have been handed out, for the parts
  // scanned next; with `mu` held.
  std::vector<Part::Kept> spare_kept;
  const auto take_kept = [&] {
    Part::Kept k;
    if (!spare_kept.empty()) {
      k = std::move(spare_kept.back());
      spare_kept.pop_back();
    }
    return k;
  };
  const auto give_back = [&](Part::Kept&& k) {
    if (k.blocks.capacity() == 0 || spare_kept.size() > window + max_units + threads) return;
    k.blocks.clear();
    k.texts.clear();
    spare_kept.push_back(std::move(k));
  };
  // Reads part i into `part` and scans it with `driver`, through `buf`.
  const auto read_part = [&](std::size_t i, Part& part, Driver& driver, ReadBuffer& buf) {
    const std::uint64_t lo = i * part_bytes;
    const std::uint64_t limit = std::min<std::uint64_t>(lo + part_bytes, size);  // where part i + 1 is looked for
    std::uint64_t pos = lo;
    if (i > 0) {  // after the first '\n' at or after lo; none before `limit`: the part is empty
      buf.reserve(chunk + max_line);
      bool found = false;
      // A line is usually short: a small first read, larger ones after.
      for (std::size_t want = std::min<std::size_t>(chunk, 4096); !found && pos < limit;
           want = std::min(chunk, want * 4)) {
        const std::size_t got = pread_full(fd, buf.data(), std::min<std::uint64_t>(want, limit - pos), pos, path);
        if (got == 0) break;
        const void* nl = std::memchr(buf.data(), '\n', got);
        found = nl != nullptr;
        pos += found ? static_cast<std::size_t>(static_cast<const char*>(nl) - buf.data()) + 1 : got;
      }
      if (!found) {
        part.begin = part.end = pos;
        part.final = pos >= size;
        return;
      }
    }
    part.begin = pos;
    bool ended = false;
    run_chunks(
        driver, buf, chunk, max_line,
        [&](char* dst, std::size_t n) -> std::size_t {
          if (ended) return 0;
          std::size_t got = pread_full(fd, dst, std::min<std::uint64_t>(n, size - pos), pos, path);
          if (pos + got > limit) {  // the part ends after the first '\n' at or after `limit`
            const std::size_t from = static_cast<std::size_t>(std::max(pos, limit) - pos);
            const void* nl = std::memchr(dst + from, '\n', got - from);
            if (nl != nullptr) {
              got = static_cast<std::size_t>(static_cast<const char*>(nl) - dst) + 1;
              ended = true;
            }
          }
          if (got == 0) ended = true;
          if (part.head.size() < head_max) part.head.append(dst, std::min(got, head_max - part.head.size()));
          pos += got;
          return got;
        },
        [](std::size_t) {});
    part.end = pos;
    part.final = pos >= size;
    // The head keeps whole lines (or, a part that fits, all of it).
    if (part.begin + part.head.size() < part.end) {
      const void* nl = last_newline(part.head.data(), part.head.size());
      part.head.resize(nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - part.head.data()) + 1
                                     : 0);
    }
  };
  // Renders and writes the front unit through `out`, a worker's own buffer
  // of about a read's size (`chunk`: tests' small parts get small writes),
  // which stays in the core's cache.
  const auto render = [&](Unit& u, std::string& out) {
    std::exception_ptr error;
    const auto add = [&](const ScanBlock& b) {
      target.output->render(b, out);
      if (out.size() < chunk) return;
      target.output->write(out);
      out.clear();
    };
    try {
      if (out.capacity() < chunk) out.reserve(chunk + chunk / 4);
      for (const ScanBlock& b : u.blocks) add(b);
      ScanBlock whole;
      whole.file = path;
      for (const Part::Found& f : u.found.blocks) {
        if (f.opened_at < u.from) continue;
        f.into(whole, u.line_offset, u.found.texts);
        add(whole);
      }
      if (!out.empty()) target.output->write(out);
    } catch (...) {
      error = std::current_exception();
    }
    out.clear();
    std::vector<ScanBlock>().swap(u.blocks);  // (`= {}` would keep the capacity)
    u.found.blocks.clear();
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      give_back(std::move(u.found));
      units.pop_front();
      if (error && !failed) {
        failed = error;
        stop = true;
      }
      wake = waits_units || error;
    }
    if (error) work_cv.notify_all();
    if (wake) main_cv.notify_one();
  };

  const auto work = [&](unsigned me) {
    MatchCache cache(options);
    ReadBuffer buf;
    std::string out;  // rendered bytes (a unit's, at most `chunk`)
    for (;;) {
      std::size_t i = 0;
      Unit* unit = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu);
        const auto front_free = [&] { return !units.empty() && !units.front().taken; };
        const auto can_scan = [&] { return next < parts.size() && next < handed + window; };
        const auto ready = [&] { return stop || front_free() || can_scan(); };
        if (!ready()) {
          ++idle;
          work_cv.wait(lock, ready);
          --idle;
        }
        if (stop) return;
        // The worker that scanned the unit's part allocated most of its
        // blocks: another one renders it only when it has no part to scan,
        // as blocks freed by another thread contend for the allocator's
        // locks.
        if (front_free() && (units.front().owner == me || !can_scan())) {
          unit = &units.front();
          unit->taken = true;
        } else {
          i = next++;
          parts[i].kept = take_kept();
        }
      }
      if (unit != nullptr) {
        render(*unit, out);
        continue;
      }
      Part& part = parts[i];
      part.owner = me;
      try {
        auto driver = std::make_unique<Driver>(path, catalog, options, nullptr);
        Driver* d = driver.get();
        driver->set_sink([&part, d](ScanBlock& b) {
          part.kept.blocks.emplace_back(b, part.kept.texts, d->opened_at(), d->take_verdict());
        });
        driver->set_cache(&cache);
        driver->set_keep_verdicts(true);
        driver->record_active();
        read_part(i, part, *driver, buf);
        part.lines = driver->lines();
        part.driver = std::move(driver);
      } catch (...) {
        part.error = std::current_exception();
      }
      bool wake = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        part.done = true;
        wake = waited_part == i;
      }
      if (wake) main_cv.notify_one();
    }
  };
  std::vector<std::thread> pool;
  const auto join = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (std::thread& t : pool) t.join();
    pool.clear();
  };

  Unit pending;  // the blocks handed out since the last unit
  const auto emit = [&](ScanBlock& b) {
    ++stats.blocks;
    if (b.diagnosis) ++stats.matched;
    if (target.output != nullptr) {
      pending.blocks.push_back(std::move(b));
    } else {
      (*target.visit)(b);
    }
  };
  // Hands out `pending` (if it has blocks) and parts up to `upto`.
  const auto hand_out = [&](std::size_t upto) {
    const bool any = !pending.blocks.empty() || !pending.found.blocks.empty();
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (any) units.push_back(std::move(pending));
      handed = upto;
      wake = idle > 0;
    }
    if (any) pending = Unit{};
    if (wake) work_cv.notify_all();
  };
  // Waits while more than `keep` units are left to write; throws what a
  // render or a write threw.
  const auto wait_units = [&](std::size_t keep) {
    std::unique_lock<std::mutex> lock(mu);
    const auto ready = [&] { return units.size() <= keep || failed; };
    if (!ready()) {
      waits_units = true;
      main_cv.wait(lock, ready);
      waits_units = false;
    }
    if (failed) std::rethrow_exception(failed);
  };

  const unsigned n_threads = static_cast<unsigned>(std::min<std::size_t>(threads, parts.size()));
  try {
    for (unsigned t = 0; t < n_threads; ++t) pool.emplace_back(work, t);
    Progress progress{options};
    MatchCache cache(options);  // for the scanner this thread takes over
    ReadBuffer buf;  // for a part's rest, when the scan coming from the part before goes on past its head
    std::unique_ptr<Driver> current;
    std::uint64_t current_base = 0;  // lines before the part the current driver started in
    std::uint64_t lines_before = 0;  // lines before part i
    for (std::size_t i = 0; i < parts.size(); ++i) {
      Part& part = parts[i];
      {
        std::unique_lock<std::mutex> lock(mu);
        if (!part.done && !failed) {
          waited_part = i;
          main_cv.wait(lock, [&] { return part.done || failed; });
          waited_part = npos;
        }
        if (failed) std::rethrow_exception(failed);
      }
      if (part.error) std::rethrow_exception(part.error);
      std::uint64_t from = 0;  // the part's blocks opened at this line or later are handed out
      if (!current) {
        from = 1;
      } else {
        const std::uint64_t shift = lines_before - current_base;
        current->set_quiet_hook([&, shift](std::uint64_t lo, std::uint64_t hi) -> std::uint64_t {
          if (hi <= shift) return 0;
          const std::uint64_t q = first_quiet(part.driver->active(), lo > shift ? lo - shift : 1, hi - shift);
          return q == 0 ? 0 : q + shift;
        });
        const std::uint64_t rest = part.begin + part.head.size();
        const bool whole = rest == part.end;  // the head is all of the part
        bool stopped = !current->run(part.head.data(), part.head.data() + part.head.size(), part.final && whole);
        if (!stopped && !whole) {
          current->end_region();
          std::uint64_t pos = rest;
          std::size_t want = std::min(chunk, 4 * head_max);  // small reads first: it usually stops soon
          stopped = !run_chunks(
              *current, buf, chunk, max_line,
              [&](char* dst, std::size_t n) -> std::size_t {
                const std::size_t got =
                    pread_full(fd, dst, std::min<std::uint64_t>(std::min(n, want), part.end - pos), pos, path);
                want = std::min(chunk, want * 4);
                pos += got;
                return got;
              },
              [](std::size_t) {});
        }
        if (stopped) from = current->stopped_at() - shift;
        current->set_quiet_hook(nullptr);
        if (from == 0) current->end_region();
      }
      if (from != 0) {
        if (target.output != nullptr) {
          // Handed to the worker that found them whole: no copy here, and
          // freed by the thread that allocated them.
          for (const Part::Found& f : part.kept.blocks) {
            if (f.opened_at < from) continue;
            ++stats.blocks;
            if (f.verdict->diagnosis) ++stats.matched;
          }
          pending.found = std::move(part.kept);
          pending.from = from;
          pending.line_offset = lines_before;
        } else {
          ScanBlock whole;
          whole.file = path;
          for (const Part::Found& f : part.kept.blocks) {
            if (f.opened_at < from) continue;
            f.into(whole, lines_before, part.kept.texts);
            emit(whole);
          }
        }
        current = std::move(part.driver);
        current_base = lines_before;
        current->set_line_offset(current_base);
        current->set_sink(emit);
        current->set_cache(&cache);
        current->set_keep_verdicts(false);
      }
      // Its room goes to the parts after it: each part handed out would
      // hold on to its own.
      part.kept.blocks.clear();
      {
        std::lock_guard<std::mutex> lock(mu);
        give_back(std::move(part.kept));
      }
      part.driver.reset();
      std::string().swap(part.head);
      lines_before += part.lines;
      pending.owner = part.owner;
      hand_out(i + 1);
      if (target.output != nullptr) wait_units(max_units);
      stats.bytes += part.end - part.begin;
      progress(stats.bytes);
    }
    if (current) current->finish();
    if (!parts.empty()) pending.owner = parts.back().owner;
    hand_out(parts.size());
    if (target.output != nullptr) wait_units(0);
    join();
    stats.lines = lines_before;
    progress.end(stats.bytes);
  } catch (...) {
    join();
    throw;
  }
  return stats;
}
#endif

#if ERRSHIM_SCAN_POSIX
// A stream over an open file descriptor: a FIFO is read through the
// descriptor that opened it (opened again, its writer may be gone).
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) {}
  FdBuf(const FdBuf&) = delete;
  FdBuf& operator=(const FdBuf&) = delete;
  ~FdBuf() override { ::close(fd_); }
  int error() const noexcept { return error_; }

 protected:
  std::streamsize xsgetn(char* s, std::streamsize n) override {
    std::streamsize got = 0;
    if (gptr() < egptr()) {  // what underflow() buffered first
      got = std::min<std::streamsize>(n, egptr() - gptr());
      std::memcpy(s, gptr(), static_cast<std::size_t>(got));
      gbump(static_cast<int>(got));
    }
    while (got < n) {
      const ssize_t r = ::read(fd_, s + got, static_cast<std::size_t>(n - got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        if (r < 0) error_ = errno;
        break;
      }
      got += r;
    }
    return got;
  }
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const std::streamsize r = xsgetn(one_, 1);
    if (r <= 0) return traits_type::eof();
    setg(one_, one_, one_ + 1);
    return traits_type::to_int_type(one_[0]);
  }

 private:
  int fd_;
  int error_ = 0;
  char one_[1] = {};
};
#endif

[[noreturn]] void cannot_read(const std::string& path, int err) {
  throw std::system_error(err, std::generic_category(), fmt::format("errshim::scan_file: cannot read '{}'", path));
}

}  // namespace

namespace {

ScanStats scan_stream_to(std::istream& in, const std::string& path, const Catalog& catalog, const Target& target,
                         const ScanOptions& options) {
  return target.output != nullptr ? scan(in, path, catalog, *target.output, options)
                                  : scan(in, path, catalog, *target.visit, options);
}

ScanStats scan_path(const std::string& path, const Catalog& catalog, const Target& target, const ScanOptions& options,
                    unsigned threads, std::size_t part_bytes) {
#if ERRSHIM_SCAN_POSIX
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) cannot_read(path, errno);
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
  if (regular && options.map_file) {
    const auto size = static_cast<std::size_t>(st.st_size);
    if (threads == 0)
      threads = size >= ScanOptions::kParallelFrom ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
    if (threads > 1) {
      const Closer closer{fd};
      return scan_file_parallel(fd, size, threads, part_bytes, path, catalog, target, options);
    }
  }
  // One thread, or not a regular file (a FIFO, an empty or /proc file):
  // read as a stream.
  FdBuf buf(fd);
  std::istream in(&buf);
  const ScanStats stats = scan_stream_to(in, path, catalog, target, options);
  if (buf.error() != 0) cannot_read(path, buf.error());
  return stats;
#else
  (void)threads;
  (void)part_bytes;
  // No POSIX file calls on this platform: a stream.
  std::ifstream in(path, std::ios::binary);
  if (!in) cannot_read(path, errno);
  return scan_stream_to(in, path, catalog, target, options);
#endif
}

}  // namespace

ScanStats scan_file(const std::string& path, const Catalog& catalog, const BlockVisitor& visit,
                    const ScanOptions& options) {
  return scan_path(path, catalog, Target{&visit, nullptr}, options, options.threads, 0);
}

ScanStats scan_file(const std::string& path, const Catalog& catalog, const BlockOutput& output,
                    const ScanOptions& options) {
  return scan_path(path, catalog, Target{nullptr, &output}, options, options.threads, 0);
}

ScanStats detail::scan_file_parts(const std::string& path, const Catalog& catalog, const BlockVisitor& visit,
                                  const ScanOptions& options, unsigned threads, std::size_t part_bytes) {
  return scan_path(path, catalog, Target{&visit, nullptr}, options, threads, part_bytes);
}

ScanStats detail::scan_file_parts(const std::string& path, const Catalog& catalog, const BlockOutput& output,
                                  const ScanOptions& options, unsigned threads, std::size_t part_bytes) {
  return scan_path(path, catalog, Target{nullptr, &output}, options, threads, part_bytes);
}

std::string to_json(const ScanBlock& b) { return detail::json_of(b); }

// ------------------------------------------------------------ the summary

namespace {

// What groups unrecognised blocks: the fingerprint of their root-cause
// message, so the same unknown error logged by many workers at many times,
// with its numbers, ids and paths differing, is one group.
std::string group_key(const ScanBlock& b) { return fingerprint(b.text).id; }

sv first_line(sv s) { return s.substr(0, s.find('\n')); }

// A line of log text for the terminal, with its control characters (escape
// sequences among them) shown as escapes rather than acted on.
std::string shorten(sv line, std::size_t max) {
  if (line.size() <= max) return detail::escape_controls(line);
  return detail::escape_controls(line.substr(0, max)) + "...";
}

// A block's text for the report: whole when short, else its first and last
// lines (the exception line of a traceback is its last).
void append_excerpt(std::string& out, sv text, const char* indent) {
  std::vector<sv> lines;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == npos ? npos : nl - start));
    if (nl == npos) break;
    start = nl + 1;
  }
  constexpr std::size_t kHead = 3, kTail = 6;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines.size() > kHead + kTail + 1 && i == kHead) {
      out += fmt::format("{}... ({} more lines)\n", indent, lines.size() - kHead - kTail);
      i = lines.size() - kTail - 1;
      continue;
    }
    out += fmt::format("{}{}\n", indent, shorten(rtrim(lines[i]), 240));
  }
}

}  // namespace

void ScanSummary::add(const ScanBlock& block) {
  ++blocks_;
  if (block.diagnosis) {
    ++matched_;
    const std::string& id = block.diagnosis->id();
    const auto it = by_id_.find(id);
    if (it != by_id_.end()) {
      ++recognised_[it->second].count;
      return;
    }
    by_id_.emplace(id, recognised_.size());
    recognised_.push_back(Recognised{id, 1, block});
    return;
  }
  std::string key = group_key(block);
  const auto it = by_message_.find(key);
  if (it != by_message_.end()) {
    ++unmatched_[it->second].count;
    return;
  }
  if (unmatched_.size() >= max_unmatched_) {
    ++dropped_;
    return;
  }
  by_message_.emplace(std::move(key), unmatched_.size());
  unmatched_.push_back(Unrecognised{1, block});
}

std::vector<ScanSummary::Recognised> ScanSummary::recognised() const {
  std::vector<Recognised> out = recognised_;
  std::stable_sort(out.begin(), out.end(), [](const Recognised& a, const Recognised& b) { return a.count > b.count; });
  return out;
}

std::string ScanSummary::to_text() const {
  if (blocks_ == 0) return "no error blocks found\n";
  std::string out = fmt::format("{} error block(s): {} recognised ({} distinct), {} not recognised\n", blocks_,
                                matched_, recognised_.size(), blocks_ - matched_);
  const auto where = [](const ScanBlock& b) {
    return fmt::format("{}:{} ({})", detail::escape_controls(b.file), b.line, to_string(b.kind));
  };
  if (!recognised_.empty()) out += "\nrecognised:\n";
  for (const Recognised& r : recognised()) {
    const Diagnosis& d = *r.first.diagnosis;
    out += fmt::format("  {:>5}x  {}\n", r.count, detail::escape_controls(r.id));
    out += fmt::format("          first:   {}\n", where(r.first));
    out += fmt::format("          message: {}\n", shorten(first_line(d.segment), 200));
    if (d.entry && !d.entry->remediation.empty())
      out += fmt::format("          try:     {}\n", shorten(first_line(d.entry->remediation.front().text), 200));
  }
  if (!unmatched_.empty()) out += "\nnot recognised:\n";
  for (const Unrecognised& u : unmatched_) {
    out += fmt::format("  {:>5}x  {}\n", u.count, where(u.first));
    append_excerpt(out, u.first.text, "          | ");
  }
  if (dropped_ > 0)
    out += fmt::format("  ... and {} more unrecognised block(s) with other messages, not listed\n", dropped_);
  return out;
}

}  // namespace errshim
