// The log-line grammar (log_line.hpp). No regular expressions: each rule
// looks at a bounded stretch of one line.

#include "log_line.hpp"

#include <algorithm>

namespace errshim::log_line {
namespace {

using namespace detail;  // chars.hpp and text.hpp
constexpr std::size_t npos = sv::npos;

constexpr std::size_t kMaxPrefixTokens = 12;  // log prefixes never nest deeper in practice
constexpr std::size_t kMaxTagBytes = 128;  // longest "[...]" / "(...)" taken for a log tag
constexpr std::size_t kMaxClassBytes = 256;  // longest exception class name

char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

// For a handful of literal characters, tested per byte in loops: a plain
// loop, not strchr (which also finds the NUL logs can contain) nor memchr.
bool contains(sv s, char c) {
  for (char x : s)
    if (x == c) return true;
  return false;
}

bool iequals(sv a, sv b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (to_lower(a[i]) != to_lower(b[i])) return false;
  return true;
}

// Number of consecutive digits at p, counting at most `max`.
std::size_t count_digits(sv s, std::size_t p, std::size_t max) {
  std::size_t n = 0;
  while (p + n < s.size() && n < max && is_digit(s[p + n])) ++n;
  return n;
}

// Timestamps: "2026-11-30 10:01:42,123", "2026-11-30T10:01:42.123Z",
// "2026/11/30 10:01:42+01:00", or a time alone "10:01:42". Returns the end;
// `dated` tells whether a date came first.
std::size_t match_timestamp(sv s, std::size_t p, bool* dated_out = nullptr) {
  std::size_t q = p;
  bool dated = false;
  if (count_digits(s, q, 5) == 4 && q + 4 < s.size() && (s[q + 4] == '-' || s[q + 4] == '/')) {
    const char sep = s[q + 4];
    q += 5;
    if (count_digits(s, q, 3) != 2 || q + 2 >= s.size() || s[q + 2] != sep) return npos;
    q += 3;
    if (count_digits(s, q, 3) != 2) return npos;
    q += 2;
    if (q >= s.size() || (s[q] != ' ' && s[q] != 'T')) return npos;  // a date alone may be message text
    ++q;
    dated = true;
  }
  if (count_digits(s, q, 3) != 2 || q + 2 >= s.size() || s[q + 2] != ':') return npos;
  q += 3;
  if (count_digits(s, q, 3) != 2) return npos;
  q += 2;
  if (q + 2 < s.size() && s[q] == ':' && count_digits(s, q + 1, 3) == 2) {
    q += 3;
  } else if (!dated) {
    return npos;  // "12:30" alone is too common inside messages
  }
  if (q < s.size() && (s[q] == '.' || s[q] == ',')) {
    const std::size_t d = count_digits(s, q + 1, 12);
    if (d > 0) q += 1 + d;
  }
  if (q < s.size() && s[q] == 'Z') {
    ++q;
  } else if (q < s.size() && (s[q] == '+' || s[q] == '-') && count_digits(s, q + 1, 3) == 2) {
    std::size_t z = q + 3;
    if (z < s.size() && s[z] == ':') ++z;
    q = count_digits(s, z, 3) == 2 ? z + 2 : q + 3;
  } else if (starts_with(s.substr(q), " UTC")) {
    q += 4;
  }
  if (q < s.size() && is_ident(s[q])) return npos;
  if (dated_out != nullptr) *dated_out = dated;
  return q;
}

// A level word at p and where it ends, or npos.
std::size_t match_level(sv s, std::size_t p, bool any_case, Level* level = nullptr) {
  std::size_t q = p;
  while (q < s.size() && is_alpha(s[q]) && q - p < 9) ++q;
  if (q == p || (q < s.size() && (is_ident(s[q]) || s[q] == '-'))) return npos;
  const Level l = level_of(s.substr(p, q - p), any_case);
  if (l == Level::none) return npos;
  if (!(q == s.size() || is_blank(s[q]) || s[q] == '|' || (!any_case && s[q] == ':'))) return npos;
  if (level != nullptr) *level = l;
  return q;
}

// A time with no date starts a log line only when it looks like one: with
// fractional seconds, or a level or separator after it. "12:30:00 is not a
// valid time" stays a message.
bool time_alone_is_prefix(sv s, std::size_t p, std::size_t end) {
  if (sv(s.substr(p, end - p)).find_first_of(".,") != npos) return true;
  std::size_t r = end;
  while (r < s.size() && is_blank(s[r])) ++r;
  return r < s.size() && (contains("|-[]", s[r]) || match_level(s, r, false) != npos);
}

// "file.cc:12", "ProcessGroupNCCL.cpp:1250": a source location without blanks.
std::size_t match_location(sv s, std::size_t p) {
  std::size_t q = p;
  while (q < s.size() && q - p < 256 && (is_ident(s[q]) || contains("./<>+-", s[q]))) ++q;
  if (q == p || q >= s.size() || s[q] != ':') return npos;
  const std::size_t d = count_digits(s, q + 1, 10);
  return d == 0 ? npos : q + 1 + d;
}

// glog / c10 logging header without its closing bracket:
// "E1130 10:01:42.123456  1234 file.cc:12" (thread id optional, 8-digit dates too).
std::size_t match_glog(sv s, std::size_t p) {
  if (p >= s.size() || !contains("IWEF", s[p])) return npos;
  const std::size_t d = count_digits(s, p + 1, 9);
  if (d != 4 && d != 8) return npos;
  std::size_t q = p + 1 + d;
  if (q >= s.size() || s[q] != ' ') return npos;
  q = match_timestamp(s, q + 1);
  if (q == npos || q >= s.size() || !is_blank(s[q])) return npos;
  while (q < s.size() && is_blank(s[q])) ++q;
  const std::size_t tid = count_digits(s, q, 12);
  if (tid > 0 && q + tid < s.size() && is_blank(s[q + tid])) {
    q += tid;
    while (q < s.size() && is_blank(s[q])) ++q;
  }
  return match_location(s, q);
}

// What may stand inside "[...]" at a line start and be a log record header;
// `level` gets the level it states.
bool bracket_is_record(sv c, Level& level) {
  const std::size_t t = match_timestamp(c, 0);
  if (t != npos) {
    const sv rest = ltrim(c.substr(t));
    return rest.empty() || match_level(rest, 0, true, &level) != npos;  // env_logger: [ts LEVEL target]
  }
  if (match_level(c, 0, true, &level) != npos) return true;  // [error], [INFO|modeling_utils.py:123]
  if (match_glog(c, 0) == c.size()) return true;  // [W1130 10:01:42.386 ProcessGroupNCCL.cpp:1250]
  // c10 warnings: "[W reducer.cpp:1389]"
  return c.size() > 2 && contains("IWEF", c[0]) && c[1] == ' ' && match_location(c, 2) == c.size();
}

// "[rank0]", "[worker 2]", "[gpu-1]", "[local_rank=3]"; never "[Errno 2]",
// which starts OSError messages.
bool bracket_is_worker(sv c) {
  std::size_t q = 0;
  while (q < c.size() && (is_alpha(c[q]) || c[q] == '_')) ++q;
  if (q == 0 || q > 24 || iequals(c.substr(0, q), "errno")) return false;
  if (q < c.size() && contains(" -=:", c[q])) ++q;
  const std::size_t d = count_digits(c, q, 7);
  return d > 0 && q + d == c.size();
}

// One word naming a component or a topic: "[api]:", "[Bug]:", "[rankx]:".
// Blanks, commas and quotes say it is message text ("[Errno 2]", "[1, 2]").
bool bracket_is_name(sv c) {
  if (c.empty() || c.size() > 32 || !is_alpha(c[0])) return false;
  for (char x : c)
    if (!(is_ident(x) || x == '-' || x == '.')) return false;
  return true;
}

// record: part of a log record header (timestamp, logger); level: a level
// word, padded to a column; tag: the process or container a line came from.
enum class Token { none, record, level, tag };

struct Match {
  std::size_t end = npos;
  Token kind = Token::none;
  Level level = Level::none;
};

Match match_bracket(sv s, std::size_t p) {
  const std::size_t limit = std::min(s.size(), p + kMaxTagBytes);
  std::size_t q = p + 1;
  while (q < limit && s[q] != ']' && s[q] != '[') ++q;
  if (q >= limit || s[q] != ']') return {};
  const sv content = s.substr(p + 1, q - p - 1);
  Level level = Level::none;
  if (bracket_is_record(content, level)) return {q + 1, Token::record, level};
  if (bracket_is_worker(content)) return {q + 1, Token::tag, Level::none};
  // A bare word in brackets also opens messages ("[QConv3D] Unknown
  // quantization scheme", torch's op-tagged checks): it is a tag only when a
  // colon follows, as in "[Bug]: ..." and "[rankx]: ...".
  if (bracket_is_name(content) && q + 1 < s.size() && s[q + 1] == ':') return {q + 1, Token::tag, Level::none};
  return {};
}

// Ray: "(RayWorker pid=123)", "(pid=4242, ip=10.0.0.2)".
std::size_t match_ray(sv s, std::size_t p) {
  const std::size_t limit = std::min(s.size(), p + kMaxTagBytes);
  std::size_t q = p + 1;
  while (q < limit && s[q] != ')' && s[q] != '(') ++q;
  if (q >= limit || s[q] != ')') return npos;
  const sv content = s.substr(p + 1, q - p - 1);
  const std::size_t pid = content.find("pid=");
  return (pid != npos && count_digits(content, pid + 4, 1) == 1) ? q + 1 : npos;
}

// docker compose: "worker-3  | ". The name needs a digit, '-' or '_' so that
// an ordinary "word | word" message line is left alone.
std::size_t match_compose(sv s, std::size_t p) {
  if (!is_alpha(s[p])) return npos;
  std::size_t q = p;
  bool marked = false;
  while (q < s.size() && q - p < 64 && (is_ident(s[q]) || s[q] == '-' || s[q] == '.')) {
    marked = marked || is_digit(s[q]) || s[q] == '-' || s[q] == '_';
    ++q;
  }
  if (!marked || q >= s.size() || !is_blank(s[q])) return npos;
  std::size_t r = q;
  while (r < s.size() && is_blank(s[r])) ++r;
  return (r < s.size() && s[r] == '|' && (r + 1 == s.size() || is_blank(s[r + 1]))) ? q : npos;
}

// Python logging "ERROR:root:" / "ERROR:transformers.generation:": the logger
// name glued to the level. Returns the bytes to add after the level.
std::size_t python_logger_suffix(sv s, std::size_t level_end) {
  std::size_t q = level_end;
  if (q + 1 >= s.size() || s[q] != ':' || is_blank(s[q + 1])) return 0;
  ++q;
  const std::size_t start = q;
  while (q < s.size() && q - start < 128 && (is_ident(s[q]) || contains(".-<>", s[q]))) ++q;
  return (q > start && q < s.size() && s[q] == ':') ? q + 1 - level_end : 0;
}

// Python "%(asctime)s - %(name)s - %(levelname)s - ..." and loguru
// "module:function:42 - ": a logger name or location followed by " - " or " | ".
// Taken only after a timestamp, so "model.generate - failed" in a message stays.
std::size_t match_logger(sv s, std::size_t p) {
  std::size_t q = p;
  while (q < s.size() && q - p < 128 && (is_ident(s[q]) || contains(".:<>/-", s[q]))) ++q;
  if (q == p || !(is_alpha(s[p]) || s[p] == '_')) return npos;
  std::size_t r = q;
  while (r < s.size() && is_blank(s[r])) ++r;
  if (r == q || r >= s.size() || (s[r] != '-' && s[r] != '|')) return npos;
  return (r + 1 == s.size() || is_blank(s[r + 1])) ? q : npos;
}

// Rust tracing target after the level: "candle_examples::mistral:", or a
// crate's root "candle_server:". Needs "::" or '_' so that one ordinary word
// followed by a colon ("ERROR failed: ...") is never taken.
std::size_t match_tracing_target(sv s, std::size_t p) {
  std::size_t q = p;
  bool marked = false;
  while (true) {
    const std::size_t start = q;
    while (q < s.size() && (is_lower(s[q]) || is_digit(s[q]) || s[q] == '_')) {
      marked = marked || s[q] == '_';
      ++q;
    }
    if (q == start || is_digit(s[start])) return npos;
    if (q + 1 < s.size() && s[q] == ':' && s[q + 1] == ':') {
      q += 2;
      marked = true;
      continue;
    }
    break;
  }
  return (marked && q < s.size() && s[q] == ':' && (q + 1 == s.size() || is_blank(s[q + 1]))) ? q : npos;
}

// After a prefix token: its separator (" - ", " | ", ":") and one blank. Only
// one, because a tagged traceback line keeps its own indentation after the
// tag ("[rank0]:   File ...") and frames are told apart by it.
std::size_t skip_separator(sv s, std::size_t end) {
  std::size_t r = end;
  while (r < s.size() && is_blank(s[r])) ++r;
  const bool sep =
      r < s.size() && (s[r] == '|' || s[r] == ':' || (s[r] == '-' && (r + 1 == s.size() || is_blank(s[r + 1]))));
  if (!sep) return (end < s.size() && is_blank(s[end])) ? end + 1 : end;
  ++r;
  return (r < s.size() && is_blank(s[r])) ? r + 1 : r;
}

}  // namespace

Level level_of(sv word, bool any_case) noexcept {
  struct Word {
    sv text;
    Level level;
  };
  static constexpr Word kLevels[] = {{"CRITICAL", Level::error}, {"DEBUG", Level::other},  {"ERR", Level::error},
                                     {"ERROR", Level::error},    {"FATAL", Level::error},  {"INFO", Level::other},
                                     {"NOTICE", Level::other},   {"PANIC", Level::error},  {"TRACE", Level::other},
                                     {"WARN", Level::other},     {"WARNING", Level::other}};
  // Cheap rejections first: the levels' lengths, and bare levels are upper case.
  if (word.size() < 3 || word.size() > 8 || (!any_case && !(is_upper(word[0]) && is_upper(word[1]))))
    return Level::none;
  // Compared here, byte by byte: a word this short is not worth a memcmp call.
  for (const Word& w : kLevels) {
    if (word.size() != w.text.size()) continue;
    std::size_t i = 0;
    while (i < word.size() && (any_case ? to_lower(word[i]) == to_lower(w.text[i]) : word[i] == w.text[i])) ++i;
    if (i == word.size()) return w.level;
  }
  return Level::none;
}

Prefix read_prefix(sv s) noexcept {
  // Every prefix token starts with '[', '(', a digit (time) or a letter
  // (level, glog header, compose name): frames, code and blank lines end here.
  if (s.empty() || !(is_alpha(s[0]) || is_digit(s[0]) || s[0] == '[' || s[0] == '(')) return {};
  Prefix out;
  std::size_t pos = 0;
  bool any = false;
  bool saw_timestamp = false;
  Token last = Token::none;
  for (std::size_t k = 0; k < kMaxPrefixTokens; ++k) {
    std::size_t q = pos;
    if (any)
      while (q < s.size() && is_blank(s[q])) ++q;
    if (q >= s.size()) break;
    Match m;
    if (s[q] == '[') m = match_bracket(s, q);
    if (m.end == npos && s[q] == '(') m = {match_ray(s, q), Token::tag, Level::none};
    if (m.end == npos) {
      bool dated = false;
      const std::size_t e = match_timestamp(s, q, &dated);
      if (e != npos && (dated || time_alone_is_prefix(s, q, e))) {
        m = {e, Token::record, Level::none};
        saw_timestamp = true;
      }
    }
    if (m.end == npos) {
      const std::size_t g = match_glog(s, q);
      // A glog record's severity letter is its level; the scanner's literal
      // search finds it only at the line start.
      const Level level = k > 0 ? Level::none : (s[q] == 'E' || s[q] == 'F') ? Level::error : Level::other;
      if (g != npos && g < s.size() && s[g] == ']') m = {g + 1, Token::record, level};
    }
    if (m.end == npos) {
      Level level = Level::none;
      const std::size_t e = match_level(s, q, false, &level);
      if (e != npos) m = {e + python_logger_suffix(s, e), Token::level, level};
    }
    if (m.end == npos && last == Token::record) m = {match_tracing_target(s, q), Token::record, Level::none};
    if (m.end == npos && last == Token::record && saw_timestamp) m = {match_logger(s, q), Token::record, Level::none};
    if (m.end == npos) m = {match_compose(s, q), Token::tag, Level::none};
    if (m.end == npos) break;
    pos = skip_separator(s, m.end);
    if (m.kind == Token::level)  // "%(levelname)-8s" pads; the message never starts indented
      while (pos < s.size() && is_blank(s[pos])) ++pos;
    any = true;
    out.record = out.record || m.kind == Token::record || m.kind == Token::level;
    if (out.level == Level::none) out.level = m.level;
    last = m.kind == Token::level ? Token::record : m.kind;
  }
  out.length = pos;
  return out;
}

std::size_t traceback_header_at(sv line) noexcept {
  const sv t = detail::rtrim(line);
  if (!ends_with(t, kTracebackHeader)) return npos;
  const std::size_t at = t.size() - kTracebackHeader.size();
  if (at > 0 && is_ident(t[at - 1])) return npos;
  return at;
}

std::optional<ExceptionLine> exception_line(sv t, bool strict) noexcept {
  if (t.empty() || !(is_alpha(t[0]) || t[0] == '_')) return std::nullopt;
  std::size_t q = 0;
  int parens = 0;
  while (q < t.size() && q < kMaxClassBytes) {
    const char c = t[q];
    if (is_ident(c) || c == '.' || c == '<' || c == '>') {
      ++q;
    } else if (c == ':' && q + 2 < t.size() && t[q + 1] == ':' && is_ident(t[q + 2])) {
      q += 2;  // a C++ class: "c10::Error"
    } else if (c == '(') {
      ++parens;
      ++q;
    } else if (c == ')' && parens > 0) {
      --parens;
      ++q;
    } else {
      break;
    }
  }
  if (parens != 0) return std::nullopt;
  const sv cls = t.substr(0, q);
  if (cls.back() == '.' || cls.find("..") != npos) return std::nullopt;
  ExceptionLine out{cls, {}};
  if (q < t.size()) {
    if (t[q] != ':' || (q + 1 < t.size() && t[q + 1] != ' ')) return std::nullopt;
    out.message = t.substr(std::min(q + 2, t.size()));
  } else if (strict) {
    return std::nullopt;  // one bare word is no evidence of an exception
  }
  if (strict) {
    sv base = cls.substr(0, cls.find('('));
    const std::size_t sep = base.find_last_of(".:");
    if (sep != npos) base = base.substr(sep + 1);
    if (cls == "Error" || base.empty() || !is_upper(base[0])) return std::nullopt;  // "Error:" is Rust
    if (!ends_with(base, "Error") && !ends_with(base, "Exception")) return std::nullopt;
  }
  return out;
}

bool is_numbered(sv t) noexcept {
  const std::size_t d = count_digits(t, 0, 6);
  return d > 0 && d < t.size() && t[d] == ':' && (d + 1 == t.size() || t[d + 1] == ' ');
}

std::optional<sv> panic_rest(sv t) noexcept {
  constexpr sv kPanicked = " panicked at ";
  if (!starts_with(t, "thread '")) return std::nullopt;
  const std::size_t k = t.find(kPanicked, 8);
  if (k == npos || k == 8) return std::nullopt;
  const char before = t[k - 1];
  if (before != '\'' && before != ')') return std::nullopt;
  return t.substr(k + kPanicked.size());
}

Marker marker_of(sv t) noexcept {
  if (is_traceback_header(t)) return Marker::traceback_header;
  if (is_chain_marker(t)) return Marker::chain_marker;
  if (is_py_frame(t)) return Marker::py_frame;
  if (is_rust_error(t)) return Marker::rust_error;
  if (is_caused_by(t)) return Marker::caused_by;
  if (is_backtrace_header(t)) return Marker::backtrace_header;
  if (is_rust_note(t)) return Marker::note;
  if (is_panic(t)) return Marker::panic;
  if (is_terminate(t)) return Marker::terminate;
  if (is_c10_raised(t)) return Marker::c10_raised;
  if (is_c10_frame(t)) return Marker::c10_frame;
  if (indented(t) && is_rust_frame(t)) return Marker::rust_frame;
  if (exception_line(t, true)) return Marker::exception;
  return Marker::none;
}

}  // namespace errshim::log_line
