// Fingerprints of unrecognised errors: one left-to-right pass that replaces
// each variable token by its kind, in the spirit of Drain3's masking and
// Sentry's message normalisation. Each matcher below looks at the text from
// one position and returns the length it covers (0: not this kind), so the
// pass is linear in the bytes read.

#include "errshim/fingerprint.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "errshim/normalize.hpp"
#include "chars.hpp"

namespace errshim {

namespace {

using sv = std::string_view;
using detail::is_alpha;
using detail::is_blank;
using detail::is_digit;
using detail::is_ident;

constexpr std::size_t kMaxReadBytes = 4u << 10;
constexpr std::size_t kMaxTextBytes = 512;

bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool word_char(char c) { return is_ident(c) || c == '-'; }

std::size_t digits(sv s, std::size_t i, std::size_t most = sv::npos) {
  std::size_t n = 0;
  while (i + n < s.size() && n < most && is_digit(s[i + n])) ++n;
  return n;
}
std::size_t hex_run(sv s, std::size_t i) {
  std::size_t n = 0;
  while (i + n < s.size() && is_hex(s[i + n])) ++n;
  return n;
}
bool at(sv s, std::size_t i, char c) { return i < s.size() && s[i] == c; }

// "10:01:42", "10:01:42.123", "2026-11-30", "2026-11-30T10:01:42,5Z", "2026/11/30 10:01", "+01:00" after a time.
std::size_t match_timestamp(sv s, std::size_t i) {
  std::size_t p = i;
  bool date = false;
  if (digits(s, p, 5) == 4 && (at(s, p + 4, '-') || at(s, p + 4, '/')) && digits(s, p + 5, 3) == 2 &&
      at(s, p + 7, s[p + 4]) && digits(s, p + 8, 3) == 2) {
    date = true;
    p += 10;
    if ((at(s, p, 'T') || at(s, p, ' ')) && digits(s, p + 1, 3) == 2 && at(s, p + 3, ':')) ++p;
  }
  const std::size_t h = digits(s, p, 3);
  if (h >= 1 && at(s, p + h, ':') && digits(s, p + h + 1, 3) == 2) {
    std::size_t q = p + h + 3;
    const bool seconds = at(s, q, ':') && digits(s, q + 1, 3) == 2;
    if (seconds) q += 3;
    if (!seconds && !date) return 0;  // "3:45" alone is too often a ratio or a line:column
    if ((at(s, q, '.') || at(s, q, ',')) && digits(s, q + 1) > 0) q += 1 + digits(s, q + 1);
    if (at(s, q, 'Z')) {
      ++q;
    } else if ((at(s, q, '+') || at(s, q, '-')) && digits(s, q + 1, 3) == 2) {
      q += 3;
      if (at(s, q, ':') && digits(s, q + 1, 3) == 2)
        q += 3;
      else if (digits(s, q, 3) == 2)
        q += 2;
    }
    p = q;
  } else if (!date) {
    return 0;
  }
  return p - i;
}

std::size_t match_uuid(sv s, std::size_t i) {
  static constexpr std::size_t kGroups[] = {8, 4, 4, 4, 12};
  std::size_t p = i;
  for (std::size_t g = 0; g < 5; ++g) {
    if (g > 0 && !at(s, p++, '-')) return 0;
    if (hex_run(s, p) != kGroups[g]) return 0;
    p += kGroups[g];
  }
  return p - i;
}

// "0x7f3a0010"; or a bare run of 8 or more hex digits with a digit and a
// letter in it (a hash, a pointer printed without 0x).
std::size_t match_hex(sv s, std::size_t i) {
  if (at(s, i, '0') && (at(s, i + 1, 'x') || at(s, i + 1, 'X')) && hex_run(s, i + 2) > 0) return 2 + hex_run(s, i + 2);
  const std::size_t n = hex_run(s, i);
  if (n < 8 || (i + n < s.size() && word_char(s[i + n]))) return 0;
  const sv run = s.substr(i, n);
  const bool digit = std::any_of(run.begin(), run.end(), is_digit);
  const bool letter = std::any_of(run.begin(), run.end(), [](char c) { return is_alpha(c); });
  return digit && letter ? n : 0;
}

// "10.0.0.3", "10.0.0.3:29500"
std::size_t match_ip(sv s, std::size_t i) {
  std::size_t p = i;
  for (int part = 0; part < 4; ++part) {
    if (part > 0 && !at(s, p++, '.')) return 0;
    const std::size_t n = digits(s, p, 4);
    if (n == 0 || n > 3) return 0;
    p += n;
  }
  if (at(s, p, ':') && digits(s, p + 1, 6) > 0) p += 1 + digits(s, p + 1, 6);
  return p - i;
}

bool path_char(char c) {
  return !(is_blank(c) || c == '\n' || c == '\r' || c == '\'' || c == '"' || c == '`' || c == ',' || c == ';' ||
           c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}' || c == '<' || c == '>' || c == ':');
}

// "/models/llama/config.json", "./out/x", "~/x/y", "C:\\models\\x", "https://host/x" (the last as <url>).
std::size_t match_path(sv s, std::size_t i, bool& url) {
  url = false;
  std::size_t p = i;
  const auto scheme = [&](sv name) { return s.compare(i, name.size(), name) == 0; };
  if (scheme("https://") || scheme("http://") || scheme("file://") || scheme("s3://") || scheme("hf://")) {
    url = true;
    p = s.find("://", i) + 3;
    while (p < s.size() && (path_char(s[p]) || s[p] == ':')) ++p;
    return p - i;
  }
  char sep = '/';
  if (at(s, p, '/')) {
    ++p;
  } else if ((at(s, p, '.') || at(s, p, '~')) && at(s, p + 1, '/')) {
    p += 2;
  } else if (at(s, p, '.') && at(s, p + 1, '.') && at(s, p + 2, '/')) {
    p += 3;
  } else if (p + 2 < s.size() && is_alpha(s[p]) && s[p + 1] == ':' && s[p + 2] == '\\') {
    sep = '\\';
    p += 3;
  } else {
    return 0;
  }
  std::size_t seps = 0;
  const std::size_t start = p;
  while (p < s.size() && path_char(s[p])) seps += s[p++] == sep ? 1 : 0;
  // One bare "/word" is as often a ratio or an option as a path.
  if (p == start || (sep == '/' && s[i] == '/' && seps == 0)) return 0;
  return p - i;
}

// "[1, 32, 7, 48]", "(4096,)", "[]"-free dims "1x32x7".
std::size_t match_shape(sv s, std::size_t i) {
  if (at(s, i, '[') || at(s, i, '(')) {
    const char close = s[i] == '[' ? ']' : ')';
    std::size_t p = i + 1, numbers = 0;
    while (p < s.size() && p - i < 256 && (is_digit(s[p]) || s[p] == ',' || s[p] == ' ' || s[p] == '-')) {
      if (is_digit(s[p]) && !is_digit(s[p - 1])) ++numbers;
      ++p;
    }
    return numbers > 0 && at(s, p, close) ? p + 1 - i : 0;
  }
  std::size_t p = i, dims = 0;
  while (digits(s, p) > 0) {
    p += digits(s, p);
    ++dims;
    if (!(at(s, p, 'x') && digits(s, p + 1) > 0)) break;
    ++p;
  }
  return dims >= 2 && !(p < s.size() && word_char(s[p])) ? p - i : 0;
}

// A token where letters and digits alternate: a request, trace or job id
// ("req-8f3a9c1e"). A name with a number ("worker-123", "llama3-8b") is not
// one: its number alone is masked, the same whatever its width.
std::size_t match_id(sv s, std::size_t i) {
  std::size_t p = i, changes = 0;
  int last = 0;  // 1: letter, 2: digit
  while (p < s.size() && word_char(s[p])) {
    const int k = is_digit(s[p]) ? 2 : is_alpha(s[p]) ? 1 : last;
    changes += (last != 0 && k != last) ? 1 : 0;
    last = k;
    ++p;
  }
  return p - i >= 6 && changes >= 3 ? p - i : 0;
}

// "42", "3.5", "1e-4", "4.57.1"
std::size_t match_number(sv s, std::size_t i) {
  std::size_t p = i + digits(s, i);
  if (p == i) return 0;
  while (at(s, p, '.') && digits(s, p + 1) > 0) p += 1 + digits(s, p + 1);
  if ((at(s, p, 'e') || at(s, p, 'E')) &&
      (digits(s, p + 1) > 0 || ((at(s, p + 1, '-') || at(s, p + 1, '+')) && digits(s, p + 2) > 0)))
    p += (is_digit(s[p + 1]) ? 1 : 2) + digits(s, p + (is_digit(s[p + 1]) ? 1 : 2));
  return p - i;
}

// Where "SomeError: " starts in `s`, when a log prefix the normaliser did
// not know ("dist - ") stands before it; npos when there is none.
std::size_t exception_class_at(sv s) {
  for (std::size_t i = 0; i < s.size() && i < 160; ++i) {
    if (i > 0 && word_char(s[i - 1])) continue;
    std::size_t p = i;
    while (p < s.size() && (is_ident(s[p]) || s[p] == '.')) ++p;
    sv cls = s.substr(i, p - i);
    cls = cls.substr(cls.find_last_of('.') == sv::npos ? 0 : cls.find_last_of('.') + 1);
    const auto ends = [&](sv tail) { return cls.size() > tail.size() && cls.substr(cls.size() - tail.size()) == tail; };
    if ((ends("Error") || ends("Exception")) && detail::is_upper(cls.front()) && at(s, p, ':') && at(s, p + 1, ' '))
      return i;
  }
  return sv::npos;
}

}  // namespace

std::string mask_variables(std::string_view message) {
  const sv s = message.substr(0, std::min(message.size(), kMaxReadBytes));
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (is_blank(c) || c == '\n' || c == '\r') {
      while (i < s.size() && (is_blank(s[i]) || s[i] == '\n' || s[i] == '\r')) ++i;
      if (!out.empty()) out += ' ';
      continue;
    }
    const bool boundary = i == 0 || !word_char(s[i - 1]);
    std::size_t n = 0;
    const char* kind = nullptr;
    bool url = false;
    if (boundary && (n = match_path(s, i, url)) > 0) {
      kind = url ? "<url>" : "<path>";
    } else if (boundary && (n = match_timestamp(s, i)) > 0) {
      kind = "<ts>";
    } else if (boundary && (n = match_uuid(s, i)) > 0) {
      kind = "<uuid>";
    } else if (boundary && (n = match_ip(s, i)) > 0) {
      kind = "<ip>";
    } else if (boundary && (n = match_hex(s, i)) > 0) {
      kind = "<hex>";
    } else if ((c == '[' || c == '(' || boundary) && (n = match_shape(s, i)) > 0) {
      kind = "<shape>";
    } else if (boundary && (n = match_id(s, i)) > 0) {
      kind = "<id>";
    } else if ((n = match_number(s, i)) > 0) {
      kind = "<num>";
    }
    if (kind != nullptr) {
      out += kind;
      i += n;
      continue;
    }
    // A word goes whole, so a digit inside it is still seen as one ("rank3").
    if (word_char(c)) {
      std::size_t p = i;
      while (p < s.size() && is_alpha(s[p])) ++p;
      if (p == i) p = i + 1;
      out.append(s.data() + i, p - i);
      i = p;
      continue;
    }
    out += c;
    ++i;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

Fingerprint fingerprint(std::string_view error_text) {
  const Normalized n = normalize(error_text);
  std::string text;
  if (!n.segments.empty()) {
    const Segment& root = n.segments.front();
    sv message = root.text;
    if (root.exception_class.empty())
      if (const std::size_t at_class = exception_class_at(message); at_class != sv::npos)
        message.remove_prefix(at_class);
    text =
        root.exception_class.empty() ? mask_variables(message) : root.exception_class + ": " + mask_variables(message);
  } else {
    text = mask_variables(error_text);
  }
  if (text.size() > kMaxTextBytes) {
    std::size_t cut = kMaxTextBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    text.resize(cut);
  }
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return Fingerprint{fmt::format("{:016x}", h), std::move(text)};
}

}  // namespace errshim
