// The log-line grammar: what one line of a log or an error text is, read the
// same way by the normaliser (src/match/normalize.cpp) and the log scanner
// (src/report/scan.cpp). Log prefixes (timestamps, levels, logger names, worker and
// container tags, glog headers), level words and which of them are errors,
// the wrapper lines of Python, Rust and libtorch errors, and terminal escapes.
//
// Every function reads a string_view and allocates nothing: the scanner calls
// them on every line it looks at. What a block or a message is made of is the
// caller's business; this file only says what a line is.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "chars.hpp"
#include "text.hpp"

namespace errshim::log_line {

using sv = std::string_view;

constexpr sv kTracebackHeader = "Traceback (most recent call last):";
constexpr sv kDirectCause = "The above exception was the direct cause of the following exception:";
constexpr sv kDuringHandling = "During handling of the above exception, another exception occurred:";
constexpr sv kC10Raised = "Exception raised from ";
// Without the quote: a class name printed unquoted is still a terminate line.
constexpr sv kTerminate = "terminate called after throwing an instance of ";

// ------------------------------------------------------------ log prefixes

// none: not a level word. TRACE..WARNING are other; ERR, ERROR, CRITICAL,
// FATAL and PANIC are error.
enum class Level { none, other, error };

// The level `word` names. Bare words must be upper case ("Error: ..." is a
// Rust error, not a level); inside brackets ("[error]") any case is one.
Level level_of(sv word, bool any_case) noexcept;

struct Prefix {
  std::size_t length = 0;  // where the message starts: the tokens, their separators and one blank
  bool record = false;  // a timestamp, a level or a record header: a log record of its own
  Level level = Level::none;  // the first level the prefix states
};

// Removes log-line prefixes, repeatedly, from the line start: timestamps,
// level words (bare, bracketed, Python's "ERROR:root:"), glog / c10 headers,
// "[rank0]"-style worker tags, Ray "(pid=12)", docker compose "name-1  | ",
// a Rust tracing target after the level, a logger name between separators
// after a timestamp. A tagged frame keeps its own indentation after the
// prefix ("[rank0]:   File ..."): frames are told apart by it.
Prefix read_prefix(sv line) noexcept;

// ------------------------------------------------------------ wrapper lines
// `t` is a line with its prefix removed.

inline bool indented(sv t) { return !t.empty() && detail::is_blank(t[0]); }

inline bool is_traceback_header(sv t) { return detail::trim(t) == kTracebackHeader; }
// Offset of a traceback header ending the line (what stands before it is the
// line's prefix, whatever it is), or npos.
std::size_t traceback_header_at(sv line) noexcept;
inline bool is_chain_marker(sv t) {
  const sv x = detail::trim(t);
  return x == kDirectCause || x == kDuringHandling;
}
inline bool is_py_frame(sv t) { return indented(t) && detail::starts_with(detail::ltrim(t), "File \""); }

// "ValueError: msg", "torch.OutOfMemoryError: msg", "KeyboardInterrupt",
// "ray.exceptions.RayTaskError(ValueError): msg". `strict` is for a line with
// no traceback above it: then the class must read like an exception class.
struct ExceptionLine {
  sv cls;
  sv message;
};
std::optional<ExceptionLine> exception_line(sv t, bool strict) noexcept;

inline bool is_rust_error(sv t) { return t == "Error:" || detail::starts_with(t, "Error: "); }
inline bool is_caused_by(sv t) { return detail::trim(t) == "Caused by:"; }
inline bool is_backtrace_header(sv t) {
  const sv x = detail::trim(t);
  return x == "Stack backtrace:" || x == "stack backtrace:" || x == "Backtrace:";
}
// Lines Rust tooling prints after an error that are never part of it.
inline bool is_rust_note(sv t) {
  return detail::starts_with(t, "note: ") || detail::starts_with(t, "Backtrace omitted") ||
         detail::starts_with(t, "Run with RUST_BACKTRACE") || detail::starts_with(t, "Run with COLORBT_SHOW_HIDDEN");
}
// "N: " with N digits: a numbered anyhow cause, or a Rust backtrace frame.
bool is_numbered(sv t) noexcept;
// A Rust backtrace line: "   3: candle_core::tensor::Tensor::matmul" or "at src/x.rs:1:2".
inline bool is_rust_frame(sv t) {
  const sv x = detail::ltrim(t);
  return is_numbered(x) || detail::starts_with(x, "at ");
}
// The part after " panicked at " of "thread 'main' panicked at ..." (newer
// Rust prints "thread 'main' (1234) panicked at").
std::optional<sv> panic_rest(sv t) noexcept;
inline bool is_panic(sv t) { return panic_rest(t).has_value(); }

// "terminate called after throwing an instance of 'T'", or libc++abi's
// one-line "... uncaught exception of type T: msg".
inline bool is_terminate(sv t) {
  return detail::starts_with(t, kTerminate) ||
         (detail::starts_with(t, "libc++abi") && t.find(" uncaught exception of type ") != sv::npos);
}
inline bool is_c10_raised(sv t) { return detail::starts_with(t, kC10Raised); }
inline bool is_c10_frame(sv t) {
  return (detail::starts_with(t, "frame #") && t.size() > 7 && detail::is_digit(t[7])) ||
         detail::trim(t) == "<omitting python frames>";
}

// What a line (prefix removed) is, the first rule that holds in this order.
enum class Marker {
  none,
  traceback_header,
  chain_marker,
  py_frame,
  rust_error,
  caused_by,
  backtrace_header,
  note,
  panic,
  terminate,
  c10_raised,
  c10_frame,
  rust_frame,  // indented: "   3: candle_core::...", "at src/x.rs:1:2"
  exception,  // an exception line with nothing above it (strict)
};
Marker marker_of(sv t) noexcept;

// What the normaliser and the scanner each make of one line of a log: the
// prefix each strips, the level it states, whether it is a record of its own,
// and what the rest is. Both must say the same of every line; the test that
// compares them (tests/log_line_test.cpp) calls these.
struct LineClass {
  std::size_t prefix = 0;
  Level level = Level::none;
  bool record = false;
  Marker marker = Marker::none;
  bool operator==(const LineClass& o) const {
    return prefix == o.prefix && level == o.level && record == o.record && marker == o.marker;
  }
};
// One line without its '\n', as src/match/normalize.cpp reads it (escapes and NULs
// removed, the last of its carriage-return redraws).
LineClass normaliser_class(sv line);
// One line without its '\n', as src/report/scan.cpp reads it (what a terminal shows
// of it, escapes removed).
LineClass scanner_class(sv line);

// ------------------------------------------------------------ terminal escapes

// The index after the escape sequence whose ESC byte is at s[esc]: CSI
// (parameters, intermediates, one final byte), OSC (up to BEL or ESC '\',
// never past a line), or a short escape (intermediates, one final byte).
inline std::size_t escape_end(sv s, std::size_t esc) {
  const std::size_t n = s.size();
  std::size_t i = esc + 1;
  if (i >= n) return n;
  const char kind = s[i];
  if (kind == '[') {
    ++i;
    while (i < n && s[i] >= 0x20 && s[i] <= 0x3F) ++i;
    if (i < n && s[i] >= 0x40 && s[i] <= 0x7E) ++i;
  } else if (kind == ']') {
    ++i;
    while (i < n && s[i] != '\a' && s[i] != '\x1b' && s[i] != '\n') ++i;
    if (i < n && s[i] == '\a')
      ++i;
    else if (i + 1 < n && s[i] == '\x1b' && s[i + 1] == '\\')
      i += 2;
  } else {
    while (i < n && s[i] >= 0x20 && s[i] <= 0x2F) ++i;
    if (i < n && s[i] >= 0x30 && s[i] <= 0x7E) ++i;
  }
  return i;
}

}  // namespace errshim::log_line
