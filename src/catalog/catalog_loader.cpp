#include "catalog_loader.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <istream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <streambuf>
#include <type_traits>

#include <boost/regex.hpp>
#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include "fix_values.hpp"
#include "json.hpp"
#include "template.hpp"
#include "vocabulary.hpp"
#include "yaml_scalar.hpp"
#include "context_internal.hpp"

namespace errshim::detail {
namespace {

// Limits on a catalog file, so a wrong or hostile file costs little to refuse.
// The shipped catalog is ~0.5 MiB and nests 7 levels deep.
constexpr std::size_t kMaxCatalogBytes = 16u << 20;
constexpr int kMaxNesting = 64;

constexpr std::array<std::string_view, 4> kFileKeys = {"schema", "library", "defaults", "entries"};
constexpr std::array<std::string_view, 22> kEntryKeys = {
    "id",          "template", "pattern",  "captures",   "capture_patterns", "source",      "also_at", "library",
    "error_class", "kind",     "severity", "cause",      "trigger",          "remediation", "tags",    "examples",
    "priority",    "unless",   "imported", "applies_to", "preflight",        "generated"};
constexpr std::array<std::string_view, 5> kSourceKeys = {"repo", "path", "line", "commit", "symbol"};
constexpr std::array<std::string_view, 2> kRemediationKeys = {"text", "fix"};
constexpr std::array<std::string_view, 10> kFixKeys = {"set",      "remove",    "action", "safety", "reason",
                                                       "requires", "conflicts", "config", "create", "vocabulary"};
constexpr std::array<std::string_view, 3> kExampleKeys = {"match", "no_match", "preflight"};
constexpr std::array<std::string_view, 3> kMatchExampleKeys = {"text", "captures", "context"};
constexpr std::array<std::string_view, 8> kKinds = {
    "validation", "unsupported-feature", "shape-mismatch", "dtype-mismatch",
    "resource",   "missing-dependency",  "configuration",  "internal"};
constexpr std::array<std::string_view, 4> kSeverities = {"info", "warning", "error", "fatal"};

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& set, std::string_view s) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

template <std::size_t N>
std::string one_of(const std::array<std::string_view, N>& set) {
  return fmt::format("{}", fmt::join(set, ", "));
}

// ------------------------------------------------------------ the document
//
// The first YAML document of a file, built in one pass over yaml-cpp's parse
// events. yaml-cpp's own YAML::Node tree (YAML::Load) cost more than the
// parse itself (a shared_ptr'd node each, a key converted to a new string at
// every lookup), and the screening below needed a parse of its own before
// it; this keeps only what the reader asks of a node, in one vector.
//
// It answers as YAML::Node would for everything the reader uses: a missing
// key gives an empty handle, a lookup finds the first pair whose key is a
// scalar equal to it (repeated keys stay visible to iteration), a null node is
// neither a scalar nor a collection and reads as "", and marks are the
// events' marks, which is what YAML::Load gives its nodes.
//
// While building, it refuses what a catalog file never needs and would make
// reading it expensive: an alias is refused at once (yaml-cpp shares aliased
// nodes, but reading them expands every reference, so a few lines of nested
// aliases, "billion laughs", would cost exponential time; catalog entries are
// meant to be read on their own, so nothing is lost), and nesting is bounded
// so no reader recurses deeply.

// A file refused while it is parsed, and where.
struct Refused {
  YAML::Mark mark;
  std::string message;
};

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

struct Doc {
  enum class Kind : std::uint8_t { null, scalar, sequence, map };
  struct Item {
    Kind kind = Kind::null;
    bool non_specific = false;  // tagged "!": a quoted scalar, always text (to_value)
    YAML::Mark mark;
    std::uint32_t first = kNone;  // first child; a map's children alternate key, value
    std::uint32_t next = kNone;  // next sibling
    std::uint32_t count = 0;  // children
    std::string text;  // a scalar's value
  };
  std::vector<Item> items;
  std::uint32_t root = kNone;
};

class DocBuilder final : public YAML::EventHandler {
 public:
  explicit DocBuilder(Doc& doc) : doc_(doc) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { add(Doc::Kind::null, mark, {}); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw Refused{mark, "aliases are not allowed in catalog files (write the value out in full)"};
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t, const std::string& value) override {
    doc_.items[add(Doc::Kind::scalar, mark, tag)].text = value;
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    enter(add(Doc::Kind::sequence, mark, tag), mark);
  }
  void OnSequenceEnd() override { open_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t, YAML::EmitterStyle::value) override {
    enter(add(Doc::Kind::map, mark, tag), mark);
  }
  void OnMapEnd() override { open_.pop_back(); }

 private:
  struct Open {
    std::uint32_t index;
    std::uint32_t last = kNone;  // its last child so far
  };

  std::uint32_t add(Doc::Kind kind, const YAML::Mark& mark, const std::string& tag) {
    const auto i = static_cast<std::uint32_t>(doc_.items.size());
    Doc::Item& item = doc_.items.emplace_back();
    item.kind = kind;
    item.non_specific = tag == "!";
    item.mark = mark;
    if (open_.empty()) {
      if (doc_.root == kNone) doc_.root = i;
    } else {
      Open& parent = open_.back();
      (parent.last == kNone ? doc_.items[parent.index].first : doc_.items[parent.last].next) = i;
      parent.last = i;
      ++doc_.items[parent.index].count;
    }
    return i;
  }
  void enter(std::uint32_t index, const YAML::Mark& mark) {
    if (open_.size() >= static_cast<std::size_t>(kMaxNesting))
      throw Refused{mark, fmt::format("nested more than {} levels deep; catalog files are not", kMaxNesting)};
    open_.push_back({index});
  }

  Doc& doc_;
  std::vector<Open> open_;
};

struct NodePair;

// A node of a Doc, or no node (a key that is not there). Cheap to copy.
class Node {
 public:
  Node() = default;
  Node(const Doc* doc, std::uint32_t index) : doc_(index == kNone ? nullptr : doc), index_(index) {}

  explicit operator bool() const { return doc_ != nullptr; }
  bool is_map() const { return is(Doc::Kind::map); }
  bool is_seq() const { return is(Doc::Kind::sequence); }
  bool is_scalar() const { return is(Doc::Kind::scalar); }
  bool is_null() const { return is(Doc::Kind::null); }
  bool non_specific() const { return doc_ && item().non_specific; }
  // A scalar's text; "" for anything else.
  const std::string& scalar() const {
    static const std::string none;
    return is_scalar() ? item().text : none;
  }
  YAML::Mark mark() const { return doc_ ? item().mark : YAML::Mark(); }
  // Items of a sequence, pairs of a map.
  std::size_t size() const { return !doc_ ? 0 : is_map() ? item().count / 2 : item().count; }

  // The value of the first pair whose key is the scalar `key`.
  Node operator[](std::string_view key) const {
    if (!is_map()) return {};
    for (std::uint32_t k = item().first; k != kNone; k = doc_->items[doc_->items[k].next].next) {
      const Doc::Item& ki = doc_->items[k];
      if (ki.kind == Doc::Kind::scalar && ki.text == key) return {doc_, ki.next};
    }
    return {};
  }

  // Iteration: a sequence's items, a map's key/value pairs.
  template <class T>
  class Range;
  Range<Node> items() const;
  Range<NodePair> pairs() const;

 private:
  const Doc::Item& item() const { return doc_->items[index_]; }
  bool is(Doc::Kind k) const { return doc_ && item().kind == k; }

  const Doc* doc_ = nullptr;
  std::uint32_t index_ = kNone;
};

struct NodePair {
  Node first, second;
};

template <class T>
class Node::Range {
 public:
  class Iterator {
   public:
    Iterator(const Doc* doc, std::uint32_t at) : doc_(doc), at_(at) {}
    T operator*() const {
      if constexpr (std::is_same_v<T, NodePair>)
        return {Node(doc_, at_), Node(doc_, doc_->items[at_].next)};
      else
        return Node(doc_, at_);
    }
    Iterator& operator++() {
      at_ = doc_->items[at_].next;
      if constexpr (std::is_same_v<T, NodePair>) at_ = doc_->items[at_].next;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return at_ != o.at_; }

   private:
    const Doc* doc_;
    std::uint32_t at_;
  };
  Range(const Doc* doc, std::uint32_t first) : doc_(doc), first_(first) {}
  Iterator begin() const { return {doc_, first_}; }
  Iterator end() const { return {doc_, kNone}; }

 private:
  const Doc* doc_;
  std::uint32_t first_;
};

Node::Range<Node> Node::items() const { return {doc_, is_seq() ? item().first : kNone}; }
Node::Range<NodePair> Node::pairs() const { return {doc_, is_map() ? item().first : kNone}; }

// A read-only istream over text the caller keeps alive, so yaml-cpp reads
// the catalog without a copy of it.
class ViewBuf final : public std::streambuf {
 public:
  explicit ViewBuf(std::string_view text) {
    // streambuf wants char*; nothing writes through it (no put area, and
    // putback of an unchanged character only moves the pointer back).
    char* p = const_cast<char*>(text.data());
    setg(p, p, p + text.size());
  }
};

// Collects problems with positions for one file and one entry at a time.
class Reader {
 public:
  Reader(const std::string& file, std::vector<Problem>& problems) : file_(file), problems_(problems) {}

  void set_entry(std::string id) { entry_ = std::move(id); }
  std::size_t problem_count() const { return problems_.size(); }

  Location at(Node node) const {
    const YAML::Mark m = node.mark();
    return {file_, m.line + 1, m.column + 1};
  }
  Location at(const YAML::Mark& m) const { return {file_, m.line + 1, m.column + 1}; }

  void problem(const Location& where, std::string message) { problems_.push_back({where, entry_, std::move(message)}); }
  void problem(Node node, std::string message) { problem(at(node), std::move(message)); }

  // Unknown and repeated keys of a mapping. YAML parsers accept two equal
  // keys silently (a lookup sees the first), which would hide a typo'd
  // copy-paste.
  template <std::size_t N>
  void check_keys(Node map, const std::array<std::string_view, N>& known, std::string_view what) {
    std::set<std::string> seen;
    for (const NodePair kv : map.pairs()) {
      const std::string key = kv.first.scalar();
      if (!seen.insert(key).second) problem(kv.first, fmt::format("{} key '{}' is given twice", what, key));
      if (contains(known, key)) continue;
      std::string hint;
      for (std::string_view k : known)
        if (edit_distance(key, k) <= 2) hint = fmt::format(" (did you mean '{}'?)", k);
      if (hint.empty()) hint = fmt::format(" (known keys: {})", one_of(known));
      problem(kv.first, fmt::format("unknown {} key '{}'{}", what, key, hint));
    }
  }

  bool expect_map(Node node, std::string_view what) {
    if (node.is_map()) return true;
    problem(node, fmt::format("{} must be a mapping", what));
    return false;
  }
  bool expect_seq(Node node, std::string_view what) {
    if (node.is_seq()) return true;
    problem(node, fmt::format("{} must be a list", what));
    return false;
  }

  std::optional<std::string> string(Node node, std::string_view what) {
    if (node.is_scalar()) return node.scalar();
    problem(node, fmt::format("{} must be text", what));
    return std::nullopt;
  }

  std::optional<long long> integer(Node node, std::string_view what) {
    if (node.is_scalar()) {
      const std::string& s = node.scalar();
      std::size_t used = 0;
      try {
        const long long v = std::stoll(s, &used);
        if (used == s.size()) return v;
      } catch (const std::exception&) {}
    }
    problem(node, fmt::format("{} must be a whole number, got '{}'", what, node.is_scalar() ? node.scalar() : "?"));
    return std::nullopt;
  }

  // A required text key: reports a missing or empty one at the entry.
  std::string required_text(Node map, const char* key) {
    const Node n = map[key];
    if (!n) {
      problem(map, fmt::format("missing required key '{}'", key));
      return {};
    }
    auto s = string(n, key);
    if (s && s->empty()) problem(n, fmt::format("'{}' must not be empty", key));
    return s.value_or("");
  }

  std::vector<std::string> string_list(Node node, std::string_view what) {
    std::vector<std::string> out;
    if (!expect_seq(node, what)) return out;
    for (const Node item : node.items())
      if (auto s = string(item, what)) out.push_back(*s);
    return out;
  }

 private:
  const std::string& file_;
  std::vector<Problem>& problems_;
  std::string entry_;
};

// A plain YAML scalar resolves by the core schema (yaml_scalar.hpp); a
// quoted one is always a string, so `"false"` stays text.
Value to_value(Node node) {
  if (node.non_specific()) return {Value::Type::string, node.scalar()};
  return detail::resolve_plain(node.scalar());
}

std::vector<std::pair<std::string, Value>> read_assignments(Reader& r, Node node, std::string_view what) {
  std::vector<std::pair<std::string, Value>> out;
  if (!r.expect_map(node, what)) return out;
  for (const NodePair kv : node.pairs()) {
    if (!kv.second.is_scalar()) {
      r.problem(kv.second, fmt::format("{}: the value of '{}' must be a scalar", what, kv.first.scalar()));
      continue;
    }
    out.emplace_back(kv.first.scalar(), to_value(kv.second));
  }
  return out;
}

// Fix keys that name something, and capture references the entry can fill,
// checked when the catalog loads: a bad one would otherwise surface only
// when the step is chosen. (Whether a capture is tight enough to feed a
// value, and literal values, are lint's: lint.cpp.)
void check_fix_keys(Reader& r, Node node, const Entry& e) {
  for (const char* section : {"set", "requires", "conflicts", "remove"}) {
    const Node list = node[section];
    if (!list) continue;
    std::vector<Node> keys;
    if (list.is_map())
      for (const NodePair kv : list.pairs()) keys.push_back(kv.first);
    else if (list.is_seq())
      for (const Node item : list.items()) keys.push_back(item);
    for (const Node k : keys) {
      if (!k.is_scalar()) continue;
      const std::string problem = key_path_problem(k.scalar());
      if (!problem.empty())
        r.problem(k, fmt::format("fix.{}: {}; name a key or a dotted path such as 'generation_config.num_beams'",
                                 section, problem));
    }
  }
  for (const char* section : {"set", "requires"}) {
    const Node map = node[section];
    if (!map || !map.is_map()) continue;
    for (const NodePair kv : map.pairs()) {
      if (!kv.second.is_scalar()) continue;
      const std::string key = kv.first.scalar();
      std::vector<CaptureUse> uses;
      try {
        uses = capture_uses(to_value(kv.second));
      } catch (const config_error& err) {
        r.problem(kv.second, fmt::format("fix.{}.{}: {}", section, key, err.what()));
        continue;
      }
      if (e.pattern.empty()) continue;  // the pattern's own problem is reported
      for (const CaptureUse& use : uses)
        if (std::find(e.capture_names.begin(), e.capture_names.end(), use.name) == e.capture_names.end())
          r.problem(
              kv.second,
              fmt::format("fix.{}.{} uses capture '{}', which the pattern does not have (it has: {})", section, key,
                          use.name,
                          e.capture_names.empty() ? "none" : fmt::format("{}", fmt::join(e.capture_names, ", "))));
    }
  }
}

// `config` (the kinds of config the fix applies to), `create` (true, or the
// keys it may create) and `vocabulary` (key -> vocabulary its value is
// written in), each checked against what errshim knows.
void read_fix_scope(Reader& r, Node node, Fix& fix) {
  const auto fix_keys = [&] {
    std::vector<std::string> keys;
    for (const auto* list : {&fix.set, &fix.requires_set})
      for (const auto& kv : *list) keys.push_back(kv.first);
    return keys;
  };
  if (const Node kinds = node["config"]) {
    std::vector<Node> items;
    if (kinds.is_scalar())
      items.push_back(kinds);
    else if (r.expect_seq(kinds, "fix.config"))
      for (const Node item : kinds.items()) items.push_back(item);
    for (const Node item : items) {
      const auto s = r.string(item, "fix.config");
      if (!s) continue;
      const auto k = parse_config_kind(*s);
      if (!k || *k == ConfigKind::unknown)
        r.problem(item, fmt::format("fix.config: unknown config kind '{}' (one of: model-config, generation-config, "
                                    "from-pretrained-kwargs, generate-kwargs, candle-config, host-config)",
                                    *s));
      else
        fix.config_kinds.push_back(*s);
    }
  }
  if (const Node create = node["create"]) {
    if (create.is_scalar() && !create.non_specific() && (create.scalar() == "true" || create.scalar() == "false")) {
      if (create.scalar() == "true") fix.create = {"*"};
    } else if (create.is_seq()) {
      const std::vector<std::string> keys = fix_keys();
      for (const Node item : create.items()) {
        const auto s = r.string(item, "fix.create");
        if (!s) continue;
        if (std::find(keys.begin(), keys.end(), *s) == keys.end())
          r.problem(item, fmt::format("fix.create: '{}' is not a key this fix sets (it sets: {})", *s,
                                      keys.empty() ? "none" : fmt::format("{}", fmt::join(keys, ", "))));
        else
          fix.create.push_back(*s);
      }
    } else {
      r.problem(create, "fix.create must be true, false or a list of the keys the fix may create");
    }
  }
  if (const Node vocabulary = node["vocabulary"]) {
    const std::vector<std::string> keys = fix_keys();
    for (auto& [key, v] : read_assignments(r, vocabulary, "fix.vocabulary")) {
      const Node at = vocabulary[key];
      if (std::find(keys.begin(), keys.end(), key) == keys.end())
        r.problem(at, fmt::format("fix.vocabulary: '{}' is not a key this fix sets", key));
      else if (v.type != Value::Type::string || !parse_vocabulary(v.text))
        r.problem(at, fmt::format("fix.vocabulary.{}: unknown vocabulary '{}' (one of: {})", key, v.text,
                                  known_vocabularies()));
      else
        fix.vocabulary.emplace_back(key, v);
    }
  }
}

std::optional<Fix> read_fix(Reader& r, Node node, const Entry& e) {
  if (!r.expect_map(node, "fix")) return std::nullopt;
  r.check_keys(node, kFixKeys, "fix");
  Fix fix;
  if (node["set"]) fix.set = read_assignments(r, node["set"], "fix.set");
  if (node["remove"]) fix.remove = r.string_list(node["remove"], "fix.remove");
  if (node["action"])
    if (auto s = r.string(node["action"], "fix.action")) fix.action = *s;
  if (node["reason"])
    if (auto s = r.string(node["reason"], "fix.reason")) fix.reason = *s;
  if (node["requires"]) fix.requires_set = read_assignments(r, node["requires"], "fix.requires");
  if (node["conflicts"]) fix.conflicts = read_assignments(r, node["conflicts"], "fix.conflicts");
  const Node safety = node["safety"];
  if (!safety) {
    r.problem(node, "fix has no 'safety' (one of: safe, slower, changes-output, manual)");
  } else if (auto s = r.string(safety, "fix.safety")) {
    if (auto parsed = parse_safety(*s))
      fix.safety = *parsed;
    else
      r.problem(safety, fmt::format("unknown safety '{}' (one of: safe, slower, changes-output, manual)", *s));
  }
  if (fix.empty() && fix.safety != Safety::manual)
    r.problem(node, "fix changes nothing: give 'set', 'remove' or 'action' (or make it safety: manual)");
  read_fix_scope(r, node, fix);
  check_fix_keys(r, node, e);
  return fix;
}

SourcePin read_pin(Reader& r, Node node, const SourcePin& defaults, bool need_line) {
  SourcePin pin = defaults;
  if (!r.expect_map(node, "source")) return pin;
  r.check_keys(node, kSourceKeys, "source");
  if (node["repo"]) pin.repo = r.string(node["repo"], "source.repo").value_or("");
  if (node["path"]) pin.path = r.string(node["path"], "source.path").value_or("");
  if (node["commit"]) pin.commit = r.string(node["commit"], "source.commit").value_or("");
  if (node["symbol"]) pin.symbol = r.string(node["symbol"], "source.symbol").value_or("");
  if (node["line"] && !node["line"].is_null()) {
    if (auto v = r.integer(node["line"], "source.line")) {
      if (*v <= 0) r.problem(node["line"], fmt::format("source.line must be positive, got {}", *v));
      pin.line = static_cast<int>(*v);
    }
  }
  if (pin.path.empty()) r.problem(node, "source has no 'path'");
  if (pin.repo.empty()) r.problem(node, "source has no 'repo' (give it here or in the file's defaults)");
  if (pin.commit.empty()) r.problem(node, "source has no 'commit' (give it here or in the file's defaults)");
  if (need_line && pin.line == 0 && pin.symbol.empty())
    r.problem(node, "source needs a 'line' or, where only the function is known, a 'symbol'");
  return pin;
}

void read_examples(Reader& r, Node node, Entry& e) {
  if (!r.expect_map(node, "examples")) return;
  r.check_keys(node, kExampleKeys, "examples");
  const Node match = node["match"];
  if (!match || !match.is_seq() || match.size() == 0) {
    r.problem(match ? match : node, "examples.match must list at least one message this entry explains");
  } else {
    for (const Node item : match.items()) {
      MatchExample ex;
      ex.where = r.at(item);
      if (item.is_scalar()) {
        ex.text = item.scalar();
      } else if (r.expect_map(item, "a match example")) {
        r.check_keys(item, kMatchExampleKeys, "match example");
        if (!item["text"]) {
          r.problem(item, "match example has no 'text'");
          continue;
        }
        ex.text = r.string(item["text"], "match example text").value_or("");
        if (const Node caps = item["captures"]) {
          for (auto& [name, value] : read_assignments(r, caps, "match example captures")) {
            if (std::find(e.capture_names.begin(), e.capture_names.end(), name) == e.capture_names.end())
              r.problem(caps, fmt::format("match example expects capture '{}', which the pattern does not have "
                                          "(it has: {})",
                                          name, fmt::join(e.capture_names, ", ")));
            ex.captures.push_back({name, value.text});
          }
        }
        if (const Node ctx = item["context"])
          for (auto& [key, value] : read_assignments(r, ctx, "match example context"))
            ex.context.values[key] = value.text;
      } else {
        continue;
      }
      e.match_examples.push_back(std::move(ex));
    }
  }
  if (const Node no = node["no_match"]) {
    if (r.expect_seq(no, "examples.no_match"))
      for (const Node item : no.items())
        if (auto s = r.string(item, "a no_match example")) e.no_match_examples.push_back({*s, r.at(item)});
  }
}

// Named groups of a raw pattern, in order, so captures work the same way as
// for templates.
std::vector<std::string> named_groups(const std::string& pattern) {
  std::vector<std::string> names;
  static const boost::regex group_re(R"(\(\?(?:<|P<|')([A-Za-z_][A-Za-z0-9_]*)[>'])");
  for (boost::sregex_iterator it(pattern.begin(), pattern.end(), group_re), end; it != end; ++it) {
    std::string n = (*it)[1].str();
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(std::move(n));
  }
  return names;
}

void read_pattern(Reader& r, Node map, Entry& e) {
  const Node tmpl = map["template"];
  const Node pattern = map["pattern"];
  if (tmpl && pattern) {
    r.problem(pattern, "give either 'template' or 'pattern', not both");
    return;
  }
  if (!tmpl && !pattern) {
    r.problem(map, "missing required key 'template' (the upstream message) or 'pattern' (a raw regex)");
    return;
  }
  if (pattern) {
    e.pattern = r.string(pattern, "pattern").value_or("");
    if (map["captures"])
      r.problem(map["captures"], "'captures' names template placeholders; a pattern names its groups itself");
    e.capture_names = named_groups(e.pattern);
    return;
  }
  e.template_text = r.string(tmpl, "template").value_or("");
  std::vector<std::string> names;
  if (map["captures"]) names = r.string_list(map["captures"], "captures");
  std::map<std::string, std::string> overrides;
  if (const Node cp = map["capture_patterns"]) {
    for (auto& [name, value] : read_assignments(r, cp, "capture_patterns")) overrides[name] = value.text;
  }
  try {
    CompiledTemplate c = compile_template(e.template_text, names, overrides);
    e.pattern = std::move(c.regex);
    e.capture_names = std::move(c.capture_names);
  } catch (const template_error& err) {
    r.problem(tmpl, fmt::format("template (at character {}): {}", err.offset + 1, err.what()));
  }
}

// applies_to: {transformers: ">=4.54", device: metal, backend: [cuda, rocm]}
std::vector<ScopeCondition> read_scope(Reader& r, Node node) {
  std::vector<ScopeCondition> scope;
  if (!r.expect_map(node, "applies_to")) return scope;
  for (const NodePair kv : node.pairs()) {
    ScopeCondition c;
    c.key = kv.first.scalar();
    if (kv.second.is_seq()) {
      c.any_of = r.string_list(kv.second, "applies_to values");
    } else if (auto s = r.string(kv.second, "applies_to value")) {
      if (!s->empty() && std::string_view("<>=!").find((*s)[0]) != std::string_view::npos) {
        c.range = *s;
        try {
          version_in_range("0", c.range);
        } catch (const std::invalid_argument& err) {
          r.problem(kv.second, fmt::format("applies_to.{}: {}", c.key, err.what()));
        }
      } else {
        c.any_of.push_back(*s);
      }
    }
    scope.push_back(std::move(c));
  }
  return scope;
}

// preflight: {kv_cache_enabled: true}, or a list of such maps (any of them);
// a value may be a list (any of) or a test ({gt: 1}), `model` is a regex on
// the context's model. The scoped form puts the keys under `when:` and
// beside them says where they are read and for which models and versions:
//   {when: {num_beams: 1}, config: generation, model_type: [t5], applies_to: {transformers: ">=4.54"}}
constexpr std::array<std::string_view, 6> kPreflightKeys = {"when",          "config", "model_type",
                                                            "architectures", "model",  "applies_to"};
constexpr std::array<std::string_view, 3> kPreflightSources = {"any", "model", "generation"};
constexpr std::array<std::string_view, 6> kPreflightOps = {"not", "gt", "ge", "lt", "le", "not_multiple_of"};
constexpr std::array<std::string_view, 2> kPreflightExampleLists = {"fires", "quiet"};
constexpr std::array<std::string_view, 4> kPreflightExampleKeys = {"config", "model_config", "generation_config",
                                                                   "context"};

// One key of a condition: a value, a list of values, or a test.
void read_preflight_key(Reader& r, const std::string& key, Node node, PreflightCondition& c) {
  if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos) {
    r.problem(node, fmt::format("preflight key '{}' is not a key or a dotted path (write it as 'a.b')", key));
    return;
  }
  if (node.is_map()) {
    if (node.size() != 1) {
      r.problem(node, fmt::format("preflight.{}: a test is a mapping of one operator ({}), e.g. {{gt: 1}}", key,
                                  one_of(kPreflightOps)));
      return;
    }
    const NodePair kv = *node.pairs().begin();
    const std::string op = kv.first.scalar();
    if (!contains(kPreflightOps, op)) {
      r.problem(kv.first, fmt::format("preflight.{}: unknown test '{}' (one of: {})", key, op, one_of(kPreflightOps)));
      return;
    }
    PreflightTest t;
    t.key = key;
    if (op == "not") {
      t.op = PreflightTest::Op::not_in;
      if (kv.second.is_seq()) {
        for (const Node v : kv.second.items()) {
          if (v.is_scalar())
            t.values.push_back(to_value(v));
          else
            r.problem(v, fmt::format("preflight.{}.not: each value must be a scalar", key));
        }
      } else if (kv.second.is_scalar()) {
        t.values.push_back(to_value(kv.second));
      }
      if (t.values.empty())
        r.problem(kv.second, fmt::format("preflight.{}.not needs a value or a list of values", key));
    } else {
      t.op = op == "gt"   ? PreflightTest::Op::gt
             : op == "ge" ? PreflightTest::Op::ge
             : op == "lt" ? PreflightTest::Op::lt
             : op == "le" ? PreflightTest::Op::le
                          : PreflightTest::Op::not_multiple_of;
      const Value v = kv.second.is_scalar() ? to_value(kv.second) : Value{};
      const bool number = v.type == Value::Type::integer || v.type == Value::Type::number;
      if (!number && (v.type != Value::Type::string || v.text.empty()))
        r.problem(kv.second, fmt::format("preflight.{}.{} needs a number or the name of another config key, got '{}'",
                                         key, op, kv.second.scalar()));
      else if (op == "not_multiple_of" && number && (v.type != Value::Type::integer || v.text == "0"))
        r.problem(kv.second,
                  fmt::format("preflight.{}.not_multiple_of needs a positive integer, got '{}'", key, v.text));
      t.values.push_back(v);
    }
    c.tests.push_back(std::move(t));
    return;
  }
  std::vector<Value> values;
  if (node.is_seq()) {
    for (const Node v : node.items()) {
      if (v.is_scalar())
        values.push_back(to_value(v));
      else
        r.problem(v, fmt::format("preflight.{}: each value must be a scalar", key));
    }
  } else if (node.is_scalar()) {
    values.push_back(to_value(node));
  }
  if (values.empty())
    r.problem(node, fmt::format("preflight.{} needs a value, a list of values or a test such as {{not: [...]}}", key));
  c.keys.emplace_back(key, std::move(values));
}

std::string read_preflight_model(Reader& r, Node node) {
  std::string model = r.string(node, "preflight.model").value_or("");
  try {
    boost::regex check(model, boost::regex::perl | boost::regex::icase);
  } catch (const boost::regex_error& e) {
    r.problem(node, fmt::format("preflight.model '{}' does not compile: {}", model, e.what()));
  }
  return model;
}

std::vector<std::string> one_or_list(Reader& r, Node node, std::string_view what) {
  if (node.is_scalar()) return {node.scalar()};
  return r.string_list(node, what);
}

std::vector<PreflightCondition> read_preflight(Reader& r, Node node) {
  std::vector<PreflightCondition> out;
  std::vector<Node> maps;
  if (node.is_seq())
    for (const Node item : node.items()) maps.push_back(item);
  else
    maps.push_back(node);
  for (Node m : maps) {
    if (!r.expect_map(m, "a preflight condition")) continue;
    PreflightCondition c;
    const std::size_t problems_before = r.problem_count();
    if (const Node when = m["when"]) {
      r.check_keys(m, kPreflightKeys, "preflight");
      if (r.expect_map(when, "preflight.when"))
        for (const NodePair kv : when.pairs()) read_preflight_key(r, kv.first.scalar(), kv.second, c);
      if (const Node kind = m["config"]) {
        const std::string k = kind.scalar();
        if (!contains(kPreflightSources, k))
          r.problem(kind, fmt::format("preflight.config '{}' is not a config kind (one of: {})", k,
                                      one_of(kPreflightSources)));
        c.config = k == "model"        ? PreflightSource::model
                   : k == "generation" ? PreflightSource::generation
                                       : PreflightSource::any;
      }
      if (const Node t = m["model_type"]) c.model_types = one_or_list(r, t, "preflight.model_type");
      if (const Node a = m["architectures"]) c.architectures = one_or_list(r, a, "preflight.architectures");
      if (const Node n = m["model"]) c.model = read_preflight_model(r, n);
      if (const Node s = m["applies_to"]) c.applies_to = read_scope(r, s);
    } else {
      for (const NodePair kv : m.pairs()) {
        const std::string key = kv.first.scalar();
        if (key == "model")
          c.model = read_preflight_model(r, kv.second);
        else
          read_preflight_key(r, key, kv.second, c);
      }
    }
    if (c.keys.empty() && c.tests.empty() && r.problem_count() == problems_before)
      r.problem(m, "a preflight condition needs at least one config key (what value causes the error)");
    out.push_back(std::move(c));
  }
  return out;
}

// An example config, kept as JSON text (ConfigTree reads it back).
void append_json(Node node, detail::JsonWriter& w, int depth) {
  if (depth > kMaxNesting) return;  // the document builder bounds nesting already
  if (node.is_map()) {
    w.begin_object();
    for (const NodePair kv : node.pairs()) {
      w.key(kv.first.scalar());
      append_json(kv.second, w, depth + 1);
    }
    w.end_object();
  } else if (node.is_seq()) {
    w.begin_array();
    for (const Node v : node.items()) append_json(v, w, depth + 1);
    w.end_array();
  } else if (!node.is_scalar()) {
    w.null();
  } else {
    Value v = to_value(node);
    // YAML spellings JSON lacks: "+1", and floats such as ".5" or "1e3" in plain form.
    if (v.type == Value::Type::integer && v.text.front() == '+') v.text.erase(0, 1);
    if (v.type == Value::Type::number) v.text = fmt::format("{}", std::strtod(v.text.c_str(), nullptr));
    detail::write_json(w, v);
  }
}

// examples.preflight: {fires: [...], quiet: [...]}, each item a mapping of
// config / model_config / generation_config (the config, as YAML) and context.
std::vector<PreflightExample> read_preflight_examples(Reader& r, Node node) {
  std::vector<PreflightExample> out;
  if (!r.expect_map(node, "examples.preflight")) return out;
  r.check_keys(node, kPreflightExampleLists, "examples.preflight");
  for (const std::string_view list : kPreflightExampleLists) {
    const Node items = node[std::string(list)];
    if (!items) continue;
    if (!r.expect_seq(items, fmt::format("examples.preflight.{}", list))) continue;
    for (const Node item : items.items()) {
      if (!r.expect_map(item, fmt::format("an examples.preflight.{} item", list))) continue;
      r.check_keys(item, kPreflightExampleKeys, "preflight example");
      PreflightExample ex;
      ex.fires = list == "fires";
      ex.where = r.at(item);
      for (const auto& [key, text] : {std::pair<const char*, std::string*>{"config", &ex.config},
                                      {"model_config", &ex.model_config},
                                      {"generation_config", &ex.generation_config}}) {
        const Node cfg = item[key];
        if (!cfg) continue;
        if (!cfg.is_map()) {
          r.problem(cfg, fmt::format("preflight example {} must be a mapping (the config's keys and values)", key));
          continue;
        }
        detail::JsonWriter w(*text);
        append_json(cfg, w, 0);
      }
      if (!item["config"] && !item["model_config"] && !item["generation_config"])
        r.problem(item, "a preflight example needs a config: config, model_config or generation_config");
      if (const Node ctx = item["context"])
        for (auto& [key, value] : read_assignments(r, ctx, "preflight example context"))
          ex.context.values[key] = value.text;
      out.push_back(std::move(ex));
    }
  }
  return out;
}

bool valid_id(const std::string& id) {
  static const boost::regex id_re(R"([a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+)");
  return boost::regex_match(id, id_re);
}

std::optional<Entry> read_entry(Reader& r, Node map, const std::string& library, const SourcePin& defaults) {
  r.set_entry("");
  if (!r.expect_map(map, "an entry")) return std::nullopt;
  const std::size_t before = r.problem_count();
  Entry e;
  e.where = r.at(map);
  e.id = r.required_text(map, "id");
  r.set_entry(e.id);
  if (!e.id.empty() && !valid_id(e.id))
    r.problem(map["id"], fmt::format("id '{}' must be dotted lower-case words, like 'candle.sdpa.head_dim'", e.id));
  r.check_keys(map, kEntryKeys, "entry");
  read_pattern(r, map, e);

  if (const Node src = map["source"])
    e.source = read_pin(r, src, defaults, true);
  else
    r.problem(map, "missing required key 'source' (repo, path, line, commit of the upstream raise)");
  if (const Node also = map["also_at"]) {
    if (r.expect_seq(also, "also_at"))
      for (const Node item : also.items()) e.also_at.push_back(read_pin(r, item, e.source, true));
  }
  e.library = library;
  if (map["library"]) e.library = r.string(map["library"], "library").value_or(library);
  e.error_class = r.required_text(map, "error_class");
  e.kind = r.required_text(map, "kind");
  if (!e.kind.empty() && !contains(kKinds, e.kind))
    r.problem(map["kind"], fmt::format("unknown kind '{}' (one of: {})", e.kind, one_of(kKinds)));
  if (map["severity"]) {
    e.severity = r.string(map["severity"], "severity").value_or("error");
    if (!contains(kSeverities, e.severity))
      r.problem(map["severity"], fmt::format("unknown severity '{}' (one of: {})", e.severity, one_of(kSeverities)));
  }
  e.cause = r.required_text(map, "cause");
  e.trigger = r.required_text(map, "trigger");

  const Node rem = map["remediation"];
  if (!rem || !rem.is_seq() || rem.size() == 0) {
    r.problem(rem ? rem : map, "'remediation' must list at least one step, most likely to work first");
  } else {
    for (const Node step : rem.items()) {
      if (!r.expect_map(step, "a remediation step")) continue;
      r.check_keys(step, kRemediationKeys, "remediation");
      Remediation out;
      out.text = r.required_text(step, "text");
      if (step["fix"]) out.fix = read_fix(r, step["fix"], e);
      e.remediation.push_back(std::move(out));
    }
  }
  if (map["tags"]) e.tags = r.string_list(map["tags"], "tags");
  if (const Node ex = map["examples"])
    read_examples(r, ex, e);
  else
    r.problem(map, "missing required key 'examples' (at least one 'match' message)");
  if (map["priority"]) e.priority = static_cast<int>(r.integer(map["priority"], "priority").value_or(0));
  if (map["unless"]) e.unless = r.string_list(map["unless"], "unless");
  if (map["applies_to"]) e.applies_to = read_scope(r, map["applies_to"]);
  if (map["preflight"]) e.preflight = read_preflight(r, map["preflight"]);
  if (const Node ex = map["examples"]; ex && ex.is_map() && ex["preflight"])
    e.preflight_examples = read_preflight_examples(r, ex["preflight"]);
  if (map["imported"]) e.imported = to_value(map["imported"]).text == "true";
  // An extractor's entry (tools/extract): its text is not written by hand either.
  if (map["generated"] && to_value(map["generated"]).text == "true") e.imported = true;

  r.set_entry("");
  if (r.problem_count() != before) return std::nullopt;
  return e;
}

}  // namespace

std::vector<Entry> parse_catalog(std::string_view text, const std::string& file, std::vector<Problem>& problems) {
  std::vector<Entry> entries;
  Reader r(file, problems);
  if (text.size() > kMaxCatalogBytes) {
    r.problem(Location{file, 0, 0}, fmt::format("the file is {} bytes; a catalog file may hold at most {} MiB "
                                                "(split it into several files in one folder)",
                                                text.size(), kMaxCatalogBytes >> 20));
    return entries;
  }
  Doc doc;
  try {
    ViewBuf buf(text);
    std::istream in(&buf);
    YAML::Parser parser(in);
    DocBuilder builder(doc);
    parser.HandleNextDocument(builder);  // the first document, as YAML::Load reads it
  } catch (const Refused& e) {
    r.problem(r.at(e.mark), e.message);
    return entries;
  } catch (const YAML::Exception& e) {
    r.problem(r.at(e.mark), fmt::format("not valid YAML: {}", e.msg));
    return entries;
  }
  const Node root(&doc, doc.root);
  if (!root || root.is_null()) {
    r.problem(Location{file, 1, 1}, "the file is empty; a catalog file starts with 'schema: 1'");
    return entries;
  }
  if (!r.expect_map(root, "a catalog file")) return entries;
  r.check_keys(root, kFileKeys, "file");

  const Node schema = root["schema"];
  if (!schema) {
    r.problem(root, fmt::format("missing 'schema: {}' at the top of the file", kSchemaVersion));
    return entries;
  }
  if (auto v = r.integer(schema, "schema"); v && *v != kSchemaVersion) {
    r.problem(schema,
              fmt::format("schema {} is not supported by this errshim (it reads schema {})", *v, kSchemaVersion));
    return entries;
  }
  std::string library;
  if (root["library"]) library = r.string(root["library"], "library").value_or("");
  SourcePin defaults;
  if (const Node d = root["defaults"]; d && r.expect_map(d, "defaults")) {
    r.check_keys(d, kSourceKeys, "defaults");
    if (d["repo"]) defaults.repo = r.string(d["repo"], "defaults.repo").value_or("");
    if (d["commit"]) defaults.commit = r.string(d["commit"], "defaults.commit").value_or("");
  }
  const Node list = root["entries"];
  if (!list) {
    r.problem(root, "missing 'entries:' list");
    return entries;
  }
  if (!r.expect_seq(list, "entries")) return entries;

  entries.reserve(list.size());  // an Entry is large: growing the vector would move each several times
  std::map<std::string, Location> seen;
  for (const Node item : list.items()) {
    std::optional<Entry> e = read_entry(r, item, library, defaults);
    if (!e) continue;
    auto [it, fresh] = seen.emplace(e->id, e->where);
    if (!fresh) {
      r.set_entry(e->id);
      r.problem(e->where, fmt::format("duplicate id (first defined at {}:{})", it->second.line, it->second.column));
      r.set_entry("");
      continue;
    }
    entries.push_back(std::move(*e));
  }
  return entries;
}

}  // namespace errshim::detail
