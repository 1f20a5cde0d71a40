// ConfigTree on yaml-cpp, and the KeyPath spelling.
//
// What a parse/dump round trip keeps and loses (yaml-cpp keeps no more):
//   kept:  keys and their order, scalar spellings (`1.0`, `yes`, `0x1F`), and
//          whether a scalar was quoted, which is what decides its type;
//   lost:  comments, blank lines, flow style (YAML is written in block style),
//          single versus double quotes (quoted scalars come back double-quoted),
//          literal/folded blocks (written double-quoted with escapes), the
//          spelling of nulls (`~`, an empty value: written `null`), and anchors
//          (aliases are expanded at parse, see unshare()).
// JSON is written by write_json() below, not by yaml-cpp's emitter, which
// does not produce strict JSON.
//
// Paths: a list is entered with the element's index as a path part
// ("layers.0.kv_repeat"), so find() reports keys inside lists of mappings;
// an index itself is never a match. set() replaces an existing list element
// but never extends a list, and remove() refuses a list element (the later
// ones would be renumbered). set() turns a null parent into a mapping.
// A document with a repeated key is refused: a fix could not tell the copies apart.

#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include "errshim/config.hpp"
#include "chars.hpp"
#include "utf8.hpp"

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
    const std::string_view part = dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    // An empty part ("a..b", ".a", "") names nothing; say so rather than
    // address a key "" that no config means.
    if (part.empty()) throw config_error(fmt::format("key path '{}' has an empty part", dotted));
    out.emplace_back(part);
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
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

using detail::is_digit;

// YAML 1.2 core schema int and float, as catalog_loader.cpp reads the
// catalog, so a config value and a catalog value compare alike.
bool core_int(std::string_view s) {
  Scan c(s);
  c.eat_any("+-");
  return c.digits() > 0 && c.done();
}

bool core_float(std::string_view s) {
  Scan c(s);
  c.eat_any("+-");
  if (c.eat('.')) {
    if (c.digits() == 0) return false;
  } else {
    if (c.digits() == 0) return false;
    if (c.eat('.')) c.digits();
  }
  if (c.eat_any("eE")) {
    c.eat_any("+-");
    if (c.digits() == 0) return false;
  }
  return c.done();
}

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

bool core_true(std::string_view s) { return one_of(s, {"true", "True", "TRUE"}); }
bool core_false(std::string_view s) { return one_of(s, {"false", "False", "FALSE"}); }

// Whether some YAML reader (1.1 like PyYAML, or 1.2 like serde_yaml) would
// take this plain scalar for something other than a string. Errs towards
// yes: quoting a string needlessly never changes what it means.
bool plain_would_retype(std::string_view s) {
  if (s.empty()) return true;
  if (one_of(s, {"~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true",
                 "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "=", "<<"}))
    return true;
  std::string_view body = s;
  if (body.front() == '+' || body.front() == '-') body.remove_prefix(1);
  if (one_of(body, {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"})) return true;
  // Numbers in every base and with `_`, sexagesimals, and timestamps all
  // start with a digit (or `.digit`) and use only these characters.
  const bool numeric_start = !body.empty() && (is_digit(body[0]) || (body[0] == '.' && body.size() > 1 && is_digit(body[1])));
  return numeric_start && body.find_first_not_of("0123456789abcdefABCDEFoOxXtTzZ_.:+- ") == std::string_view::npos;
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
  if (core_true(s)) return {Value::Type::boolean, "true"};
  if (core_false(s)) return {Value::Type::boolean, "false"};
  if (core_int(s)) return {Value::Type::integer, s};
  if (core_float(s)) return {Value::Type::number, s};
  if (format == ConfigTree::Format::json && one_of(s, {"NaN", "Infinity", "-Infinity"})) return {Value::Type::number, s};
  return {Value::Type::string, s};
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
    const int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
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
std::string join_surrogate_escapes(std::string_view text) {
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
    if (json_ && !tag.empty() && tag != "?" && tag != "!") fail(n, fmt::format("YAML tag '{}' in a JSON document", tag));
    if (!writable_tag(tag)) fail(n, fmt::format("YAML tag '{}' cannot be written back; remove it or spell it as a plain '!name'", tag));
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
      if (key.IsScalar() && !seen.insert(key.Scalar()).second) fail(key, fmt::format("duplicate key '{}'", key.Scalar()));
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

void json_quote(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(ch)));
        else
          out += ch;  // UTF-8 passes through: JSON text is UTF-8
    }
  }
  out += '"';
}

// The layout of Python's json.dump(indent=2), which writes transformers'
// config files, so an untouched file comes back byte for byte.
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
        json_quote(out, it->first.Scalar());  // Checker and set() make every key a scalar
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
        json_quote(out, n.Scalar());
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

KeyPath prefix(const KeyPath& path, std::size_t n) { return KeyPath(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(n)); }

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

}  // namespace

// ---- ConfigTree -------------------------------------------------------------------

struct ConfigTree::Impl {
  YAML::Node root;  // always a mapping, and no node in it is shared (see unshare)
  Format format = Format::yaml;
  std::string name;

  Impl() = default;
  // YAML::Node copies are handles onto the same nodes; only a clone gives the
  // copy its own tree, so a fix tried on a copy leaves the original alone.
  Impl(const Impl& other) : root(YAML::Clone(other.root)), format(other.format), name(other.name) {}
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
  const std::string input = format == Format::json ? join_surrogate_escapes(text) : std::string(text);
  // YAML::Load would read the first document and drop the rest on dump, so a
  // second document is an error. It is looked for with the event parser, at
  // most twice: yaml-cpp 0.7's LoadAll never ends on some malformed input
  // ("{}," yields empty documents forever, allocating as it goes).
  DocumentStarts starts;
  YAML::Node root;
  try {
    std::istringstream in(input);
    YAML::Parser parser(in);
    for (int i = 0; i < 2 && parser.HandleNextDocument(starts); ++i) {
    }
    if (starts.documents > 0) root = YAML::Load(input);
  } catch (const YAML::Exception& e) {
    throw config_error(located(name, e.mark, e.msg));
  }
  if (starts.documents == 0) throw config_error(fmt::format("{}: the document is empty; a config must be a mapping", name));
  if (starts.documents > 1) throw config_error(located(name, starts.second, "more than one document; a config is one mapping"));
  if (!root.IsMap())
    throw config_error(located(name, root.Mark(), fmt::format("the document is {}; a config must be a mapping", kind_of(root))));
  Checker(name, format == Format::json).check(root);

  auto impl = std::make_unique<Impl>();
  impl->root = unshare(root);
  impl->format = format;
  impl->name = std::move(name);
  return ConfigTree(std::move(impl));
}

ConfigTree ConfigTree::load(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw config_error(fmt::format("{}: is a directory", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(fmt::format("{}: cannot open: {}", path.string(), std::error_code(errno, std::generic_category()).message()));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw config_error(fmt::format("{}: cannot read: {}", path.string(), std::error_code(errno, std::generic_category()).message()));
  return parse(text.str(), path.string());
}

std::string ConfigTree::dump() const {
  if (impl_->format == Format::json) {
    std::string out;
    write_json(out, impl_->root, 0);
    out += '\n';
    return out;
  }
  YAML::Emitter out;
  out.SetNullFormat(YAML::LowerNull);  // `null` reads alike in YAML 1.1 and 1.2, and matches JSON
  emit_yaml(out, impl_->root);
  if (!out.good()) throw config_error(fmt::format("{}: cannot write YAML: {}", impl_->name, out.GetLastError()));
  return std::string(out.c_str()) + "\n";
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
  if (!tree) throw config_error(fmt::format("{}: cannot take the state of a config that is not a ConfigTree", impl_->name));
  *this = *tree;  // copy assignment clones: *this never shares nodes with `other`
}

}  // namespace errshim
