#include "fix_values.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "chars.hpp"

namespace errshim::detail {

namespace {

constexpr std::string_view kConversions = "lower, upper, int, dimN";

bool valid_conversion(std::string_view c) {
  if (c.empty() || c == "lower" || c == "upper" || c == "int") return true;
  return c.size() > 3 && c.size() <= 6 && c.substr(0, 3) == "dim" && std::all_of(c.begin() + 3, c.end(), is_digit);
}

// A character a tight capture may match: what device, dtype, mode names and
// numbers are spelled with.
constexpr bool value_char(char c) { return is_ident(c) || c == '.' || c == ':' || c == '+' || c == '-'; }

std::string shown(char c) {
  if (c == '\n') return "a line break";
  if (c == ' ') return "a blank";
  return fmt::format("'{}'", c);
}

// Reads a whole number the way a config means it: optional sign, digits,
// nothing else, within long long.
std::optional<long long> whole_number(std::string_view s) {
  std::size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size() || s.size() - i > 18 || !std::all_of(s.begin() + static_cast<std::ptrdiff_t>(i), s.end(), is_digit))
    return std::nullopt;
  long long v = 0;
  for (std::size_t k = i; k < s.size(); ++k) v = v * 10 + (s[k] - '0');
  return s[0] == '-' ? -v : v;
}

// Device spellings of libtorch (c10::DeviceType names, with an optional
// index) and candle.
// clang-format off
const std::vector<std::string_view> kDevices = {"cpu",  "cuda", "mps",  "meta", "xpu", "hip",  "xla",  "lazy",
                                                "vulkan", "metal", "npu", "hpu", "mtia", "ipu", "maia", "mkldnn",
                                                "opengl", "opencl", "ideep", "ve", "fpga", "privateuseone"};
// clang-format on

// dtype spellings: libtorch ScalarType names and Python/torch names (compared
// without case, with an optional "torch." or "c10::" prefix), candle's short
// names, and the "auto" of transformers and vLLM.
// clang-format off
const std::vector<std::string_view> kDtypes = {
    "float",        "float32",      "f32",          "double",      "float64",        "f64",         "half",
    "float16",      "f16",          "bfloat16",     "bf16",        "int",            "int32",       "i32",
    "long",         "int64",        "i64",          "short",       "int16",          "i16",         "char",
    "int8",         "i8",           "byte",         "uint8",       "u8",             "uint16",      "u16",
    "uint32",       "u32",          "uint64",       "u64",         "bool",           "complexfloat", "complex64",
    "complexdouble", "complex128",  "complexhalf",  "qint8",       "quint8",         "qint32",      "float8_e4m3fn",
    "float8_e5m2",  "float8_e4m3fnuz", "float8_e5m2fnuz", "f8e4m3", "fp8",           "fp8_e4m3",    "fp8_e5m2",
    "auto"};
// clang-format on

bool known_dtype(std::string_view v) {
  std::string s = ascii_lower(v);
  for (std::string_view prefix : {"torch.", "c10::"})
    if (s.rfind(prefix, 0) == 0) s.erase(0, prefix.size());
  return std::find(kDtypes.begin(), kDtypes.end(), s) != kDtypes.end();
}

bool known_device(std::string_view v) {
  const std::size_t colon = v.find(':');
  const std::string_view type = v.substr(0, colon);
  if (std::find(kDevices.begin(), kDevices.end(), type) == kDevices.end()) return false;
  if (colon == std::string_view::npos) return true;
  const std::string_view index = v.substr(colon + 1);
  return !index.empty() && index.size() <= 3 && std::all_of(index.begin(), index.end(), is_digit);
}

KeyRule integer(std::string_view what, long long min, long long max, std::vector<std::string_view> bounded_by = {},
                bool divides = false) {
  KeyRule r;
  r.kind = KeyRule::Kind::integer;
  r.what = what;
  r.min = min;
  r.max = max;
  r.bounded_by = std::move(bounded_by);
  r.divides = divides;
  return r;
}

KeyRule of_kind(KeyRule::Kind kind, std::string_view what, std::vector<std::string_view> allowed = {}) {
  KeyRule r;
  r.kind = kind;
  r.what = what;
  r.allowed = std::move(allowed);
  return r;
}

struct Registry {
  std::vector<std::pair<std::string_view, KeyRule>> rules;  // by key name
  KeyRule device = of_kind(KeyRule::Kind::device, "a device");
  KeyRule dtype = of_kind(KeyRule::Kind::dtype, "a dtype");

  Registry() {
    // Beam search: small counts. A count read from a message is also
    // cross-checked against the config's own key of the capture's name
    // (remediation.cpp), so this range is the last line, not the only one.
    for (std::string_view k : {"num_beams", "num_return_sequences", "num_beam_groups"})
      rules.emplace_back(k, integer("a beam or sequence count", 1, 256));
    // Heads: a KV head count must divide the query head count of the config.
    const std::vector<std::string_view> heads = {"num_heads", "num_attention_heads", "n_head", "n_heads"};
    for (std::string_view k : heads) rules.emplace_back(k, integer("a head count", 1, 4096));
    for (std::string_view k : {"num_kv_heads", "num_key_value_heads", "n_kv_heads", "n_head_kv"})
      rules.emplace_back(k, integer("a KV head count", 1, 4096, heads, true));
    for (std::string_view k : {"max_length", "max_new_tokens", "min_length", "min_new_tokens", "max_cache_len",
                               "sliding_window", "max_position_embeddings", "max_seq_len", "prefill_chunk_size"})
      rules.emplace_back(k, integer("a length in tokens", 0, 1ll << 24));
    for (std::string_view k : {"use_cache", "do_sample", "kv_cache_enabled", "use_kv_cache", "use_flash_attn",
                               "use_flash_attention", "use_sliding_window", "output_attentions", "low_cpu_mem_usage"})
      rules.emplace_back(k, of_kind(KeyRule::Kind::boolean, "a boolean"));
    const KeyRule attn = of_kind(KeyRule::Kind::one_of, "an attention implementation",
                                 {"eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention",
                                  "paged_attention", "sdpa_paged", "eager_paged"});
    for (std::string_view k : {"attn_implementation", "_attn_implementation"}) rules.emplace_back(k, attn);
    rules.emplace_back(
        "cache_implementation",
        of_kind(KeyRule::Kind::one_of, "a cache implementation",
                {"dynamic", "static", "offloaded", "offloaded_static", "sliding_window", "hybrid", "hybrid_chunked",
                 "offloaded_hybrid", "offloaded_hybrid_chunked", "mamba", "quantized"}));
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

// The largest whole-number value the config holds under any of `keys`.
std::optional<long long> config_bound(const ConfigAccess& config, const std::vector<std::string_view>& keys,
                                      std::string& where) {
  std::optional<long long> bound;
  for (std::string_view k : keys) {
    for (const KeyPath& p : config.find(k)) {
      const auto v = config.get(p);
      const auto n = v ? whole_number(v->text) : std::nullopt;
      if (n && (!bound || *n > *bound)) bound = *n, where = to_string(p);
    }
  }
  return bound;
}

}  // namespace

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (is_upper(c)) c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view last_part(std::string_view key) {
  const std::size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool CaptureUse::numeric() const noexcept { return conversion == "int" || conversion.rfind("dim", 0) == 0; }

std::vector<ValuePiece> parse_fix_value(std::string_view s) {
  std::vector<ValuePiece> out;
  auto literal = [&out](char c) {
    if (out.empty() || out.back().capture) out.emplace_back();
    out.back().literal += c;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool doubled = i + 1 < s.size() && s[i + 1] == s[i];
    if ((s[i] == '{' || s[i] == '}') && doubled) {
      literal(s[i]);
      ++i;
      continue;
    }
    if (s[i] != '{') {
      literal(s[i]);
      continue;
    }
    const std::size_t close = s.find('}', i);
    if (close == std::string_view::npos) throw config_error(fmt::format("fix value '{}' has an unclosed '{{'", s));
    const std::string_view inner = s.substr(i + 1, close - i - 1);
    const std::size_t colon = inner.find(':');
    CaptureUse use{std::string(inner.substr(0, colon)),
                   colon == std::string_view::npos ? std::string() : std::string(inner.substr(colon + 1))};
    if (use.name.empty()) throw config_error(fmt::format("fix value '{}' has an empty '{{}}'", s));
    if (!valid_conversion(use.conversion))
      throw config_error(fmt::format("fix value '{}': unknown conversion '{}' ({})", s, use.conversion, kConversions));
    out.push_back({{}, std::move(use)});
    i = close;
  }
  return out;
}

std::vector<CaptureUse> capture_uses(const Value& value) {
  std::vector<CaptureUse> uses;
  if (value.type != Value::Type::string || value.text.find('{') == std::string::npos) return uses;
  for (ValuePiece& p : parse_fix_value(value.text))
    if (p.capture) uses.push_back(std::move(*p.capture));
  return uses;
}

namespace {
// Where "<lead><name><close>" first occurs in `pattern` from `from` (npos:
// nowhere); the pieces are matched in place, no string is built per call.
std::size_t find_group_open(std::string_view pattern, std::string_view lead, std::string_view name, char close,
                            std::size_t from) {
  for (std::size_t at = pattern.find(lead, from); at != std::string_view::npos; at = pattern.find(lead, at + 1)) {
    const std::string_view rest = pattern.substr(at + lead.size());
    if (rest.size() > name.size() && rest.compare(0, name.size(), name) == 0 && rest[name.size()] == close) return at;
  }
  return std::string_view::npos;
}
}  // namespace

std::optional<std::string> capture_body(std::string_view pattern, std::string_view name) {
  const std::optional<std::string_view> body = capture_body_view(pattern, name);
  if (!body) return std::nullopt;
  return std::string(*body);
}

std::optional<std::string_view> capture_body_view(std::string_view pattern, std::string_view name) {
  struct Form {
    std::string_view lead;
    char close;
  };
  for (const Form form : {Form{"(?<", '>'}, Form{"(?P<", '>'}, Form{"(?'", '\''}}) {
    std::size_t at = find_group_open(pattern, form.lead, name, form.close, 0);
    // Skip "\(?<name>": an escaped parenthesis opens no group.
    while (at != std::string_view::npos && at > 0 && pattern[at - 1] == '\\')
      at = find_group_open(pattern, form.lead, name, form.close, at + 1);
    if (at == std::string_view::npos) continue;
    const std::size_t begin = at + form.lead.size() + name.size() + 1;
    int depth = 1;
    bool in_class = false;
    for (std::size_t i = begin; i < pattern.size(); ++i) {
      const char c = pattern[i];
      if (c == '\\') {
        ++i;
      } else if (in_class) {
        in_class = c != ']';
      } else if (c == '[') {
        in_class = true;
        if (i + 1 < pattern.size() && pattern[i + 1] == ']') ++i;  // "[]...]": ']' first is a member
      } else if (c == '(') {
        ++depth;
      } else if (c == ')' && --depth == 0) {
        return pattern.substr(begin, i - begin);
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::string loose_capture(std::string_view re) {
  if (re.empty()) return "it is empty";
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\') {
      const char n = i + 1 < re.size() ? re[i + 1] : '\0';
      ++i;
      if (n == 'd' || n == 'w' || n == 'b' || (!is_ident(n) && value_char(n))) continue;
      return fmt::format("'\\{}' matches more than letters, digits and '_.:+-'", n);
    }
    if (c == '[') {
      if (i + 1 < re.size() && re[i + 1] == '^') return "a negated class '[^...]' matches almost any character";
      std::size_t j = i + 1;
      for (; j < re.size() && re[j] != ']'; ++j) {
        if (re[j] == '\\') {
          const char n = j + 1 < re.size() ? re[j + 1] : '\0';
          ++j;
          if (n == 'd' || n == 'w' || (!is_ident(n) && value_char(n))) continue;
          return fmt::format("the class admits '\\{}'", n);
        }
        if (!value_char(re[j])) return fmt::format("the class admits {}", shown(re[j]));
      }
      if (j == re.size()) return "a class is not closed";
      i = j;
      continue;
    }
    if (c == '(') {
      if (i + 1 < re.size() && re[i + 1] == '?') {
        if (i + 2 >= re.size() || re[i + 2] != ':') return "only plain '(...)' and '(?:...)' groups are allowed";
        i += 2;
      }
      continue;
    }
    if (c == '{') {  // a bounded repeat {m}, {m,} or {m,n}
      std::size_t j = i + 1;
      while (j < re.size() && (is_digit(re[j]) || re[j] == ',')) ++j;
      if (j == i + 1 || j == re.size() || re[j] != '}') return "'{' that is not a repeat count";
      i = j;
      continue;
    }
    if (c == ')' || c == '|' || c == '*' || c == '+' || c == '?') continue;
    if (c == '.') return "'.' matches any character";
    if (!value_char(c)) return fmt::format("it matches {}", shown(c));
  }
  return {};
}

bool value_spelling(std::string_view text) {
  return !text.empty() && text.size() <= 128 && std::all_of(text.begin(), text.end(), value_char);
}

std::string key_path_problem(std::string_view key) {
  if (key.empty()) return "the key is empty";
  if (key.front() == '.' || key.back() == '.') return fmt::format("key '{}' starts or ends with '.'", key);
  if (key.find("..") != std::string_view::npos) return fmt::format("key '{}' has an empty part ('..')", key);
  for (char c : key)
    if (static_cast<unsigned char>(c) < 0x20 || c == ' ' || c == 0x7F)
      return fmt::format("key '{}' holds a blank or control character", key);
  return {};
}

const KeyRule* key_rule(std::string_view key) {
  const std::string_view name = last_part(key);
  const Registry& reg = registry();
  for (const auto& [k, rule] : reg.rules)
    if (k == name) return &rule;
  if (name == "device" || ends_with(name, "_device")) return &reg.device;
  if (name == "dtype" || ends_with(name, "_dtype")) return &reg.dtype;
  return nullptr;
}

std::string known_keys() {
  std::vector<std::string_view> names;
  for (const auto& kv : registry().rules) names.push_back(kv.first);
  return fmt::format("{}, and any 'device' or '*_device', 'dtype' or '*_dtype'", fmt::join(names, ", "));
}

std::optional<Value> check_value(std::string_view key, const Value& value, const ConfigAccess* config,
                                 std::string& why) {
  const KeyRule* rule = key_rule(key);
  if (!rule) return value;
  const std::string& t = value.text;
  const auto refuse = [&](std::string reason) -> std::optional<Value> {
    why = fmt::format("value '{}' for '{}' is refused: {}", t.substr(0, 80), key, reason);
    return std::nullopt;
  };
  switch (rule->kind) {
    case KeyRule::Kind::integer: {
      const auto n = value.type == Value::Type::boolean ? std::nullopt : whole_number(t);
      if (!n) return refuse(fmt::format("{} is a whole number", rule->what));
      if (*n < rule->min || *n > rule->max)
        return refuse(fmt::format("{} lies in [{}, {}]", rule->what, rule->min, rule->max));
      std::string where;
      if (config && !rule->bounded_by.empty()) {
        if (const auto bound = config_bound(*config, rule->bounded_by, where)) {
          if (*n > *bound) return refuse(fmt::format("{} is at most the config's {} ({})", rule->what, where, *bound));
          if (rule->divides && (*n == 0 || *bound % *n != 0))
            return refuse(fmt::format("{} divides the config's {} ({})", rule->what, where, *bound));
        }
      }
      return Value{Value::Type::integer, std::to_string(*n)};
    }
    case KeyRule::Kind::boolean: {
      const std::string l = ascii_lower(t);
      if (l != "true" && l != "false") return refuse(fmt::format("{} is true or false", rule->what));
      return Value{Value::Type::boolean, l};
    }
    case KeyRule::Kind::device:
      if (value.type != Value::Type::string || !known_device(t))
        return refuse(
            fmt::format("{} is one of {} (with an optional ':N' index)", rule->what, fmt::join(kDevices, ", ")));
      return Value{Value::Type::string, t};
    case KeyRule::Kind::dtype:
      if (value.type != Value::Type::string || !known_dtype(t))
        return refuse(fmt::format("{} is a libtorch, torch or candle dtype name", rule->what));
      return Value{Value::Type::string, t};
    case KeyRule::Kind::one_of:
      if (value.type != Value::Type::string ||
          std::find(rule->allowed.begin(), rule->allowed.end(), t) == rule->allowed.end())
        return refuse(fmt::format("{} is one of {}", rule->what, fmt::join(rule->allowed, ", ")));
      return value;
  }
  return value;
}

std::optional<Value> as_type(Value::Type type, std::string_view t) {
  switch (type) {
    case Value::Type::boolean:
      if (ascii_lower(t) == "true" || ascii_lower(t) == "false") return Value{type, ascii_lower(t)};
      return std::nullopt;
    case Value::Type::integer:
      if (const auto n = whole_number(t)) return Value{type, std::to_string(*n)};
      return std::nullopt;
    case Value::Type::number: {
      // digits with at most one '.', an optional sign and exponent
      std::size_t i = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0, digits = 0, dots = 0;
      for (; i < t.size() && (is_digit(t[i]) || t[i] == '.'); ++i) (t[i] == '.' ? dots : digits)++;
      if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
        std::size_t j = i + 1 + ((i + 1 < t.size() && (t[i + 1] == '-' || t[i + 1] == '+')) ? 1 : 0);
        const std::size_t exp_start = j;
        while (j < t.size() && is_digit(t[j])) ++j;
        if (j == exp_start) return std::nullopt;
        i = j;
      }
      if (i != t.size() || digits == 0 || dots > 1) return std::nullopt;
      return Value{type, std::string(t)};
    }
    case Value::Type::string: return Value{type, std::string(t)};
    case Value::Type::null: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace errshim::detail
