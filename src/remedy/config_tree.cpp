// ConfigTree on yaml-cpp, and the KeyPath spelling.
//
// Writing back (dump) splices the text as given: only the bytes of the values
// that changed are replaced (see "round trip" below), so comments, blank
// lines, flow or block style, quoting, anchors, indentation, line ends and the
// trailing newline stay. Only when a spliced text would not read back as the
// tree (a layout the scanners do not know) is the document written whole by
// the emitter, which keeps keys, their order, scalar spellings and quoting
// where it decides the type, and loses the rest; what neither writes so
// that it reads back as the tree is refused (config_error), never written.
// JSON is written by write_json() below, not by yaml-cpp's emitter, which
// does not produce strict JSON.
//
// Paths: a list is entered with the element's index as a path part
// ("layers.0.kv_repeat"), so find() reports keys inside lists of mappings;
// an index itself is never a match. set() replaces an existing list element
// but never extends a list, and remove() refuses a list element (the later
// ones would be renumbered). set() turns a null parent into a mapping.
// A document with a repeated key is refused: a fix could not tell the copies apart.

#include <algorithm>
#include <cerrno>
#include <limits>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include "errshim/config.hpp"
#include "chars.hpp"
#include "json_writer.hpp"
#include "utf8.hpp"
#include "yaml_scalar.hpp"

namespace errshim {

// Parts are joined as they are: a key that itself contains '.' does not
// survive to_string/parse_key_path, so code that has a KeyPath keeps it.
std::string to_string(const KeyPath& path) {
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (i > 0) out += '.';
    out += path[i];
  }
  return out;
}

KeyPath parse_key_path(std::string_view dotted) {
  KeyPath out;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', start);
    const std::string_view part =
        dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    // An empty part ("a..b", ".a", "") names nothing; say so rather than
    // address a key "" that no config means.
    if (part.empty()) throw config_error(fmt::format("key path '{}' has an empty part", dotted));
    out.emplace_back(part);
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

std::string_view to_string(ConfigKind k) noexcept {
  switch (k) {
    case ConfigKind::unknown: return "unknown";
    case ConfigKind::model_config: return "model-config";
    case ConfigKind::generation_config: return "generation-config";
    case ConfigKind::from_pretrained_kwargs: return "from-pretrained-kwargs";
    case ConfigKind::generate_kwargs: return "generate-kwargs";
    case ConfigKind::candle_config: return "candle-config";
    case ConfigKind::host_config: return "host-config";
  }
  return "unknown";
}

std::optional<ConfigKind> parse_config_kind(std::string_view s) noexcept {
  for (ConfigKind k : {ConfigKind::unknown, ConfigKind::model_config, ConfigKind::generation_config,
                       ConfigKind::from_pretrained_kwargs, ConfigKind::generate_kwargs, ConfigKind::candle_config,
                       ConfigKind::host_config})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

namespace {

// ---- scalar spellings --------------------------------------------------------

// A forward-only reader for the little number grammars below; hand-written
// because std::regex recurses per character on long input.
class Scan {
 public:
  explicit Scan(std::string_view s) : s_(s) {}
  bool done() const { return i_ == s_.size(); }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool eat_any(std::string_view set) {
    if (i_ < s_.size() && set.find(s_[i_]) != std::string_view::npos) return ++i_, true;
    return false;
  }
  std::size_t digits() {
    const std::size_t from = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ - from;
  }
  char peek(std::size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

using detail::core_false;
using detail::core_float;
using detail::core_int;
using detail::core_true;
using detail::is_digit;
using detail::plain_would_retype;

bool json_number(std::string_view s) {
  Scan c(s);
  c.eat('-');
  if (!c.eat('0') && c.digits() == 0) return false;
  if (c.eat('.') && c.digits() == 0) return false;
  if (c.eat_any("eE")) {
    c.eat_any("+-");
    if (c.digits() == 0) return false;
  }
  return c.done();
}

bool one_of(std::string_view s, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (s == w) return true;
  return false;
}

// Where the first C0 control character or DEL is, or npos.
std::size_t first_control(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f) return i;
  return std::string_view::npos;
}

bool json_literal(std::string_view s) {
  // NaN and Infinity are not JSON, but Python's json module writes them by
  // default; a file it wrote must still load and be written back as it was.
  return one_of(s, {"true", "false", "null", "NaN", "Infinity", "-Infinity"}) || json_number(s);
}

const std::string kStrTag = "tag:yaml.org,2002:str";

bool quoted(const YAML::Node& n) { return n.Tag() == "!" || n.Tag() == kStrTag; }

// The Value a node holds, resolved like the catalog's values.
Value to_value(const YAML::Node& n, ConfigTree::Format format) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return {Value::Type::null, "<mapping>"};
    case YAML::NodeType::Sequence: return {Value::Type::null, "<list>"};
    case YAML::NodeType::Scalar: break;
    default: return {Value::Type::null, ""};
  }
  const std::string& s = n.Scalar();
  if (quoted(n)) return {Value::Type::string, s};
  if (format == ConfigTree::Format::json && one_of(s, {"NaN", "Infinity", "-Infinity"}))
    return {Value::Type::number, s};
  // yaml-cpp gives a plain null its own node type, so what reaches here is
  // never null; the rule is the catalog's.
  Value v = detail::resolve_plain(s);
  if (v.type == Value::Type::null) v = {Value::Type::string, s};
  return v;
}

// ---- parsing ---------------------------------------------------------------------

std::string located(const std::string& name, const YAML::Mark& mark, std::string_view message) {
  if (mark.is_null()) return fmt::format("{}: {}", name, message);
  return fmt::format("{}:{}:{}: {}", name, mark.line + 1, mark.column + 1, message);
}

const char* kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    default: return "null";
  }
}

std::optional<unsigned> hex4(std::string_view s, std::size_t at) {
  if (at + 4 > s.size()) return std::nullopt;
  unsigned v = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    const char c = s[i];
    const int d = is_digit(c)              ? c - '0'
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                           : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<unsigned>(d);
  }
  return v;
}

// JSON spells a character outside the BMP as two escapes, "\ud83d\ude00"
// (Python's json.dump does so by default); yaml-cpp rejects each half as
// invalid. Replace such pairs inside strings by the character's UTF-8.
// A lone half is left for yaml-cpp to report. Columns after a replaced pair
// on the same line shift in error messages; the line stays right.
// `shifts` gets, for each pair replaced, where it ends in the output and how
// many bytes shorter the output is from there on, to map positions back.
std::string join_surrogate_escapes(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& shifts) {
  if (text.find("\\u") == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!in_string) {
      in_string = c == '"';
      out += c;
      continue;
    }
    if (c == '"') {
      in_string = false;
    } else if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == 'u') {
        const auto hi = hex4(text, i + 2);
        const bool pair = hi && *hi >= 0xD800 && *hi <= 0xDBFF && text.substr(i + 6, 2) == "\\u";
        const auto lo = pair ? hex4(text, i + 8) : std::nullopt;
        if (lo && *lo >= 0xDC00 && *lo <= 0xDFFF) {
          detail::append_utf8(out, 0x10000 + ((*hi - 0xD800) << 10) + (*lo - 0xDC00));
          i += 11;
          shifts.emplace_back(out.size(), i + 1 - out.size());
          continue;
        }
      }
      out += c;  // any other escape: copy both characters so `\"` does not end the string
      out += text[++i];
      continue;
    }
    out += c;
  }
  return out;
}

// Rejects what the path model cannot address unambiguously, and, in a JSON
// document, what yaml-cpp accepts as YAML but is not JSON (write_json could
// not write it back faithfully). Walks the tree as unshare() will expand it,
// so it also stops aliases that unshare() could not expand: one inside its
// own anchor (yaml-cpp builds a cycle) or a "billion laughs" nest.
void emit_tag(YAML::Emitter& out, const std::string& tag);

// Whether the tag survives dump() and a parse of what it wrote: a config
// that parses must also dump and read back. yaml-cpp's emitter refuses some
// tags (a local tag with a second '!') and writes others its parser refuses
// (`!` at the very end of the input reads as the core prefix with no suffix,
// written `!!`). Asked of yaml-cpp itself, so the rule is exactly its own;
// only tagged nodes, which are rare in configs, pay for it.
bool writable_tag(const std::string& tag) {
  if (tag.empty() || tag == "?" || tag == "!") return true;
  YAML::Emitter probe;
  emit_tag(probe, tag);
  probe << "x";
  if (!probe.good()) return false;
  try {
    return YAML::Load(probe.c_str()).Tag() == tag;
  } catch (const YAML::Exception&) {
    return false;
  }
}

class Checker {
 public:
  Checker(const std::string& name, bool json) : name_(name), json_(json) {}

  void check(const YAML::Node& n) {
    if (++nodes_ > kMaxNodes)
      throw config_error(located(name_, n.Mark(), fmt::format("aliases expand to more than {} nodes", kMaxNodes)));
    const std::string& tag = n.Tag();
    if (json_ && !tag.empty() && tag != "?" && tag != "!")
      fail(n, fmt::format("YAML tag '{}' in a JSON document", tag));
    if (!writable_tag(tag))
      fail(n, fmt::format("YAML tag '{}' cannot be written back; remove it or spell it as a plain '!name'", tag));
    if (n.IsMap() || n.IsSequence()) {
      for (const YAML::Node& a : open_)
        if (a.is(n)) fail(n, "an alias refers to a node that contains it");
      open_.push_back(n);
      if (n.IsMap())
        check_map(n);
      else
        for (const YAML::Node& e : n) check(e);
      open_.pop_back();
    } else if (json_ && n.IsScalar() && tag != "!" && !json_literal(n.Scalar())) {
      fail(n, fmt::format("'{}' is not JSON; a string needs quotes", n.Scalar()));
    }
  }

 private:
  static constexpr std::size_t kMaxNodes = 1'000'000;

  [[noreturn]] void fail(const YAML::Node& at, std::string_view message) const {
    throw config_error(located(name_, at.Mark(), message));
  }

  void check_map(const YAML::Node& n) {
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;  // a copy: it-> returns a proxy that dies with the statement
      if (json_ && !(key.IsScalar() && key.Tag() == "!")) fail(key, "a JSON object key must be a quoted string");
      // A fix addresses keys by name; a null, list or mapping key, or one
      // with a tag, names nothing and does not survive being written back.
      if (!key.IsScalar()) fail(key, fmt::format("a config key must be a name, not {}", kind_of(key)));
      if (key.Tag() != "?" && !quoted(key) && !key.Tag().empty())
        fail(key, fmt::format("a config key may not carry a YAML tag ('{}')", key.Tag()));
      // yaml-cpp keeps both copies of a repeated key; a fix would change the
      // first while the program reads the last.
      if (key.IsScalar() && !seen.insert(key.Scalar()).second)
        fail(key, fmt::format("duplicate key '{}'", key.Scalar()));
      // A control character would be written back as an escape (one byte
      // becomes six), which can push the key past the 1024 characters YAML
      // allows a simple key, so the dumped config would not read back.
      if (key.IsScalar()) {
        const std::string& k = key.Scalar();
        if (const std::size_t at = first_control(k); at != std::string_view::npos)
          fail(key, fmt::format("key holds the control character U+{:04X}; a config key is a printable name",
                                static_cast<unsigned>(static_cast<unsigned char>(k[at]))));
      }
      check(key);
      check(it->second);
    }
  }

  const std::string& name_;
  bool json_;
  std::vector<YAML::Node> open_;  // the containers being walked, to see a cycle
  std::size_t nodes_ = 0;
};

// A copy in which every node appears once. yaml-cpp resolves an alias to
// the anchored node itself, so without this a fix to `b.k` in
// `a: &x {k: 1}` / `b: *x` would change `a.k` too.
YAML::Node unshare(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      YAML::Node out(YAML::NodeType::Map);
      out.SetTag(n.Tag());
      for (auto it = n.begin(); it != n.end(); ++it) out.force_insert(unshare(it->first), unshare(it->second));
      return out;
    }
    case YAML::NodeType::Sequence: {
      YAML::Node out(YAML::NodeType::Sequence);
      out.SetTag(n.Tag());
      for (const YAML::Node& e : n) out.push_back(unshare(e));
      return out;
    }
    case YAML::NodeType::Scalar: {
      YAML::Node out(n.Scalar());
      out.SetTag(n.Tag());
      return out;
    }
    default: return YAML::Node(YAML::NodeType::Null);
  }
}

// Counts the documents the parser reads and keeps where the second one's
// content starts (the error position for "more than one document").
class DocumentStarts final : public YAML::EventHandler {
 public:
  int documents = 0;
  YAML::Mark second = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark&) override { ++documents; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override { node(mark); }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& mark) {
    if (documents == 2 && !seen_second_) {
      second = mark;
      seen_second_ = true;
    }
  }
  bool seen_second_ = false;
};

ConfigTree::Format detect_format(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
  return json ? ConfigTree::Format::json : ConfigTree::Format::yaml;
}

// ---- writing -------------------------------------------------------------------

void emit_tag(YAML::Emitter& out, const std::string& tag) {
  if (tag.empty() || tag == "?" || tag == "!") return;  // non-specific: quoting carries it
  static const std::string core = "tag:yaml.org,2002:";
  if (tag.compare(0, core.size(), core) == 0)
    out << YAML::SecondaryTag(tag.substr(core.size()));
  else if (tag[0] == '!')
    out << YAML::LocalTag(tag.substr(1));
  else
    out << YAML::VerbatimTag(tag);
}

// Walks the tree instead of `out << node`, because yaml-cpp's own
// node emitter drops the quotes of a quoted scalar: "true" would come back
// as the boolean true.
void emit_yaml(YAML::Emitter& out, const YAML::Node& n) {
  emit_tag(out, n.Tag());
  switch (n.Type()) {
    case YAML::NodeType::Map:
      if (n.size() == 0) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;  // `key: {}`, not `key:` + `{}` on its own line
        return;
      }
      out << YAML::BeginMap;
      for (auto it = n.begin(); it != n.end(); ++it) {
        out << YAML::Key;
        emit_yaml(out, it->first);
        out << YAML::Value;
        emit_yaml(out, it->second);
      }
      out << YAML::EndMap;
      return;
    case YAML::NodeType::Sequence:
      if (n.size() == 0) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const YAML::Node& e : n) emit_yaml(out, e);
      out << YAML::EndSeq;
      return;
    case YAML::NodeType::Scalar:
      // A plain scalar goes out as it came in (the emitter quotes only what
      // cannot be plain); a quoted one stays quoted. yaml-cpp would write a
      // control character raw in a plain scalar, where a trailing CR or tab
      // is lost on reading back, so such a scalar is quoted (and escaped).
      if (n.Tag() == "!" || first_control(n.Scalar()) != std::string_view::npos)
        out << YAML::DoubleQuoted << n.Scalar();
      else
        out << n.Scalar();
      return;
    default: out << YAML::Null; return;
  }
}

// The layout of Python's json.dump(indent=2), which writes transformers'
// config files, so an untouched file comes back byte for byte (strings are
// quoted by the one rule, json_writer.hpp).
void write_json(std::string& out, const YAML::Node& n, std::size_t depth) {
  const auto newline = [&](std::size_t d) {
    out += '\n';
    out.append(2 * d, ' ');
  };
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      if (n.size() == 0) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!first) out += ',';
        first = false;
        newline(depth + 1);
        detail::append_json_string(out, it->first.Scalar());  // Checker and set() make every key a scalar
        out += ": ";
        write_json(out, it->second, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    case YAML::NodeType::Sequence: {
      if (n.size() == 0) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const YAML::Node& e : n) {
        if (!first) out += ',';
        first = false;
        newline(depth + 1);
        write_json(out, e, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case YAML::NodeType::Scalar:
      // Checker admits only JSON literals as plain scalars, and set()
      // quotes every string it writes into a JSON document.
      if (n.Tag() == "!")
        detail::append_json_string(out, n.Scalar());
      else
        out += n.Scalar();
      return;
    default: out += "null"; return;
  }
}

// ---- paths ------------------------------------------------------------------------

// "0", "12"; not "01" or "+1", which would be a second spelling of an index.
std::optional<std::size_t> parse_index(const std::string& part) {
  if (part.empty() || part.size() > 9 || (part.size() > 1 && part[0] == '0')) return std::nullopt;
  std::size_t v = 0;
  for (const char c : part) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + static_cast<std::size_t>(c - '0');
  }
  return v;
}

// The child of a mapping by key text, or of a list by index; nullopt when
// absent. The Node returned refers into the tree (yaml-cpp nodes are
// handles), so assigning to it changes the tree.
std::optional<YAML::Node> child(const YAML::Node& parent, const std::string& part) {
  if (parent.IsMap()) {
    for (auto it = parent.begin(); it != parent.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == part) return YAML::Node(it->second);
  } else if (parent.IsSequence()) {
    if (const auto index = parse_index(part)) {
      std::size_t i = 0;
      for (const YAML::Node& e : parent)
        if (i++ == *index) return YAML::Node(e);
    }
  }
  return std::nullopt;
}

KeyPath prefix(const KeyPath& path, std::size_t n) {
  return KeyPath(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(n));
}

void collect(const YAML::Node& n, std::string_view key, KeyPath& path, std::vector<KeyPath>& out) {
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) continue;  // a complex key has no path
      path.push_back(it->first.Scalar());
      if (detail::config_impl::path_matches(path, key)) out.push_back(path);
      collect(it->second, key, path, out);
      path.pop_back();
    }
  } else if (n.IsSequence()) {
    std::size_t i = 0;
    for (const YAML::Node& e : n) {
      path.push_back(std::to_string(i++));
      collect(e, key, path, out);  // an index is never a match itself: find looks for keys
      path.pop_back();
    }
  }
}

// ---- round trip: the source map and the splice ------------------------------------
//
// dump() writes the text it was given back, with only the bytes of what a
// fix changed replaced. At parse, every value of the document is located in
// the text (yaml-cpp's Mark gives where a node starts; where it ends is read
// from the text by the scanners below). At dump, the current tree is
// compared with the tree as parsed and each difference becomes an edit of
// that span: a changed scalar, a created or removed key, an alias to a node
// that changed. The result is parsed again and compared with the tree; if it
// does not read back as the tree (text the scanners did not foresee), the
// whole document is written by the emitter instead, which is always right.

struct Src {
  enum class Kind { scalar, null, map, seq, alias };
  Kind kind = Kind::null;
  std::size_t region = 0;  // where the value's text may be replaced from (just after ':' or '-')
  std::size_t start = 0, end = 0;  // the value's own text: a scalar with its quotes, a container, an alias
  bool flow = false;  // in flow style (JSON is): values are separated by ','
  char style = 0;  // scalar: '\'' '"' 'p'lain '|' (block scalar)
  std::size_t col = 0;  // column of a container's own keys or dashes
  std::size_t owner_col = 0;  // column of the key or dash this value belongs to
  bool bare = false;  // a key without ':' (its value is null)
  int self = -1;  // this node's index among the nodes written out (not aliases, not nulls)
  int anchor = -1;  // the node an alias names (its `self`)
  std::vector<std::size_t> key_start, key_end;  // a map's keys
  std::vector<Src> kids;  // a map's values, a list's items
};

struct SourceMap {
  Src root;
  std::size_t anchors = 0;
};

class Locator {
 public:
  Locator(std::string_view text, std::size_t offset) : t_(text), offset_(offset) {}

  Src root(const YAML::Node& n) {
    Src s;
    const std::size_t at = skip(n.Mark().pos + offset_, true);
    build(n, s, at, false, 0, true);
    s.region = s.start;
    return s;
  }
  std::size_t anchors() const { return seen_.size(); }

 private:
  struct bad_layout {};
  [[noreturn]] static void bad() { throw bad_layout{}; }

  char at(std::size_t i) const { return i < t_.size() ? t_[i] : '\0'; }
  static bool blank(char c) { return c == ' ' || c == '\t'; }
  static bool indicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }
  static bool line_end(char c) { return c == '\n' || c == '\r' || c == '\0'; }

  // Past blanks, and with `lines` past line ends and comments too.
  std::size_t skip(std::size_t i, bool lines) const {
    while (i < t_.size()) {
      if (blank(t_[i])) {
        ++i;
      } else if (lines && (t_[i] == '\n' || t_[i] == '\r')) {
        ++i;
      } else if (lines && t_[i] == '#') {
        while (i < t_.size() && !line_end(t_[i])) ++i;
      } else {
        break;
      }
    }
    return i;
  }
  std::size_t column(std::size_t i) const {
    std::size_t c = 0;
    while (i > 0 && t_[i - 1] != '\n') --i, ++c;
    return c;
  }
  std::size_t next_line(std::size_t i) const {
    while (i < t_.size() && t_[i] != '\n') ++i;
    return i < t_.size() ? i + 1 : i;
  }
  std::size_t indent_of(std::size_t line) const {
    std::size_t i = line;
    while (i < t_.size() && t_[i] == ' ') ++i;
    return i - line;
  }
  bool blank_line(std::size_t line) const {
    std::size_t i = line;
    while (i < t_.size() && blank(t_[i])) ++i;
    return line_end(at(i));
  }

  // The end of the scalar that starts at i.
  std::size_t scalar_end(std::size_t i, bool flow, std::size_t parent_col, char& style) {
    const char c = at(i);
    if (c == '"') {
      style = '"';
      for (std::size_t k = i + 1; k < t_.size(); ++k) {
        if (t_[k] == '\\')
          ++k;
        else if (t_[k] == '"')
          return k + 1;
      }
      bad();
    }
    if (c == '\'') {
      style = '\'';
      for (std::size_t k = i + 1; k < t_.size(); ++k) {
        if (t_[k] == '\'') {
          if (at(k + 1) == '\'')
            ++k;
          else
            return k + 1;
        }
      }
      bad();
    }
    if ((c == '|' || c == '>') && !flow) {
      style = '|';
      std::size_t e = i + 1;
      while (!line_end(at(e))) ++e;
      for (std::size_t line = next_line(e); line < t_.size(); line = next_line(line)) {
        if (blank_line(line)) continue;
        if (indent_of(line) <= parent_col) break;
        e = line;
        while (!line_end(at(e))) ++e;
      }
      return e;
    }
    style = 'p';
    std::size_t e = plain_line_end(i, flow);
    if (!flow) {
      // A plain scalar goes on over lines indented more than its key.
      for (std::size_t line = next_line(e); line < t_.size(); line = next_line(line)) {
        if (blank_line(line)) continue;
        const std::size_t first = line + indent_of(line);
        if (indent_of(line) <= parent_col || at(first) == '#' || at(first) == '\t') break;
        e = plain_line_end(first, false);
      }
    }
    return e;
  }
  std::size_t plain_line_end(std::size_t i, bool flow) const {
    std::size_t k = i;
    for (; k < t_.size() && !line_end(t_[k]); ++k) {
      const char c = t_[k];
      if (c == '#' && k > i && blank(t_[k - 1])) break;
      if (c == ':' && (blank(at(k + 1)) || line_end(at(k + 1)) || (flow && indicator(at(k + 1))))) break;
      if (flow && indicator(c)) break;
    }
    while (k > i && blank(t_[k - 1])) --k;
    return k;
  }
  // Past an anchor and a tag before a node's content.
  std::size_t properties(std::size_t i) const {
    while (at(i) == '&' || at(i) == '!') {
      while (i < t_.size() && !blank(t_[i]) && !line_end(t_[i])) ++i;
      i = skip(i, true);
    }
    return i;
  }

  // Fills `s` for the node whose value text begins at `token` (after the
  // separator, blanks, line ends and comments skipped).
  void build(const YAML::Node& n, Src& s, std::size_t token, bool flow, std::size_t parent_col, bool is_root = false) {
    s.start = token;
    if (at(token) == '*') {  // an alias: the node is the anchored one, its mark is the anchor's
      s.kind = Src::Kind::alias;
      std::size_t e = token + 1;
      while (e < t_.size() && !blank(t_[e]) && !line_end(t_[e]) && !(flow && indicator(t_[e]))) ++e;
      s.end = e;
      for (std::size_t k = 0; k < seen_.size(); ++k)
        if (seen_[k].is(n)) s.anchor = static_cast<int>(k);
      if (s.anchor < 0) bad();
      return;
    }
    if (n.IsMap() || n.IsSequence() || n.IsScalar()) {
      if (!is_root && n.Mark().pos + offset_ != token) bad();
      s.self = static_cast<int>(seen_.size());
      seen_.push_back(n);
    }
    const std::size_t content = properties(token);
    switch (n.Type()) {
      case YAML::NodeType::Scalar: {
        s.kind = Src::Kind::scalar;
        if (n.Scalar().empty() && content != token) {
          // An empty scalar after its tag or anchor (`seed: !337`): its text
          // is nothing, where the properties end on their line, not the
          // next line's key that properties() skipped to.
          std::size_t e = token;
          while (e < t_.size() && !blank(t_[e]) && !line_end(t_[e])) ++e;
          std::size_t b = e;
          while (b < t_.size() && blank(t_[b])) ++b;
          if (b >= t_.size() || line_end(t_[b]) || t_[b] == '#') {
            s.start = s.end = e;
            s.style = 'p';
            return;
          }
        }
        s.start = content;
        s.end = scalar_end(content, flow, parent_col, s.style);
        return;
      }
      case YAML::NodeType::Map: {
        s.kind = Src::Kind::map;
        s.flow = at(content) == '{';
        std::size_t p = s.flow ? skip(content + 1, true) : content;
        s.col = column(p);
        for (auto it = n.begin(); it != n.end(); ++it) {
          const YAML::Node key = it->first;
          if (!s.flow) p = skip(p, true);
          if (key.Mark().pos + offset_ != p) bad();
          // A key is on one line; a plain one in block style may hold '{' or ','.
          char style = 0;
          const std::size_t key_end =
              at(p) == '"' || at(p) == '\'' ? scalar_end(p, true, 0, style) : plain_line_end(p, s.flow);
          s.key_start.push_back(p);
          s.key_end.push_back(key_end);
          std::size_t colon = skip(key_end, false);
          if (at(colon) != ':' && it->second.IsNull()) {
            // `{a, b: 1}`: a key alone in a flow mapping has a null value
            // (yaml-cpp reads a block key without ':' the same way).
            Src v;
            v.kind = Src::Kind::null;
            v.bare = true;
            v.region = v.start = v.end = key_end;
            v.owner_col = column(p);
            p = after_entry(key_end, s.flow);
            s.kids.push_back(std::move(v));
            continue;
          }
          if (at(colon) != ':') bad();
          Src v;
          v.region = colon + 1;
          v.owner_col = column(p);
          const std::size_t vt = skip(colon + 1, true);
          place(it->second, v, colon + 1, vt, s.flow, column(p));
          p = after_entry(v.end, s.flow);
          s.kids.push_back(std::move(v));
        }
        s.end = s.flow ? close(p, '}') : (s.kids.empty() ? content : s.kids.back().end);
        return;
      }
      case YAML::NodeType::Sequence: {
        s.kind = Src::Kind::seq;
        s.flow = at(content) == '[';
        std::size_t p = s.flow ? skip(content + 1, true) : content;
        s.col = column(p);
        for (const YAML::Node& e : n) {
          Src v;
          std::size_t vt;
          if (s.flow) {
            v.region = p;
            vt = p;
          } else {
            p = skip(p, true);
            if (at(p) != '-') bad();
            v.region = p + 1;
            vt = skip(p + 1, true);
          }
          v.owner_col = column(p);
          place(e, v, v.region, vt, s.flow, column(p));
          p = after_entry(v.end, s.flow);
          s.kids.push_back(std::move(v));
        }
        s.end = s.flow ? close(p, ']') : (s.kids.empty() ? content : s.kids.back().end);
        return;
      }
      default: bad();
    }
  }
  // Where the next entry may start: in flow style past the ',' after this one.
  std::size_t after_entry(std::size_t p, bool flow) const {
    if (!flow) return p;
    p = skip(p, true);
    return at(p) == ',' ? skip(p + 1, true) : p;
  }
  std::size_t close(std::size_t p, char bracket) const {
    p = skip(p, true);
    if (at(p) != bracket) bad();
    return p + 1;
  }

  // A map value or list item: a null may be empty (`key:` and nothing).
  void place(const YAML::Node& n, Src& v, std::size_t after_separator, std::size_t token, bool flow, std::size_t col) {
    if (n.IsNull() && at(token) != '*') {
      v.kind = Src::Kind::null;
      const std::size_t content = properties(token);
      const char c = at(content);
      if (c == '~' || c == 'n' || c == 'N') {
        char style = 0;
        const std::size_t e = scalar_end(content, flow, col, style);
        const std::string_view word = t_.substr(content, e - content);
        if (word == "~" || word == "null" || word == "Null" || word == "NULL") {
          v.start = content, v.end = e;
          return;
        }
      }
      // Empty: nothing written after the separator (the mark points at
      // whatever follows, so it is not used).
      v.start = v.end = after_separator;
      return;
    }
    build(n, v, token, flow, col);
  }

  std::string_view t_;
  std::size_t offset_;
  std::vector<YAML::Node> seen_;  // every node met, in document order: an alias names one of them

 public:
  static std::optional<SourceMap> map(std::string_view text, std::size_t offset, const YAML::Node& raw) {
    try {
      Locator l(text, offset);
      SourceMap m;
      m.root = l.root(raw);
      m.anchors = l.anchors();
      return m;
    } catch (const bad_layout&) {
      return std::nullopt;
    }
  }
};

// Positions in the text yaml-cpp read moved to the text as given (see
// join_surrogate_escapes): no span starts or ends inside a joined pair.
void shift_positions(Src& s, const std::vector<std::pair<std::size_t, std::size_t>>& shifts) {
  const auto given = [&](std::size_t p) {
    auto it =
        std::upper_bound(shifts.begin(), shifts.end(), std::make_pair(p, std::numeric_limits<std::size_t>::max()));
    return it == shifts.begin() ? p : p + std::prev(it)->second;
  };
  s.region = given(s.region), s.start = given(s.start), s.end = given(s.end);
  for (std::size_t& k : s.key_start) k = given(k);
  for (std::size_t& k : s.key_end) k = given(k);
  for (Src& kid : s.kids) shift_positions(kid, shifts);
}

// Whether two trees hold the same document: maps by key (the text keeps its
// order), lists in order, scalars by what they mean (to_value) and by
// (quoting counts where it decides the type: "true" is not true).
bool same_tree(const YAML::Node& a, const YAML::Node& b, ConfigTree::Format f) {
  if (a.Type() != b.Type()) return false;
  switch (a.Type()) {
    case YAML::NodeType::Scalar: return to_value(a, f) == to_value(b, f);
    case YAML::NodeType::Sequence: {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!same_tree(a[i], b[i], f)) return false;
      return true;
    }
    case YAML::NodeType::Map: {
      if (a.size() != b.size()) return false;
      for (auto it = a.begin(); it != a.end(); ++it) {
        const auto other = child(b, it->first.Scalar());
        if (!other || !same_tree(it->second, *other, f)) return false;
      }
      return true;
    }
    default: return true;
  }
}

struct Edit {
  std::size_t from, to;
  std::string with;
};

class Splicer {
 public:
  Splicer(const std::string& text, const SourceMap& map, ConfigTree::Format format)
      : t_(text), map_(map), json_(format == ConfigTree::Format::json), format_(format), now_(map.anchors) {
    const std::size_t nl = text.find('\n');
    eol_ = nl != std::string::npos && nl > 0 && text[nl - 1] == '\r' ? "\r\n" : "\n";
  }

  // The edits that turn the text into `now`, given the tree it was (`was`).
  std::vector<Edit> diff(const YAML::Node& was, const YAML::Node& now) {
    node(map_.root, was, now, false);
    return std::move(edits_);
  }

 private:
  void node(const Src& s, const YAML::Node& was, const YAML::Node& now, bool in_flow) {
    if (s.self >= 0) now_[static_cast<std::size_t>(s.self)] = now;
    if (s.kind == Src::Kind::alias) {
      // The alias reads whatever its anchor now holds; written out in full
      // where that is not what this place should hold.
      const std::optional<YAML::Node>& target = now_[static_cast<std::size_t>(s.anchor)];
      if (!target || !same_tree(*target, now, format_)) edits_.push_back({s.start, s.end, flow_text(now)});
      return;
    }
    if (same_tree(was, now, format_) && !holds_alias(s)) return;
    if (s.kind == Src::Kind::map && now.IsMap() && now.size() > 0 &&
        (keeps_a_key(was, now) || (s.flow && was.size() == 0)))
      return map(s, was, now);
    if (s.kind == Src::Kind::seq && now.IsSequence() && now.size() == s.kids.size()) {
      for (std::size_t i = 0; i < s.kids.size(); ++i) node(s.kids[i], was[i], now[i], s.flow);
      return;
    }
    if (s.kind == Src::Kind::scalar && now.IsScalar()) {
      edits_.push_back({s.start, s.end, scalar_text(now, s.style, in_flow)});
      return;
    }
    // Another type (a null that became a mapping, a list that became a
    // scalar): the value is written anew after its separator.
    replace_value(s, now, in_flow);
  }

  // Whether an entry of `was` is still in `now`: else the mapping is written anew.
  static bool keeps_a_key(const YAML::Node& was, const YAML::Node& now) {
    for (auto it = was.begin(); it != was.end(); ++it)
      if (child(now, it->first.Scalar())) return true;
    return false;
  }

  static bool holds_alias(const Src& s) {
    if (s.kind == Src::Kind::alias) return true;
    for (const Src& k : s.kids)
      if (holds_alias(k)) return true;
    return false;
  }

  void map(const Src& s, const YAML::Node& was, const YAML::Node& now) {
    std::size_t i = 0;
    std::vector<bool> removed(s.kids.size(), false);
    for (auto it = was.begin(); it != was.end(); ++it, ++i) {
      if (const auto n = child(now, it->first.Scalar()))
        node(s.kids[i], it->second, *n, s.flow);
      else
        removed[i] = true;
    }
    remove_entries(s, removed);
    std::vector<std::pair<YAML::Node, YAML::Node>> created;
    for (auto it = now.begin(); it != now.end(); ++it)
      if (!child(was, it->first.Scalar())) created.emplace_back(it->first, it->second);
    if (!created.empty()) insert_entries(s, created, removed);
  }

  std::size_t line_start(std::size_t i) const {
    while (i > 0 && t_[i - 1] != '\n') --i;
    return i;
  }
  std::size_t after_line(std::size_t i) const {
    while (i < t_.size() && t_[i] != '\n') ++i;
    return i < t_.size() ? i + 1 : i;
  }
  bool only_blanks(std::size_t from, std::size_t to) const {
    for (std::size_t i = from; i < to; ++i)
      if (t_[i] != ' ' && t_[i] != '\t') return false;
    return true;
  }

  // Some entries stay (else the mapping is written anew), so each run of
  // removed ones goes with one separator.
  void remove_entries(const Src& s, const std::vector<bool>& removed) {
    const std::size_t n = s.kids.size();
    for (std::size_t a = 0; a < n; ++a) {
      if (!removed[a]) continue;
      std::size_t b = a;
      while (b + 1 < n && removed[b + 1]) ++b;
      if (s.flow) {
        if (a > 0)
          edits_.push_back({s.kids[a - 1].end, s.kids[b].end, {}});  // with the ',' before it
        else
          edits_.push_back({s.key_start[a], s.key_start[b + 1], {}});  // with the ',' after it
      } else {
        const std::size_t key = s.key_start[a], ls = line_start(key);
        if (only_blanks(ls, key))
          edits_.push_back({ls, after_line(s.kids[b].end), {}});  // whole lines
        else if (b + 1 < n)
          edits_.push_back({key, s.key_start[b + 1], {}});  // `- a: 1` then `  b: 2`: the next key moves up
        else
          edits_.push_back({key, after_line(s.kids[b].end), {}});
      }
      a = b;
    }
  }

  std::string key_text(const YAML::Node& key) const {
    if (json_) return json_text(key);
    return scalar_text(key, key.Tag() == "!" ? '"' : 'p', true);
  }

  void insert_entries(const Src& s, const std::vector<std::pair<YAML::Node, YAML::Node>>& created,
                      const std::vector<bool>& removed) {
    std::size_t last = s.kids.size();
    while (last > 0 && removed[last - 1]) --last;
    if (s.flow) {
      // Multi-line when its last entry starts a line of its own.
      const bool lines = last > 0 && only_blanks(line_start(s.key_start[last - 1]), s.key_start[last - 1]);
      const std::string indent = lines ? t_.substr(line_start(s.key_start[last - 1]),
                                                   s.key_start[last - 1] - line_start(s.key_start[last - 1]))
                                       : std::string();
      std::string add;
      for (const auto& [k, v] : created) {
        if (last > 0 || !add.empty()) add += lines ? "," + eol_ + indent : ", ";
        add += key_text(k) + ": " + flow_value(v, indent.size(), lines);
      }
      // After the last value kept, or just inside the opening brace.
      const std::size_t at = last > 0 ? s.kids[last - 1].end : s.start + t_.substr(s.start).find('{') + 1;
      edits_.push_back({at, at, add});
      return;
    }
    const std::size_t col = s.col;
    const std::string indent(col, ' ');
    std::string add;
    for (const auto& [k, v] : created) add += indent + key_text(k) + ":" + block_value(v, col) + eol_;
    std::size_t at = after_line(s.kids[last - 1].end);
    if (at == t_.size() && (t_.empty() || t_.back() != '\n')) {
      add = eol_ + add.substr(0, add.size() - eol_.size());  // the file ends without a line end; so does it still
    }
    edits_.push_back({at, at, add});
  }

  // A value after "key:" in block style: on the same line, or, for a
  // mapping or list with entries, on the lines below, indented.
  std::string block_value(const YAML::Node& v, std::size_t col) const {
    if ((v.IsMap() || v.IsSequence()) && v.size() > 0) {
      YAML::Emitter out;
      out.SetNullFormat(YAML::LowerNull);
      emit_yaml(out, v);
      std::string body = out.c_str(), indented;
      const std::string pad(col + 2, ' ');
      std::size_t from = 0;
      while (from <= body.size()) {
        const std::size_t nl = body.find('\n', from);
        indented += eol_ + pad + body.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
        if (nl == std::string::npos) break;
        from = nl + 1;
      }
      return indented;
    }
    return " " + flow_text(v);
  }
  // In a JSON document laid out over lines, a container at `indent` is laid
  // out too; on one line (`lines` false), it stays on one line.
  std::string flow_value(const YAML::Node& v, std::size_t indent, bool lines) const {
    if (json_ && lines && (v.IsMap() || v.IsSequence())) {
      std::string out;
      write_json(out, v, indent / 2);
      return out;
    }
    return flow_text(v);
  }

  // Whether the entry whose ':' ends just before `region` starts a line of
  // its own: no other entry or bracket before it on that line.
  bool own_line(std::size_t region) const {
    const std::size_t ls = line_start(region);
    if (region <= ls) return false;
    const std::string_view before = std::string_view(t_).substr(ls, region - ls);
    return before.find_first_of("{[,") == std::string_view::npos;
  }

  void replace_value(const Src& s, const YAML::Node& now, bool in_flow) {
    if (s.bare) {
      edits_.push_back({s.end, s.end, ": " + flow_text(now)});
      return;
    }
    if (in_flow || json_) {
      edits_.push_back({s.start, s.end, flow_value(now, s.owner_col, own_line(s.region))});
      return;
    }
    edits_.push_back({s.region, s.end, block_value(now, s.owner_col)});
  }

  // JSON on one line, `{"a": 1, "b": [1, 2]}`.
  static void compact_json(detail::JsonWriter& w, const YAML::Node& n) {
    if (n.IsMap()) {
      w.begin_object();
      for (auto it = n.begin(); it != n.end(); ++it) {
        w.key(it->first.Scalar());
        compact_json(w, it->second);
      }
      w.end_object();
    } else if (n.IsSequence()) {
      w.begin_array();
      for (std::size_t i = 0; i < n.size(); ++i) compact_json(w, n[i]);
      w.end_array();
    } else {
      std::string scalar;
      write_json(scalar, n, 0);
      w.raw(scalar);
    }
  }
  std::string json_text(const YAML::Node& n) const {
    std::string out;
    detail::JsonWriter w(out);
    compact_json(w, n);
    return out;
  }
  std::string flow_text(const YAML::Node& n) const {
    if (json_) return json_text(n);
    if (n.IsScalar()) return scalar_text(n, 'p', true);
    YAML::Emitter out;
    out.SetNullFormat(YAML::LowerNull);
    out.SetMapFormat(YAML::Flow);
    out.SetSeqFormat(YAML::Flow);
    emit_yaml(out, n);
    return out.c_str();
  }

  // A scalar in the style its place had where the new value allows it.
  std::string scalar_text(const YAML::Node& n, char style, bool flow) const {
    if (json_) return json_text(n);
    if (!n.IsScalar()) return flow_text(n);
    const std::string& s = n.Scalar();
    const bool control = first_control(s) != std::string_view::npos;
    if (n.Tag() == "!" || n.Tag() == kStrTag) {
      if (style == '\'' && !control && detail::valid_utf8(s)) {
        std::string out = "'";
        for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
        return out + "'";
      }
      if (style != '"' && !control && !plain_would_retype(s) && plain_safe(s, flow) && n.Tag() == kStrTag) return s;
      return double_quoted(s);
    }
    if (!control && plain_safe(s, flow)) return s;
    return double_quoted(s);
  }
  static std::string double_quoted(const std::string& s) {
    YAML::Emitter out;
    out << YAML::DoubleQuoted << s;
    return out.c_str();
  }
  // Text a YAML reader takes back as the same plain scalar, in any context.
  static bool plain_safe(std::string_view s, bool flow) {
    if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
    if (std::strchr("-?:,[]{}#&*!|>'\"%@`", s.front()) && !(s.front() == '-' && s.size() > 1 && s[1] != ' '))
      return false;
    if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos) return false;
    if (flow && s.find_first_of(",[]{}") != std::string_view::npos) return false;
    return s.find_first_of("\t") == std::string_view::npos && detail::valid_utf8(s);
  }

  const std::string& t_;
  const SourceMap& map_;
  bool json_;
  ConfigTree::Format format_;
  std::vector<std::optional<YAML::Node>> now_;  // by Src::self: what each written node holds now
  std::vector<Edit> edits_;
  std::string eol_;
};

// `text` with the edits made; nullopt when two of them overlap.
std::optional<std::string> apply_edits(const std::string& text, std::vector<Edit> edits) {
  // An insertion goes before a removal that starts where it is.
  std::stable_sort(edits.begin(), edits.end(),
                   [](const Edit& a, const Edit& b) { return a.from != b.from ? a.from < b.from : a.to < b.to; });
  std::string out;
  std::size_t at = 0;
  for (const Edit& e : edits) {
    if (e.from < at || e.to < e.from || e.to > text.size()) return std::nullopt;
    out.append(text, at, e.from - at);
    out += e.with;
    at = e.to;
  }
  out.append(text, at, std::string::npos);
  return out;
}

// What a config is, from its file name, else from keys only one kind has.
ConfigKind detect_kind(const std::string& name, const YAML::Node& root) {
  const std::string base = std::filesystem::path(name).filename().string();
  if (base == "generation_config.json") return ConfigKind::generation_config;
  if (base == "config.json") return ConfigKind::model_config;
  if (child(root, "model_type") || child(root, "architectures")) return ConfigKind::model_config;
  if (child(root, "_from_model_config")) return ConfigKind::generation_config;
  return ConfigKind::unknown;
}

}  // namespace

// ---- ConfigTree -------------------------------------------------------------------

struct ConfigTree::Impl {
  YAML::Node root;  // always a mapping, and no node in it is shared (see unshare)
  Format format = Format::yaml;
  std::string name;
  ConfigKind kind = ConfigKind::unknown;
  // The text as given, the text yaml-cpp read (JSON surrogate pairs joined),
  // the tree as parsed (never changed) and where its values are in `read`.
  std::shared_ptr<const std::string> given, read;
  std::shared_ptr<const YAML::Node> parsed;
  std::shared_ptr<const SourceMap> source;  // null: the layout was not understood; dump() emits

  Impl() = default;
  // YAML::Node copies are handles onto the same nodes; only a clone gives the
  // copy its own tree, so a fix tried on a copy leaves the original alone.
  Impl(const Impl& other)
      : root(YAML::Clone(other.root)),
        format(other.format),
        name(other.name),
        kind(other.kind),
        given(other.given),
        read(other.read),
        parsed(other.parsed),
        source(other.source) {}

  std::string emit() const;
  std::optional<std::string> splice() const;
  Impl& operator=(const Impl&) = delete;

  std::optional<YAML::Node> resolve(const KeyPath& path) const {
    YAML::Node cur = root;
    for (const std::string& part : path) {
      const auto next = child(cur, part);
      if (!next) return std::nullopt;
      cur.reset(*next);  // rebinds; `cur = *next` would overwrite the node cur refers to
    }
    return cur;
  }

  // A key created by set(): quoted where a plain key would not read back as
  // this string (JSON keys are always quoted).
  YAML::Node make_key(const std::string& text) const {
    YAML::Node key(text);
    key.SetTag(format == Format::json || plain_would_retype(text) ? "!" : "?");
    return key;
  }

  // The node for `value`, checked before anything is changed so that a
  // value the format cannot hold leaves the tree as it was.
  YAML::Node make_value(const KeyPath& path, const Value& value) const {
    const auto refuse = [&](std::string_view why) {
      return config_error(fmt::format("{}: cannot set {} to '{}': {}", name, to_string(path), value.text, why));
    };
    const bool json = format == Format::json;
    std::string text = value.text;
    bool quote = false;
    switch (value.type) {
      case Value::Type::null: return YAML::Node(YAML::NodeType::Null);
      case Value::Type::boolean:
        if (core_true(text))
          text = "true";
        else if (core_false(text))
          text = "false";
        else
          throw refuse("not a boolean");
        break;
      case Value::Type::integer:
        if (json ? !(json_number(text) && text.find_first_of(".eE") == std::string::npos) : !core_int(text))
          throw refuse(json ? "not a JSON integer" : "not an integer");
        break;
      case Value::Type::number:
        if (json ? !json_number(text) : !(core_int(text) || core_float(text)))
          throw refuse(json ? "not a JSON number" : "not a number");
        break;
      case Value::Type::string: quote = json || plain_would_retype(text); break;
    }
    YAML::Node node(text);
    node.SetTag(quote ? "!" : "?");
    return node;
  }
};

ConfigTree::ConfigTree(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConfigTree::ConfigTree(const ConfigTree& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
ConfigTree& ConfigTree::operator=(const ConfigTree& other) {
  ConfigTree copy(other);  // clone first: on failure *this is unchanged
  impl_.swap(copy.impl_);
  return *this;
}
ConfigTree::ConfigTree(ConfigTree&&) noexcept = default;
ConfigTree& ConfigTree::operator=(ConfigTree&&) noexcept = default;
ConfigTree::~ConfigTree() = default;

ConfigTree ConfigTree::parse(std::string_view text, std::string name) {
  const Format format = detect_format(text);
  std::vector<std::pair<std::size_t, std::size_t>> shifts;
  const std::string input = format == Format::json ? join_surrogate_escapes(text, shifts) : std::string(text);
  // YAML::Load would read the first document and drop the rest on dump, so a
  // second document is an error. It is looked for with the event parser, at
  // most twice: yaml-cpp 0.7's LoadAll never ends on some malformed input
  // ("{}," yields empty documents forever, allocating as it goes).
  DocumentStarts starts;
  YAML::Node root;
  try {
    std::istringstream in(input);
    YAML::Parser parser(in);
    for (int i = 0; i < 2 && parser.HandleNextDocument(starts); ++i) {}
    if (starts.documents > 0) root = YAML::Load(input);
  } catch (const YAML::Exception& e) {
    throw config_error(located(name, e.mark, e.msg));
  }
  if (starts.documents == 0)
    throw config_error(fmt::format("{}: the document is empty; a config must be a mapping", name));
  if (starts.documents > 1)
    throw config_error(located(name, starts.second, "more than one document; a config is one mapping"));
  if (!root.IsMap())
    throw config_error(
        located(name, root.Mark(), fmt::format("the document is {}; a config must be a mapping", kind_of(root))));
  Checker(name, format == Format::json).check(root);

  auto impl = std::make_unique<Impl>();
  impl->root = unshare(root);
  impl->format = format;
  impl->kind = detect_kind(name, impl->root);
  impl->name = std::move(name);
  impl->given = std::make_shared<const std::string>(text);
  impl->read = input == text ? impl->given : std::make_shared<const std::string>(input);
  impl->parsed = std::make_shared<const YAML::Node>(YAML::Clone(impl->root));
  // yaml-cpp's marks do not count a byte order mark.
  const std::size_t offset = input.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  if (auto map = Locator::map(*impl->read, offset, root)) {
    if (!shifts.empty()) shift_positions(map->root, shifts);  // to the text as given, escapes and all
    impl->source = std::make_shared<const SourceMap>(std::move(*map));
  }
  return ConfigTree(std::move(impl));
}

ConfigTree ConfigTree::load(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw config_error(fmt::format("{}: is a directory", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw config_error(
        fmt::format("{}: cannot open: {}", path.string(), std::error_code(errno, std::generic_category()).message()));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    throw config_error(
        fmt::format("{}: cannot read: {}", path.string(), std::error_code(errno, std::generic_category()).message()));
  return parse(text.str(), path.string());
}

std::string ConfigTree::Impl::emit() const {
  if (format == Format::json) {
    std::string out;
    write_json(out, root, 0);
    out += '\n';
    return out;
  }
  YAML::Emitter out;
  out.SetNullFormat(YAML::LowerNull);  // `null` reads alike in YAML 1.1 and 1.2, and matches JSON
  emit_yaml(out, root);
  if (!out.good()) throw config_error(fmt::format("{}: cannot write YAML: {}", name, out.GetLastError()));
  return std::string(out.c_str()) + "\n";
}

std::optional<std::string> ConfigTree::Impl::splice() const {
  if (!parsed) return std::nullopt;
  if (same_tree(*parsed, root, format)) return *given;  // unchanged: as given, whatever its layout
  if (!source) return std::nullopt;
  std::optional<std::string> out = apply_edits(*given, Splicer(*given, *source, format).diff(*parsed, root));
  if (!out) return std::nullopt;
  // Kept only when it reads back as this tree.
  try {
    const ConfigTree again = ConfigTree::parse(*out, name);
    if (same_tree(again.impl_->root, root, format)) return out;
  } catch (const config_error&) {}
  return std::nullopt;
}

std::string ConfigTree::dump() const {
  if (auto spliced = impl_->splice()) return std::move(*spliced);
  std::string out = impl_->emit();
  // What is written must read as this tree: yaml-cpp accepts some malformed
  // documents (a quote left open, a stray word) whose reading neither the
  // splice nor the emitter reproduces, and a file that now means something
  // else is worse than a refused write.
  try {
    const ConfigTree again = ConfigTree::parse(out, impl_->name);
    if (same_tree(again.impl_->root, impl_->root, impl_->format)) return out;
  } catch (const config_error&) {}
  throw config_error(fmt::format(
      "{}: cannot write the changed config so that it reads back as changed (its layout is one errshim does not "
      "reproduce); nothing was written: make the change by hand, or rewrite the file as plain block YAML or JSON",
      impl_->name));
}

ConfigKind ConfigTree::kind() const { return impl_->kind; }
void ConfigTree::set_kind(ConfigKind kind) { impl_->kind = kind; }
bool ConfigTree::same_values(const ConfigTree& other) const {
  return impl_->format == other.impl_->format && same_tree(impl_->root, other.impl_->root, impl_->format);
}

ConfigTree::Format ConfigTree::format() const noexcept { return impl_->format; }
const std::string& ConfigTree::name() const noexcept { return impl_->name; }

std::vector<KeyPath> ConfigTree::find(std::string_view key) const {
  std::vector<KeyPath> out;
  KeyPath path;
  collect(impl_->root, key, path, out);
  return out;
}

std::optional<Value> ConfigTree::get(const KeyPath& path) const {
  const auto node = impl_->resolve(path);
  if (!node) return std::nullopt;
  return to_value(*node, impl_->format);
}

void ConfigTree::set(const KeyPath& path, const Value& value) {
  Impl& im = *impl_;
  if (path.empty()) throw config_error(fmt::format("{}: cannot set an empty key path", im.name));
  YAML::Node fresh = im.make_value(path, value);

  // Walk the existing part of the path. Every check that can fail happens
  // here, before the first change, so a refused set changes nothing.
  YAML::Node cur = im.root;
  std::size_t i = 0;
  for (; i + 1 < path.size(); ++i) {
    auto next = child(cur, path[i]);
    if (!next) break;
    if (next->IsScalar())
      throw config_error(fmt::format("{}: cannot set {}: {} is a scalar, not a mapping", im.name, to_string(path),
                                     to_string(prefix(path, i + 1))));
    // A null parent (`quantization_config: null`, or an empty value) is a
    // mapping not written yet; it becomes one.
    if (next->IsNull()) *next = YAML::Node(YAML::NodeType::Map);
    cur.reset(*next);  // rebinds; see Impl::resolve
  }
  const auto no_element = [&](std::size_t at) {
    return config_error(fmt::format("{}: cannot set {}: {} is a list without element {} (lists are not extended)",
                                    im.name, to_string(path), to_string(prefix(path, at)), path[at]));
  };
  if (i + 1 < path.size()) {
    if (cur.IsSequence()) throw no_element(i);
    for (; i + 1 < path.size(); ++i) {
      YAML::Node created(YAML::NodeType::Map);
      cur.force_insert(im.make_key(path[i]), created);
      cur.reset(created);
    }
  }

  const std::string& last = path.back();
  if (auto existing = child(cur, last)) {
    // A string replacing a quoted string stays quoted, as its author wrote it.
    if (value.type == Value::Type::string && existing->IsScalar() && existing->Tag() == "!") fresh.SetTag("!");
    *existing = fresh;  // replaces the value in place: the key keeps its position and spelling
  } else if (cur.IsSequence()) {
    throw no_element(path.size() - 1);
  } else {
    cur.force_insert(im.make_key(last), fresh);  // a new key goes last in its mapping
  }
}

void ConfigTree::remove(const KeyPath& path) {
  Impl& im = *impl_;
  if (path.empty()) throw config_error(fmt::format("{}: cannot remove an empty key path", im.name));
  auto parent = im.resolve(prefix(path, path.size() - 1));
  if (!parent) return;
  if (parent->IsSequence()) {
    if (child(*parent, path.back()))
      throw config_error(fmt::format("{}: cannot remove {}: removing a list element would renumber the ones after it",
                                     im.name, to_string(path)));
    return;
  }
  if (!parent->IsMap()) return;
  std::optional<YAML::Node> key;
  for (auto it = parent->begin(); it != parent->end() && !key; ++it)
    if (it->first.IsScalar() && it->first.Scalar() == path.back()) key = it->first;
  // By node identity, outside the loop: removing invalidates the iterator.
  if (key) parent->remove(*key);
}

std::unique_ptr<ConfigAccess> ConfigTree::clone() const { return std::make_unique<ConfigTree>(*this); }

void ConfigTree::assign_from(const ConfigAccess& other) {
  const auto* tree = dynamic_cast<const ConfigTree*>(&other);
  if (!tree)
    throw config_error(fmt::format("{}: cannot take the state of a config that is not a ConfigTree", impl_->name));
  *this = *tree;  // copy assignment clones: *this never shares nodes with `other`
}

}  // namespace errshim
