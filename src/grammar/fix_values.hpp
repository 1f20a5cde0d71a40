// What a fix may write into a config. Messages carry user text (prompts), so
// a value read out of a message is hostile until checked: the capture that
// reads it must be a tight regex (checked when the catalog loads), and the
// value must pass the validator of the key it is written to (checked when the
// fix is applied, against the config's own values).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/catalog.hpp"
#include "errshim/config.hpp"

namespace errshim::detail {

// `s` with ASCII letters in lower case; the part of a dotted key after its
// last '.'; whether `s` ends with `tail`.
std::string ascii_lower(std::string_view s);
std::string_view last_part(std::string_view key);
bool ends_with(std::string_view s, std::string_view tail);

// One `{name}` or `{name:conversion}` reference in a fix value.
struct CaptureUse {
  std::string name;
  std::string conversion;  // "", "lower", "upper", "int", "dimN"
  // A conversion whose result is only digits, whatever the capture held.
  bool numeric() const noexcept;
};

// A string fix value cut into literal text and capture references ("{{" and
// "}}" are literal braces). Throws config_error on an unclosed '{', an empty
// name or an unknown conversion.
struct ValuePiece {
  std::string literal;  // when !capture
  std::optional<CaptureUse> capture;
};
std::vector<ValuePiece> parse_fix_value(std::string_view text);

// The capture references of `value` (none for a value that is not a string).
std::vector<CaptureUse> capture_uses(const Value& value);

// The regex of named group `name` in `pattern` ("(?<name>BODY)"), if any,
// as a view into `pattern` (the matcher asks for each capture of each
// winner) or as a string.
std::optional<std::string_view> capture_body_view(std::string_view pattern, std::string_view name);
std::optional<std::string> capture_body(std::string_view pattern, std::string_view name);

// Why `body` (a capture's regex) could match text no config key should
// receive: anything beyond letters, digits and `_ . : + -` (no blank, no
// quote, no '/', ';', '#', '.'-wildcard, negated class, \S ...). "" when it
// cannot.
std::string loose_capture(std::string_view body);

// Whether captured text is spelled like a config value: letters, digits and
// `_ . : + -` only, 1 to 128 bytes. What a tight capture can give.
bool value_spelling(std::string_view text);

// Why `key` is not a usable fix key ("", a path with an empty part, blanks or
// control characters); "" when it is.
std::string key_path_problem(std::string_view key);

// The validator of a well-known config key, found by the key's last part.
struct KeyRule {
  enum class Kind { integer, boolean, device, dtype, one_of };
  Kind kind = Kind::integer;
  std::string_view what;  // "a beam count", for reasons
  long long min = 0, max = 0;  // integer range
  std::vector<std::string_view> bounded_by;  // config keys whose largest value bounds an integer
  bool divides = false;  // ... and which the value must divide
  std::vector<std::string_view> allowed;  // one_of
};
const KeyRule* key_rule(std::string_view key);

// The names of the keys that have a rule, for messages.
std::string known_keys();

// `value` checked against the rule of `key` and typed by it (an integer rule
// gives an integer, whatever the text's type); nullopt with `why` set when
// it fails. `config` (may be null) supplies the bounds a rule takes from the
// config's own values. A key without a rule keeps `value`.
std::optional<Value> check_value(std::string_view key, const Value& value, const ConfigAccess* config,
                                 std::string& why);

// `text` as a value of `type` (boolean: true/false; integer: a whole number;
// number: a decimal), or nullopt when it does not read as one.
std::optional<Value> as_type(Value::Type type, std::string_view text);

}  // namespace errshim::detail
