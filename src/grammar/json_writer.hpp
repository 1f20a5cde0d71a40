// The one way errshim writes JSON: one quoting rule and one streaming writer,
// used by the renderer, the audit records, scan, the C API, the config writer
// and the CLI. The shapes of errshim's types are in json.hpp.
//
// Why not a JSON library's serializer: errshim's documents separate items
// with ", " and keys with ": " (the public to_json functions, the C API and
// the audit lines, byte-compared by tests and goldens), which nlohmann's
// dump() cannot write; and `scan --json` writes a document per error block,
// where building a tree first costs throughput (the figures are in the
// change that added this file). nlohmann reads JSON (the importer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "utf8.hpp"

namespace errshim::detail {

// Appends `text` as a JSON string literal, quotes included: '"' and '\\'
// escaped, \n \r \t \b \f as such, every other control character (U+0000 to
// U+001F, U+007F) as \u00XX, a byte that is not well-formed UTF-8 as U+FFFD;
// all else (non-ASCII included) as it is.
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    // A run of printable ASCII other than '"' and '\\' is copied whole (log
    // blocks are mostly that; byte by byte, quoting dominated `scan --json`).
    std::size_t j = i;
    while (j < s.size() && s[j] >= 0x20 && s[j] < 0x7F && s[j] != '"' && s[j] != '\\') ++j;
    if (j > i) {
      out.append(s.data() + i, j - i);
      i = j;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    // clang-format off
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      default: break;
    }
    // clang-format on
    if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not valid UTF-8
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  out += '"';
}

inline std::string json_quote(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

// Writes one JSON value into a string as it goes, items separated by ", "
// and keys by ": ". The caller nests begin/end calls correctly; the writer
// only places the separators.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  JsonWriter& key(std::string_view k) {
    separate();
    append_json_string(out_, k);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }

  JsonWriter& string(std::string_view s) {
    separate();
    append_json_string(out_, s);
    return done();
  }
  JsonWriter& boolean(bool b) { return raw(b ? "true" : "false"); }
  JsonWriter& null() { return raw("null"); }
  template <class Int, class = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>>
  JsonWriter& number(Int n) {
    return raw(std::to_string(n));
  }
  // A value that is JSON text already (a number's own spelling).
  JsonWriter& raw(std::string_view json) {
    separate();
    out_ += json;
    return done();
  }

  // key(k) then a value.
  JsonWriter& field(std::string_view k, std::string_view s) { return key(k).string(s); }
  JsonWriter& field(std::string_view k, const char* s) { return key(k).string(s); }
  JsonWriter& field(std::string_view k, bool b) { return key(k).boolean(b); }
  template <class Int, class = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>>
  JsonWriter& field(std::string_view k, Int n) {
    return key(k).number(n);
  }

 private:
  JsonWriter& open(char c) {
    separate();
    out_ += c;
    first_ = true;
    return *this;
  }
  JsonWriter& close(char c) {
    out_ += c;
    return done();
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_) out_ += ", ";
  }
  JsonWriter& done() {
    first_ = false;
    return *this;
  }

  std::string& out_;
  bool first_ = true;  // nothing written yet in the current object or array
  bool after_key_ = false;  // a key was written: its value follows without a separator
};

}  // namespace errshim::detail
