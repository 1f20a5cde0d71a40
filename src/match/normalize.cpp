// Cutting what a user received down to the bare error messages.
//
// One forward scan over lines with small, bounded look-arounds; no regular
// expressions, so the cost stays linear in the (already bounded) input and a
// hostile message cannot make matching slow.

#include "errshim/normalize.hpp"
#include "chars.hpp"
#include "log_line.hpp"
#include "text.hpp"
#include "utf8.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace errshim {
namespace {

using sv = std::string_view;
constexpr std::size_t npos = sv::npos;

constexpr std::size_t kMaxLookBack = 256;  // lines taken above a c10 backtrace or "Caused by:"
constexpr std::size_t kMaxOldPanicLines = 64;  // lines an old-style quoted panic message may span
constexpr int kMaxDebugDepth = 8;  // nesting followed in a Rust Debug value

// ------------------------------------------------------------------ text helpers

using detail::is_blank;
using detail::is_digit;
using detail::is_ident;
using detail::is_space;
using detail::is_upper;
using detail::ltrim;
using detail::rtrim;
using detail::starts_with;
using detail::trim;
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0u) == 0x80u; }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

std::size_t leading_blanks(sv s) { return s.size() - ltrim(s).size(); }

// Number of consecutive digits at p, counting at most `max`.
std::size_t count_digits(sv s, std::size_t p, std::size_t max) {
  std::size_t n = 0;
  while (p + n < s.size() && n < max && is_digit(s[p + n])) ++n;
  return n;
}

// Largest cut <= n that does not split a UTF-8 sequence. Invalid UTF-8 has no
// boundary to respect, so then the cut stays at n.
std::size_t utf8_floor(sv s, std::size_t n) {
  if (n >= s.size()) return s.size();
  std::size_t k = n;
  while (k > 0 && n - k < 3 && is_continuation(s[k])) --k;
  return is_continuation(s[k]) ? n : k;
}
// Smallest start >= n that does not begin inside a UTF-8 sequence.
std::size_t utf8_ceil(sv s, std::size_t n) {
  std::size_t k = n;
  while (k < s.size() && k - n < 3 && is_continuation(s[k])) ++k;
  return (k < s.size() && is_continuation(s[k])) ? n : k;
}

void trim_in_place(std::string& s) {
  sv t = trim(s);
  if (t.size() == s.size()) return;
  const std::size_t start = static_cast<std::size_t>(t.data() - s.data());
  s.erase(start + t.size());
  s.erase(0, start);
}

// Joins lines with '\n' up to kMaxSegmentBytes, dropping trailing blanks of
// each line; a message cut at the cap still ends on a whole UTF-8 character.
class TextBuilder {
 public:
  void add_line(sv line) {
    line = rtrim(line);
    if (full_) return;
    std::size_t room = kMaxSegmentBytes - text_.size();
    if (started_) {
      if (room == 0) {
        full_ = true;
        return;
      }
      text_ += '\n';
      --room;
    }
    started_ = true;
    if (line.size() > room) {
      line = line.substr(0, utf8_floor(line, room));
      full_ = true;
    }
    text_.append(line.data(), line.size());
  }
  std::string take() {
    std::string out = std::move(text_);
    text_.clear();
    trim_in_place(out);
    started_ = full_ = false;
    return out;
  }

 private:
  std::string text_;
  bool started_ = false;
  bool full_ = false;
};

// ------------------------------------------------------------- bytes and lines

// Position of the first `c` in s at or after `from`, s.size() when none.
// memchr scans many bytes per cycle; the loops below only visit its hits.
std::size_t find_byte(sv s, char c, std::size_t from) {
  if (from >= s.size()) return s.size();
  const void* hit = std::memchr(s.data() + from, c, s.size() - from);
  return hit == nullptr ? s.size() : static_cast<std::size_t>(static_cast<const char*>(hit) - s.data());
}

bool needs_cleaning(sv in) { return find_byte(in, '\0', 0) < in.size() || find_byte(in, '\x1b', 0) < in.size(); }

// Copies `in` to `out` without terminal escapes and NUL bytes: colours are
// noise to matching, and a NUL would cut the message short for C consumers.
// The text between them is appended in runs.
void append_clean(std::string& out, sv in) {
  const std::size_t n = in.size();
  std::size_t i = 0;
  std::size_t next_nul = find_byte(in, '\0', 0);
  std::size_t next_esc = find_byte(in, '\x1b', 0);
  while (i < n) {
    // An escape sequence may have swallowed the byte found before: look again.
    if (next_nul < i) next_nul = find_byte(in, '\0', i);
    if (next_esc < i) next_esc = find_byte(in, '\x1b', i);
    const std::size_t stop = std::min(next_nul, next_esc);
    out.append(in.data() + i, stop - i);
    if (stop >= n) break;
    if (in[stop] == '\0') {
      i = stop + 1;  // the NUL itself is dropped
      continue;
    }
    i = log_line::escape_end(in, stop);
  }
}

// Calls on_line(line) for each line of s, split on "\n", "\r\n" and a lone
// "\r": progress bars redraw with a lone CR, and each redraw is a line of its
// own. A last line without a terminator counts when it is not empty.
template <class OnLine>
void for_each_line(sv s, OnLine&& on_line) {
  const std::size_t n = s.size();
  // Both positions are searched again only once passed, so the bytes are
  // scanned once however the two terminators interleave.
  std::size_t next_nl = find_byte(s, '\n', 0);
  std::size_t next_cr = find_byte(s, '\r', 0);
  std::size_t start = 0;
  while (start < n) {
    if (next_nl < start) next_nl = find_byte(s, '\n', start);
    if (next_cr < start) next_cr = find_byte(s, '\r', start);
    const std::size_t end = std::min(next_nl, next_cr);
    on_line(s.substr(start, end - start));
    if (end >= n) break;
    start = end + 1;
    if (s[end] == '\r' && start < n && s[start] == '\n') ++start;
  }
}

// ----------------------------------------------------------------- log prefixes

struct Prefix {
  std::size_t length = 0;
  std::uint64_t signature = 0;  // the prefix with digits and blanks removed, hashed
};

// Removes log-line prefixes (log_line.hpp). The signature lets a parser tell
// its own block's lines (same prefix shape, e.g. every line "[rank0]:") from
// interleaved log records (a timestamp appears).
Prefix strip_prefix(sv s) {
  Prefix out;
  out.length = log_line::read_prefix(s).length;
  if (out.length > 0) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (std::size_t i = 0; i < out.length; ++i) {
      if (is_digit(s[i]) || is_blank(s[i])) continue;
      h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
    }
    out.signature = h | 1u;  // never 0, which means "no prefix"
  }
  return out;
}

// ------------------------------------------------------------- line predicates

using log_line::ExceptionLine;
using log_line::indented;
using log_line::is_backtrace_header;
using log_line::is_c10_frame;
using log_line::is_c10_raised;
using log_line::is_caused_by;
using log_line::is_chain_marker;
using log_line::is_numbered;
using log_line::is_py_frame;
using log_line::is_rust_error;
using log_line::is_rust_frame;
using log_line::is_rust_note;
using log_line::is_terminate;
using log_line::is_traceback_header;
using log_line::kTerminate;
using log_line::panic_rest;

constexpr sv kUnwrapErr = "called `Result::unwrap()` on an `Err` value: ";

// Column of the colon of an indented numbered line, npos otherwise.
std::size_t numbered_colon(sv t) {
  const std::size_t lead = leading_blanks(t);
  return is_numbered(t.substr(lead)) ? lead + count_digits(t, lead, 6) : npos;
}

// Lines that open a wrapper of their own, so they end any message before them.
bool starts_structure(sv t) {
  return is_traceback_header(t) || is_chain_marker(t) || is_rust_error(t) || is_c10_raised(t) || is_terminate(t) ||
         panic_rest(t).has_value();
}

// "path:12:5" closing an old-style panic line after "', ".
std::size_t old_panic_end(sv line) {
  const std::size_t k = line.rfind("', ");
  if (k == npos) return npos;
  const sv loc = line.substr(k + 3);
  const std::size_t c2 = loc.rfind(':');
  if (c2 == npos || c2 == 0 || count_digits(loc, c2 + 1, 10) != loc.size() - c2 - 1 || c2 + 1 == loc.size())
    return npos;
  const std::size_t c1 = loc.rfind(':', c2 - 1);
  if (c1 == npos || c1 == 0 || count_digits(loc, c1 + 1, 10) != c2 - c1 - 1 || c1 + 1 == c2) return npos;
  return k;
}

// ------------------------------------------------------------ Rust Debug values

// Index after the string literal opening at p (an unterminated one runs to the end).
std::size_t skip_string(sv s, std::size_t p) {
  for (++p; p < s.size(); ++p) {
    if (s[p] == '\\')
      ++p;
    else if (s[p] == '"')
      return p + 1;
  }
  return s.size();
}

// Skips one Debug value from p: stops at a ',' or an unmatched closer at depth 0.
std::size_t skip_debug_value(sv s, std::size_t p) {
  std::size_t depth = 0;
  while (p < s.size()) {
    const char c = s[p];
    if (c == '"') {
      p = skip_string(s, p);
      continue;
    }
    if (c == '\'' && p + 2 < s.size() && s[p + 2] == '\'') {  // a char: ')' or '"'
      p += 3;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) return p;
      --depth;
    } else if (c == ',' && depth == 0) {
      return p;
    }
    ++p;
  }
  return p;
}

// The body of a Rust string literal as Debug prints it, unescaped. Escapes it
// cannot decode ("\0", a bad "\u{...}") are kept as written.
std::string unescape_rust(sv s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case '\'': out += '\''; break;
      case 'u': {
        // "u{10ffff}" is at most 9 bytes: look no further, so the scan stays linear.
        const std::size_t close = s.substr(0, std::min(s.size(), i + 9)).find('}', i);
        std::uint32_t cp = 0;
        bool ok = i + 1 < s.size() && s[i + 1] == '{' && close != npos && close > i + 2 && close - i - 2 <= 6;
        for (std::size_t k = i + 2; ok && k < close; ++k) {
          const char h = to_lower(s[k]);
          const int v = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : -1;
          ok = v >= 0;
          cp = cp * 16 + static_cast<std::uint32_t>(ok ? v : 0);
        }
        ok = ok && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
        if (ok) {
          detail::append_utf8(out, cp);
          i = close;
        } else {
          out += "\\u";
        }
        break;
      }
      default: out += '\\'; out += e;
    }
  }
  return out;
}

struct DebugMessage {
  std::string text;
  std::string variant;
};

// candle's Debug form, printed when main returns candle::Result:
// Msg("...") -> the string; WithBacktrace { inner: X, .. } and other
// wrappers with an `inner` field -> X; any other variant -> its Debug text
// (its Display form cannot be rebuilt). nullopt when `v` is not one Debug value.
std::optional<DebugMessage> debug_message(sv v, int depth) {
  v = trim(v);
  if (depth > kMaxDebugDepth || v.empty() || !is_upper(v[0])) return std::nullopt;
  std::size_t q = 0;
  while (q < v.size() && is_ident(v[q])) ++q;
  // The shape first: ordinary message text fails it at its first word,
  // before the whole value is scanned.
  const bool tuple = q < v.size() && v[q] == '(' && v.back() == ')';
  const bool record = starts_with(v.substr(q), " {") && v.back() == '}';
  if (!tuple && !record) return std::nullopt;  // a unit variant or plain text: the Display path keeps it as is
  if (skip_debug_value(v, 0) != v.size()) return std::nullopt;
  const std::string name(v.substr(0, q));
  if (tuple) {
    if (skip_debug_value(v, q + 1) == v.size() - 1) {  // exactly one field
      const sv inner = trim(v.substr(q + 1, v.size() - q - 2));
      if (!inner.empty() && inner[0] == '"' && skip_string(inner, 0) == inner.size() && inner.size() >= 2)
        return DebugMessage{unescape_rust(inner.substr(1, inner.size() - 2)), name};
      if (auto nested = debug_message(inner, depth + 1)) return nested;
    }
    return DebugMessage{std::string(v), name};
  }
  std::size_t p = q + 2;  // a struct variant: "Name { field: value, ... }"
  while (p + 1 < v.size()) {
    while (p < v.size() && is_blank(v[p])) ++p;
    const std::size_t f = p;
    while (p < v.size() && is_ident(v[p])) ++p;
    const sv field = v.substr(f, p - f);
    if (field.empty() || !starts_with(v.substr(p), ": ")) break;
    p += 2;
    const std::size_t e = skip_debug_value(v, p);
    if (field == "inner") {
      if (auto nested = debug_message(v.substr(p, e - p), depth + 1)) return nested;
      break;
    }
    if (e >= v.size() || v[e] != ',') break;
    p = e + 1;
  }
  return DebugMessage{std::string(v), name};
}

// ------------------------------------------------------------------- libtorch

// Old c10 (PyTorch <= 1.4) put the throw site after the message:
// "msg (infer_size at /pytorch/aten/src/ATen/InferSize.h:20)". Drops it.
void strip_old_c10_context(std::string& text) {
  const std::size_t nl = text.rfind('\n');
  const std::size_t start = nl == npos ? 0 : nl + 1;
  const sv last = sv(text).substr(start);
  if (last.empty() || last.back() != ')') return;
  const std::size_t open = last.rfind(" (");
  if (open == npos) return;
  const sv inner = last.substr(open + 2, last.size() - open - 3);
  const std::size_t at = inner.rfind(" at ");
  if (at == npos || at == 0) return;
  const sv loc = inner.substr(at + 4);
  const std::size_t colon = loc.rfind(':');
  if (colon == npos || colon == 0 || colon + 1 == loc.size() ||
      count_digits(loc, colon + 1, 10) != loc.size() - colon - 1)
    return;
  text.erase(start + open);
  trim_in_place(text);
}

// ---------------------------------------------------------------------- parser

struct Line {
  sv text;  // prefix removed, trailing blanks removed
  std::uint64_t signature;  // of the removed prefix, 0 when none
};

// Buffers normalize() reuses on each thread; a huge input's are given back.
struct Scratch {
  std::string clean;
  std::vector<Line> lines;
  std::vector<bool> plain;

  void release_if_large() {
    constexpr std::size_t kKeepBytes = 64u << 10;
    constexpr std::size_t kKeepLines = 2048;
    if (clean.capacity() > kKeepBytes) std::string().swap(clean);
    if (lines.capacity() > kKeepLines) std::vector<Line>().swap(lines);
    if (plain.capacity() > kKeepLines) std::vector<bool>().swap(plain);
  }
};

class Parser {
 public:
  // `plain` is scratch space, reused across calls.
  Parser(const std::vector<Line>& lines, std::vector<bool>& plain) : lines_(lines), n_(lines.size()), plain_(plain) {
    plain_.assign(n_, false);
  }

  std::vector<Segment> run() {
    std::size_t i = 0;
    while (i < n_) i = step(i);
    if (out_.empty()) {  // no wrapper message: what is left is the message
      TextBuilder text;
      for (std::size_t k = 0; k < n_; ++k)
        if (plain_[k]) text.add_line(lines_[k].text);
      emit(text.take(), {});
    }
    return std::move(out_);
  }

 private:
  sv text(std::size_t i) const { return lines_[i].text; }
  std::uint64_t sig(std::size_t i) const { return lines_[i].signature; }

  // Handles the block starting at line i; returns where the next one starts.
  std::size_t step(std::size_t i) {
    const sv t = text(i);
    if (t.empty()) {
      plain_[i] = true;
      return i + 1;
    }
    if (is_traceback_header(t)) return parse_traceback(i + 1, sig(i));
    if (log_line::traceback_header_at(t) != npos) {
      // A header after text of its own ("Original Traceback ...", a progress
      // bar): the text stays in the fallback when no exception follows.
      const std::size_t found = out_.size();
      const std::size_t next = parse_traceback(i + 1, sig(i));
      plain_[i] = out_.size() == found;
      return next;
    }
    if (is_py_frame(t)) return parse_traceback(i, sig(i));  // header lost, e.g. in the cut middle
    if (is_chain_marker(t)) return i + 1;
    if (is_rust_error(t)) return parse_rust_error(i);
    if (is_caused_by(t)) return parse_orphan_causes(i);
    if (auto rest = panic_rest(t)) return parse_panic(i, *rest);
    if (is_terminate(t)) return parse_terminate(i);
    if (is_c10_raised(t) || is_c10_frame(t)) return parse_c10_backtrace(i);
    if (auto exc = log_line::exception_line(t, true)) return parse_python_exception(i, *exc);
    plain_[i] = true;
    return i + 1;
  }

  void emit(std::string text, std::string cls) {
    if (text.size() > kMaxSegmentBytes) text.erase(utf8_floor(text, kMaxSegmentBytes));
    trim_in_place(text);
    if (text.empty() || out_.size() >= kMaxSegments) return;
    for (const Segment& s : out_)
      if (s.text == text && s.exception_class == cls) return;  // the same error printed twice
    out_.push_back(Segment{std::move(text), std::move(cls)});
  }

  // ---- Python

  // Frames, code lines and "~~~^^^" markers are all indented; the first line
  // of the block's own prefix that is not, is the exception line.
  std::size_t parse_traceback(std::size_t i, std::uint64_t signature) {
    for (; i < n_; ++i) {
      const sv t = text(i);
      if (t.empty()) continue;
      if (sig(i) != signature) {
        if (!indented(t) && starts_structure(t)) return i;
        continue;  // a log record from elsewhere, interleaved
      }
      if (indented(t)) continue;
      if (is_traceback_header(t) || is_chain_marker(t)) return i;
      if (auto exc = log_line::exception_line(t, false)) return parse_python_exception(i, *exc);
      return i;
    }
    return i;
  }

  std::size_t parse_python_exception(std::size_t i, ExceptionLine exc) {
    TextBuilder message;
    message.add_line(exc.message);
    bool c10 = false;
    const std::size_t next = collect_message(i + 1, sig(i), message, c10);
    std::string text = message.take();
    if (c10) strip_old_c10_context(text);
    emit(std::move(text), std::string(exc.cls));
    return next;
  }

  // The rest of a multi-line message: up to a blank line, a line of another
  // prefix shape, a chain marker or other wrapper, or a c10 backtrace (skipped).
  std::size_t collect_message(std::size_t j, std::uint64_t signature, TextBuilder& message, bool& c10) {
    for (; j < n_; ++j) {
      const sv t = text(j);
      if (t.empty()) {
        // CUDA errors end their message with a newline before the backtrace.
        if (j + 1 < n_ && is_c10_raised(text(j + 1))) {
          c10 = true;
          return skip_c10_frames(j + 1);
        }
        return j;
      }
      if (sig(j) != signature) return j;
      if (is_c10_raised(t) || is_c10_frame(t)) {
        c10 = true;
        return skip_c10_frames(j);
      }
      if (is_py_frame(t) || starts_structure(t)) return j;
      message.add_line(t);
    }
    return j;
  }

  // ---- libtorch

  std::size_t skip_c10_frames(std::size_t j) const {
    if (j < n_ && is_c10_raised(text(j))) ++j;
    while (j < n_ && is_c10_frame(text(j))) ++j;
    return j;
  }

  // Claims the paragraph of plain lines just above line i (one blank line
  // allowed in between) and returns it as one text.
  std::string take_paragraph_above(std::size_t i) {
    std::size_t end = i;
    if (end > 0 && plain_[end - 1] && text(end - 1).empty()) --end;
    std::size_t begin = end;
    while (begin > 0 && end - begin < kMaxLookBack && plain_[begin - 1] && !text(begin - 1).empty() &&
           sig(begin - 1) == sig(end - 1))
      --begin;
    TextBuilder paragraph;
    for (std::size_t k = begin; k < end; ++k) {
      paragraph.add_line(text(k));
      plain_[k] = false;
    }
    if (end < i) plain_[end] = false;
    return paragraph.take();
  }

  // A c10::Error what() printed by C++ code: message lines, then
  // "Exception raised from ..." and "frame #N:" lines.
  std::size_t parse_c10_backtrace(std::size_t i) {
    std::string message = take_paragraph_above(i);
    strip_old_c10_context(message);
    emit(std::move(message), "c10::Error");
    return skip_c10_frames(i);
  }

  // "terminate called after throwing an instance of 'c10::Error'" then
  // "  what():  msg", or libc++'s one-line "... uncaught exception of type T: msg".
  std::size_t parse_terminate(std::size_t i) {
    const sv t = text(i);
    std::string cls;
    TextBuilder message;
    std::size_t j = i + 1;
    if (starts_with(t, kTerminate)) {
      sv rest = t.substr(kTerminate.size());
      if (!rest.empty() && rest[0] == '\'') rest.remove_prefix(1);
      cls = std::string(rest.substr(0, rest.find('\'')));
      if (j >= n_ || !starts_with(ltrim(text(j)), "what():")) return j;
      message.add_line(ltrim(ltrim(text(j)).substr(7)));
      ++j;
    } else {
      constexpr sv kOfType = " uncaught exception of type ";
      const sv rest = t.substr(t.find(kOfType) + kOfType.size());
      const std::size_t colon = rest.find(": ");
      cls = std::string(rest.substr(0, colon));
      if (colon != npos) message.add_line(rest.substr(colon + 2));
    }
    bool c10 = false;
    j = collect_message(j, sig(i), message, c10);
    std::string out = message.take();
    if (c10) strip_old_c10_context(out);
    emit(std::move(out), std::move(cls));
    return j;
  }

  // ---- Rust

  // anyhow "Caused by:" entries: "    0: msg" numbered when there are several,
  // one indented message otherwise; deeper-indented lines continue an entry,
  // except backtrace frames (a candle WithBacktrace cause prints its frames).
  std::size_t parse_causes(std::size_t k, std::uint64_t signature, std::vector<std::string>& causes) {
    if (k >= n_ || !indented(text(k))) return k;
    const std::size_t colon = numbered_colon(text(k));
    const bool numbered = colon != npos;
    const std::size_t column = numbered ? colon + 2 : leading_blanks(text(k));
    TextBuilder cause;
    bool open = false;
    bool in_frames = false;
    for (; k < n_; ++k) {
      const sv t = text(k);
      if (t.empty() || !indented(t) || sig(k) != signature) break;
      if (numbered ? numbered_colon(t) == colon : !open) {
        if (open) causes.push_back(cause.take());
        open = true;
        in_frames = false;
        cause.add_line(t.substr(std::min(column, t.size())));
        continue;
      }
      const sv body = t.substr(std::min(column, leading_blanks(t)));
      in_frames = in_frames || is_numbered(ltrim(body));
      if (!in_frames) cause.add_line(body);
    }
    if (open) causes.push_back(cause.take());
    return k;
  }

  // Sections after an error: "Caused by:", backtraces, eyre's "Location:",
  // notes. Blank lines between them belong to the error.
  std::size_t parse_rust_sections(std::size_t j, std::uint64_t signature, std::vector<std::string>& causes) {
    while (true) {
      std::size_t k = j;
      while (k < n_ && text(k).empty()) ++k;
      if (k >= n_) return j;
      const sv t = text(k);
      if (is_caused_by(t)) {
        j = parse_causes(k + 1, signature, causes);
      } else if (is_backtrace_header(t) || t == "Location:") {
        j = k + 1;
        while (j < n_ && indented(text(j))) ++j;
      } else if (is_rust_note(t)) {
        j = k + 1;
      } else {
        return j;
      }
    }
  }

  void emit_rust_chain(std::vector<std::string>& causes, std::string top) {
    for (auto it = causes.rbegin(); it != causes.rend(); ++it) emit(std::move(*it), {});  // root first
    emit(std::move(top), {});
  }

  // "Error: top" [multi-line], then the sections. Also candle's Debug form
  // "Error: Msg(\"...\")" and color-eyre's "Error:\n   0: top\n   1: cause".
  std::size_t parse_rust_error(std::size_t i) {
    const std::uint64_t signature = sig(i);
    const sv rest = trim(text(i).substr(6));
    if (auto debug = debug_message(rest, 0)) {
      emit(std::move(debug->text), std::move(debug->variant));
      std::vector<std::string> none;  // a Debug value is one line with no chain after it
      return parse_rust_sections(i + 1, signature, none);
    }
    std::vector<std::string> causes;
    TextBuilder top;
    top.add_line(rest);
    std::size_t j = i + 1;
    if (rest.empty() && j < n_ && numbered_colon(text(j)) != npos && indented(text(j))) {
      j = parse_causes(j, signature, causes);  // color-eyre: entry 0 is the top message
    } else {
      bool in_frames = false;  // candle's WithBacktrace Display appends indented frames
      for (; j < n_; ++j) {
        const sv t = text(j);
        if (t.empty() || sig(j) != signature || is_caused_by(t) || is_backtrace_header(t) || is_rust_note(t) ||
            t == "Location:")
          break;
        if (indented(t) && (in_frames || is_rust_frame(t))) {
          in_frames = true;
          continue;
        }
        if (!indented(t) && starts_structure(t)) break;
        top.add_line(t);
      }
    }
    j = parse_rust_sections(j, signature, causes);
    emit_rust_chain(causes, top.take());
    return j;
  }

  // "Caused by:" with no "Error:" line, as when a log record prints an
  // anyhow error with {:?}: the paragraph above is the top message.
  std::size_t parse_orphan_causes(std::size_t i) {
    std::string top = take_paragraph_above(i);
    std::vector<std::string> causes;
    const std::size_t j = parse_rust_sections(i, sig(i), causes);
    emit_rust_chain(causes, std::move(top));
    return j;
  }

  void emit_panic(std::string message) {
    // `.unwrap()` on a candle::Result prints the error's Debug form.
    if (starts_with(message, kUnwrapErr)) {
      if (auto debug = debug_message(sv(message).substr(kUnwrapErr.size()), 0)) message = std::move(debug->text);
    }
    emit(std::move(message), "panic");
  }

  std::size_t skip_panic_tail(std::size_t j) const {
    while (j < n_) {
      const sv t = text(j);
      if (is_rust_note(t)) {
        ++j;
      } else if (is_backtrace_header(t)) {
        ++j;
        while (j < n_ && indented(text(j))) ++j;
      } else {
        break;
      }
    }
    return j;
  }

  // New form: "thread 'main' panicked at src/main.rs:10:5:" then the message
  // lines. Old form: "thread 'main' panicked at 'msg', src/main.rs:10:5",
  // where the quoted message may span lines.
  std::size_t parse_panic(std::size_t i, sv rest) {
    TextBuilder message;
    if (!rest.empty() && rest[0] == '\'') {
      const sv body = rest.substr(1);
      for (std::size_t j = i; j < n_ && j - i < kMaxOldPanicLines; ++j) {
        if (j > i && starts_structure(text(j))) break;
        const sv line = j == i ? body : text(j);
        const std::size_t end = old_panic_end(line);
        if (end != npos) {
          message.add_line(line.substr(0, end));
          emit_panic(message.take());
          return skip_panic_tail(j + 1);
        }
        message.add_line(line);
      }
      message.take();
      message.add_line(body);  // never closed: keep the first line only
      emit_panic(message.take());
      return skip_panic_tail(i + 1);
    }
    std::size_t j = i + 1;
    for (; j < n_; ++j) {
      const sv t = text(j);
      if (t.empty() || sig(j) != sig(i) || is_rust_note(t) || is_backtrace_header(t) || starts_structure(t)) break;
      message.add_line(t);
    }
    emit_panic(message.take());
    return skip_panic_tail(j);
  }

  const std::vector<Line>& lines_;
  std::size_t n_;
  std::vector<bool>& plain_;  // lines no wrapper claimed: the fallback message
  std::vector<Segment> out_;
};

Normalized normalize_impl(sv raw) {
  Normalized result;
  sv head = raw;
  sv tail;
  if (raw.size() > kMaxInputBytes) {
    // Python prints the error last, Rust and libtorch first: keep both ends,
    // cut at line boundaries so no half line is taken for a message.
    result.truncated = true;
    const std::size_t half = kMaxInputBytes / 2;
    head = raw.substr(0, half);
    const std::size_t last_nl = head.rfind('\n');
    head = last_nl != npos ? head.substr(0, last_nl + 1) : head.substr(0, utf8_floor(raw, half));
    tail = raw.substr(raw.size() - half);
    const std::size_t first_nl = tail.find('\n');
    tail = first_nl != npos ? tail.substr(first_nl + 1) : tail.substr(utf8_ceil(tail, 0));
  }
  // Per-thread buffers: a call allocates only the segments it returns.
  thread_local Scratch scratch;
  sv clean = head;  // no escapes nor NULs, the usual case: read the input in place
  if (result.truncated || needs_cleaning(head)) {
    scratch.clean.clear();
    scratch.clean.reserve(head.size() + tail.size() + 2);
    append_clean(scratch.clean, head);
    if (result.truncated) {
      scratch.clean += "\n\n";  // a blank line ends whatever message the head was in
      append_clean(scratch.clean, tail);
    }
    clean = scratch.clean;
  }
  std::vector<Line>& lines = scratch.lines;
  lines.clear();
  for_each_line(clean, [&lines](sv line) {
    const Prefix prefix = strip_prefix(line);
    lines.push_back(Line{rtrim(line.substr(prefix.length)), prefix.signature});
  });
  result.segments = Parser(lines, scratch.plain).run();
  scratch.release_if_large();
  return result;
}

}  // namespace

log_line::LineClass log_line::normaliser_class(std::string_view line) {
  std::string clean;
  sv text = line;
  if (needs_cleaning(line)) {
    append_clean(clean, line);
    text = clean;
  }
  sv last;
  for_each_line(text, [&last](sv piece) { last = piece; });
  const std::size_t length = strip_prefix(last).length;
  const log_line::Prefix p = log_line::read_prefix(last);
  const sv t = rtrim(last.substr(length));
  const log_line::Marker marker = log_line::marker_of(t);
  // As Parser::step reads it: a header after text of its own.
  if (const std::size_t at = log_line::traceback_header_at(t); at != npos && marker == log_line::Marker::none)
    return {length + at, p.level, p.record, log_line::Marker::traceback_header};
  return {length, p.level, p.record, marker};
}

Normalized normalize(std::string_view raw) noexcept {
  try {
    return normalize_impl(raw);
  } catch (...) {
    // Out of memory, most likely: hand back the start of the input untouched.
    try {
      Normalized fallback;
      fallback.truncated = raw.size() > kMaxInputBytes;
      Segment segment;
      segment.text = std::string(raw.substr(0, utf8_floor(raw, kMaxSegmentBytes)));
      fallback.segments.push_back(std::move(segment));
      return fallback;
    } catch (...) {
      return Normalized{};
    }
  }
}

}  // namespace errshim
