// The log scanner as it was before the literal-search fast path (commit
// 94a3f2e, src/scan.cpp): the reference the equivalence test compares the
// fast scanner against. Kept verbatim apart from the namespace and the
// function's name, so a difference in output is a difference in the new code,
// and for three disagreements with the normaliser settled by the log-line
// grammar (marked "Since the log-line grammar").
// Test-only; not compiled into the library.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <istream>
#include <utility>

#include <fmt/format.h>

#include "errshim/catalog.hpp"
#include "errshim/scan.hpp"
#include "chars.hpp"

namespace errshim::reference {
namespace {

using sv = std::string_view;
constexpr std::size_t npos = sv::npos;

constexpr std::size_t kReadChunk = 64u << 10;
constexpr std::size_t kMaxMessageLines = 40;  // unmarked lines taken as one message's continuation
constexpr std::size_t kMaxHeldBlanks = 2;  // blank lines a block may bridge (Python chains use one)
constexpr std::size_t kLookBackLines = 8;  // lines above "Exception raised from" taken as its message
constexpr std::size_t kMaxPrefixBytes = 160;  // a longer "prefix" is message text
constexpr std::size_t kMaxGroupKey = 512;  // bytes of a message used to group unmatched blocks

constexpr sv kTracebackHeader = "Traceback (most recent call last):";
constexpr sv kDirectCause = "The above exception was the direct cause of the following exception:";
constexpr sv kDuringHandling = "During handling of the above exception, another exception occurred:";
constexpr sv kC10Raised = "Exception raised from ";
constexpr sv kTerminate = "terminate called after throwing an instance of ";

using detail::is_alpha;
using detail::is_blank;
using detail::is_digit;
using detail::is_ident;
using detail::is_lower;
using detail::is_upper;
// strchr would also find the terminating NUL, and logs do contain NUL bytes.
bool one_of(const char* set, char c) { return c != '\0' && std::strchr(set, c) != nullptr; }
char lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

bool starts_with(sv s, sv p) { return s.size() >= p.size() && s.compare(0, p.size(), p) == 0; }
bool ends_with(sv s, sv p) { return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0; }
sv ltrim(sv s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  return s;
}
sv rtrim(sv s) {
  while (!s.empty() && (is_blank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
sv trim(sv s) { return rtrim(ltrim(s)); }
bool indented(sv s) { return !s.empty() && is_blank(s.front()); }

// ------------------------------------------------------------ line prefixes

enum class Level { none, other, error };

// TRACE..WARNING are "other"; ERR/ERROR/CRITICAL/FATAL/PANIC are "error".
// Bare words must be upper case: "Error: ..." is a Rust error, not a level.
Level level_of(sv word, bool any_case) {
  static constexpr sv kErrors[] = {"ERR", "ERROR", "CRITICAL", "FATAL", "PANIC"};
  static constexpr sv kOthers[] = {"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING"};
  const auto same = [&](sv a, sv b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if ((any_case ? lower(a[i]) : a[i]) != (any_case ? lower(b[i]) : b[i])) return false;
    return true;
  };
  for (sv e : kErrors)
    if (same(word, e)) return Level::error;
  for (sv o : kOthers)
    if (same(word, o)) return Level::other;
  return Level::none;
}

// Length of a timestamp-like token at p ("2026-11-30", "10:01:42,123",
// "2026-11-30T10:01:42.123456Z", "+01:00"), or 0.
std::size_t timestamp_token(sv s, std::size_t p) {
  std::size_t q = p;
  bool colon = false, dash = false;
  while (q < s.size() && (is_digit(s[q]) || one_of("-:.,/TZ+", s[q])) && q - p < 40) {
    colon = colon || s[q] == ':';
    dash = dash || s[q] == '-' || s[q] == '/';
    ++q;
  }
  if (q < s.size() && is_ident(s[q])) return 0;
  const std::size_t n = q - p;
  // A time needs "hh:mm:ss" (8); a date alone "yyyy-mm-dd" (10).
  return (n >= 8 && colon) || (n == 10 && dash) ? n : 0;
}

struct LinePrefix {
  std::size_t length = 0;  // where the message starts (one blank after the last token taken)
  bool record = false;  // a timestamp or a level: this line is a log record of its own
  Level level = Level::none;
};

// Recognises the usual log-line headers: timestamps, level words (bare,
// bracketed, or Python's "ERROR:root:"), glog "E1130 10:01:42.123 12 f.cc:3]",
// "[rank0]"-style tags, docker compose "name-1  | ", Ray "(pid=12)", a Rust
// tracing target after the level, and a Python logger name between
// separators after a timestamp. Deliberately loose: it only has to tell a new
// log record from a continuation line, the matcher strips prefixes itself.
LinePrefix read_prefix(sv s) {
  LinePrefix out;
  if (s.empty() || is_blank(s.front())) return out;
  std::size_t p = 0;
  bool took = false, timestamp = false, glog = false, after_level = false;
  for (int k = 0; k < 12 && p < s.size() && p < kMaxPrefixBytes; ++k) {
    std::size_t q = p;
    while (q < s.size() && is_blank(s[q])) ++q;
    if (q >= s.size()) break;
    const char c = s[q];
    std::size_t end = 0;
    if (c == '[') {
      const std::size_t close = s.find(']', q);
      const sv inside = close == npos ? sv() : s.substr(q + 1, close - q - 1);
      if (close != npos && close - q < 128 && !inside.empty() && inside.find('[') == npos &&
          inside.find(", ") == npos) {
        end = close + 1;
        // "[ERROR]", "[2026-11-30T10:01:42Z ERROR app]", "[INFO|file.py:12]"
        for (std::size_t i = 0; i < inside.size();) {
          std::size_t j = i;
          while (j < inside.size() && is_alpha(inside[j])) ++j;
          if (j > i) {
            const Level l = level_of(inside.substr(i, j - i), true);
            if (l != Level::none && out.level == Level::none) out.level = l;
            i = j;
          } else {
            ++i;
          }
        }
        out.record = out.record || out.level != Level::none || timestamp_token(inside, 0) > 0;
      }
    } else if (c == '(') {
      const std::size_t close = s.find(')', q);
      if (close != npos && close - q < 128 && s.substr(q, close - q).find("pid=") != npos) end = close + 1;
    } else if (is_digit(c)) {
      if (const std::size_t n = timestamp_token(s, q)) {
        end = q + n;
        timestamp = out.record = true;
      } else if (timestamp || glog) {  // a pid or thread id after the time
        std::size_t e = q;
        while (e < s.size() && is_digit(s[e])) ++e;
        if (e == s.size() || is_blank(s[e])) end = e;
      }
    } else if (glog && (is_ident(c) || c == '.')) {  // "file.cc:123]" closes a glog header
      std::size_t e = q;
      while (e < s.size() && (is_ident(s[e]) || s[e] == '.' || s[e] == '-')) ++e;
      if (e < s.size() && s[e] == ':') {
        std::size_t d = e + 1;
        while (d < s.size() && is_digit(s[d])) ++d;
        if (d > e + 1 && d < s.size() && s[d] == ']') end = d + 1;
      }
      glog = false;
    } else if (one_of("|-:", c) && took && (q + 1 == s.size() || is_blank(s[q + 1]))) {
      end = q + 1;  // a separator between header fields
    }
    if (end == 0 && is_upper(c)) {
      std::size_t e = q;
      while (e < s.size() && is_alpha(s[e])) ++e;
      const Level l = level_of(s.substr(q, e - q), false);
      if (l != Level::none && (e == s.size() || is_blank(s[e]) || s[e] == ':' || s[e] == '|' || s[e] == ']')) {
        end = e;
        if (out.level == Level::none) out.level = l;
        out.record = after_level = true;
        // Python's default format glues the logger on: "ERROR:root:message".
        if (e + 1 < s.size() && s[e] == ':' && !is_blank(s[e + 1])) {
          std::size_t n = e + 1;
          while (n < s.size() && (is_ident(s[n]) || s[n] == '.' || s[n] == '-')) ++n;
          end = (n < s.size() && s[n] == ':') ? n + 1 : e + 1;
        }
      } else if (one_of("IWEF", c) && (!took || !out.record)) {
        // Since the log-line grammar: a glog header after a worker tag is a
        // record too ("[rank0]: E1130 ..."); its letter is a level only at
        // the line start, where the literal search looks for it.
        std::size_t d = q + 1;
        while (d < s.size() && is_digit(s[d])) ++d;
        if ((d - q - 1 == 4 || d - q - 1 == 8) && d < s.size() && s[d] == ' ') {
          end = d;
          glog = out.record = true;
          if (!took && out.level == Level::none) out.level = (c == 'E' || c == 'F') ? Level::error : Level::other;
        }
      }
    }
    if (end == 0 && (is_alpha(c) || c == '_')) {
      std::size_t e = q;
      bool marked = false;  // a digit, '-', '_', '.' or "::" inside: not an ordinary word
      while (e < s.size() && e - q < 128 && (is_ident(s[e]) || one_of(".-:<>/", s[e]))) {
        const bool inner_colon = s[e] == ':' && e + 1 < s.size() && s[e + 1] == ':';
        marked = marked || is_digit(s[e]) || s[e] == '-' || s[e] == '_' || s[e] == '.' || inner_colon;
        ++e;
      }
      std::size_t r = e;
      while (r < s.size() && is_blank(s[r])) ++r;
      const bool separated =
          r > e && r < s.size() && (s[r] == '|' || s[r] == '-') && (r + 1 == s.size() || is_blank(s[r + 1]));
      if (separated && (marked || timestamp)) {
        end = e;  // docker compose "worker-1  |", or "%(name)s - " after a timestamp
      } else if (after_level && marked && !is_upper(c) && e > q + 1 && s[e - 1] == ':' &&
                 (e == s.size() || is_blank(s[e]))) {
        end = e;  // tracing "candle_app::model:" after the level
      }
    }
    if (end == 0) break;
    p = end;
    took = true;
  }
  if (!took) return LinePrefix{};
  if (p < s.size() && is_blank(s[p])) ++p;  // a tagged frame keeps its own indentation after one blank
  out.length = p;
  return out;
}

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

// Offset of a traceback header ending the line, or npos. Whatever stands
// before it is taken as the line's prefix.
std::size_t traceback_header_at(sv line) {
  const sv t = rtrim(line);
  if (!ends_with(t, kTracebackHeader)) return npos;
  const std::size_t at = t.size() - kTracebackHeader.size();
  if (at > 0 && is_ident(t[at - 1])) return npos;
  return at;
}
bool is_traceback_header(sv c) { return trim(c) == kTracebackHeader; }
bool is_chain_marker(sv c) {
  const sv t = trim(c);
  return t == kDirectCause || t == kDuringHandling;
}
bool is_rust_error(sv c) { return c == "Error:" || starts_with(c, "Error: "); }
bool is_caused_by(sv c) { return trim(c) == "Caused by:"; }
bool is_backtrace_header(sv c) {
  const sv t = trim(c);
  return t == "Stack backtrace:" || t == "stack backtrace:" || t == "Backtrace:";
}
bool is_rust_note(sv c) {
  // Since the log-line grammar (src/log_line.hpp): color-backtrace's note too.
  return starts_with(c, "note: ") || starts_with(c, "Backtrace omitted") || starts_with(c, "Run with RUST_BACKTRACE") ||
         starts_with(c, "Run with COLORBT_SHOW_HIDDEN");
}
bool is_panic(sv c) {
  if (!starts_with(c, "thread '")) return false;
  const std::size_t k = c.find(" panicked at ");
  return k != npos && k > 8 && (c[k - 1] == '\'' || c[k - 1] == ')');
}
bool is_terminate(sv c) {
  return starts_with(c, kTerminate) || (starts_with(c, "libc++abi") && c.find(" uncaught exception of type ") != npos);
}
bool is_c10_raised(sv c) { return starts_with(c, kC10Raised); }
bool is_c10_frame(sv c) {
  return (starts_with(c, "frame #") && c.size() > 7 && is_digit(c[7])) || trim(c) == "<omitting python frames>";
}

// "ValueError: msg", "torch.OutOfMemoryError: msg", "c10::Error: msg":
// a line that names an exception class, with nothing above it to say so.
bool is_exception_line(sv c) {
  std::size_t q = 0;
  while (q < c.size() && q < 256 && (is_ident(c[q]) || c[q] == '.' || c[q] == ':')) {
    if (c[q] == ':' && !(q + 1 < c.size() && c[q + 1] == ':') && !(q > 0 && c[q - 1] == ':')) break;
    ++q;
  }
  // Since the log-line grammar: a class with nothing after its colon too
  // ("ImportError:" with the message on the lines below).
  if (q == 0 || q >= c.size() || c[q] != ':' || (q + 1 < c.size() && c[q + 1] != ' ')) return false;
  sv cls = c.substr(0, q);
  if (cls == "Error") return false;  // bare "Error:" is Rust's
  const std::size_t sep = cls.find_last_of(".:");
  if (sep != npos) cls = cls.substr(sep + 1);
  if (cls.empty() || !is_upper(cls.front())) return false;
  return ends_with(cls, "Error") || ends_with(cls, "Exception");
}

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
  if (line.find('\x1b') == npos) return line;
  scratch.clear();
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b') {
      scratch += line[i];
      continue;
    }
    if (i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && line[i] >= 0x20 && line[i] <= 0x3F) ++i;
    } else {
      ++i;
    }
  }
  return scratch;
}

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

class Scanner {
 public:
  Scanner(std::string_view file, const Catalog& catalog, const BlockVisitor& visit, const ScanOptions& options,
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

  void start(sv line, sv plain, std::uint64_t number, bool cut) {
    held_ = 0;
    if (const std::size_t at = traceback_header_at(plain); at != npos) {
      open(BlockKind::python_traceback, State::py_frames, plain.substr(0, at), line, number, cut);
      return;
    }
    const LinePrefix p = read_prefix(plain);
    const sv c = ltrim(plain.substr(p.length));
    const sv prefix = plain.substr(0, plain.size() - c.size());
    if (is_panic(c)) return open(BlockKind::rust_panic, State::panic_message, prefix, line, number, cut);
    if (is_terminate(c)) return open(BlockKind::libtorch, State::torch_message, prefix, line, number, cut);
    if (is_c10_raised(c)) {
      open_with_lookback(prefix, line, number, cut);
      return;
    }
    const bool not_below_error = p.level != Level::other;
    if (not_below_error && is_rust_error(c))
      return open(BlockKind::rust_error, State::rust_message, prefix, line, number, cut);
    if (p.level == Level::error || (p.level == Level::none && is_exception_line(c)))
      return open(BlockKind::error_line, State::error_line, prefix, line, number, cut);
    // Ordinary log noise. Unprefixed lines are kept for a moment: they may
    // be the message of a c10 backtrace that follows.
    if (trim(plain).empty() || p.record) {
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
    b.file = std::string(file_);
    b.line = first_line_;
    b.lines = text_.lines();
    b.kind = kind_;
    b.truncated = truncated_ || text_.truncated();
    b.text = text_.take();
    text_ = BlockText(0);
    MatchResult r = catalog_.match(b.text, options_.context);
    b.diagnosis = std::move(r.diagnosis);
    b.problems = std::move(r.problems);
    ++stats_.blocks;
    if (b.diagnosis) ++stats_.matched;
    visit_(b);
  }

  sv file_;
  const Catalog& catalog_;
  const BlockVisitor& visit_;
  const ScanOptions& options_;
  ScanStats& stats_;
  std::string scratch_;

  bool open_ = false;
  BlockKind kind_ = BlockKind::error_line;
  State state_ = State::error_line;
  std::string prefix_;  // the log prefix of the line that opened the block (or its traceback)
  std::uint64_t first_line_ = 0;
  std::size_t held_ = 0;  // blank lines seen and not yet placed
  std::size_t message_lines_ = 0;
  bool truncated_ = false;
  BlockText text_{0};
  std::deque<Held> above_;
};

}  // namespace

inline ScanStats scan_reference(std::istream& in, std::string_view file, const Catalog& catalog,
                                const BlockVisitor& visit, const ScanOptions& options) {
  ScanStats stats;
  Scanner scanner(file, catalog, visit, options, stats);
  // Floors that keep a traceback header and its log prefix readable however
  // small the options are set.
  const std::size_t max_line = std::max<std::size_t>(options.max_line_bytes, 256);
  std::string chunk(kReadChunk, '\0');
  std::string line;
  bool cut = false;
  std::uint64_t reported = 0;
  std::streambuf* buf = in.rdbuf();
  while (buf != nullptr) {
    // sgetn on the buffer: no sentry or formatting work per chunk, and a
    // short read is the end of input.
    const std::streamsize got = buf->sgetn(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    if (got <= 0) break;
    const std::size_t n = static_cast<std::size_t>(got);
    stats.bytes += n;
    std::size_t pos = 0;
    while (pos < n) {
      const void* nl = std::memchr(chunk.data() + pos, '\n', n - pos);
      const std::size_t stop =
          nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - chunk.data()) : n;
      const std::size_t room = max_line > line.size() ? max_line - line.size() : 0;
      const std::size_t piece = std::min(room, stop - pos);
      line.append(chunk.data() + pos, piece);
      cut = cut || piece < stop - pos;
      pos = stop;
      if (nl != nullptr) {
        ++stats.lines;
        scanner.feed(line, stats.lines, cut);
        line.clear();
        cut = false;
        ++pos;
      }
    }
    if (options.on_progress && stats.bytes - reported >= options.progress_every) {
      reported = stats.bytes;
      options.on_progress(stats.bytes);
    }
  }
  if (!line.empty() || cut) {
    ++stats.lines;
    scanner.feed(line, stats.lines, cut);
  }
  scanner.finish();
  if (options.on_progress) options.on_progress(stats.bytes);
  return stats;
}

}  // namespace errshim::reference
