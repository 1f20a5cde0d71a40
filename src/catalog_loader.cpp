#include "catalog_loader.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <boost/regex.hpp>
#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include "template.hpp"

namespace errshim::detail {
namespace {

// Limits on a catalog file, so a wrong or hostile file costs little to refuse.
// The shipped catalog is ~0.5 MiB and nests 7 levels deep.
constexpr std::size_t kMaxCatalogBytes = 16u << 20;
constexpr int kMaxNesting = 64;

constexpr std::array<std::string_view, 4> kFileKeys = {"schema", "library", "defaults", "entries"};
constexpr std::array<std::string_view, 21> kEntryKeys = {
    "id",      "template", "pattern",  "captures", "capture_patterns", "source",      "also_at", "library",
    "error_class", "kind", "severity", "cause",    "trigger",          "remediation", "tags",    "examples",
    "priority", "unless",  "imported", "applies_to", "preflight"};
constexpr std::array<std::string_view, 5> kSourceKeys = {"repo", "path", "line", "commit", "symbol"};
constexpr std::array<std::string_view, 2> kRemediationKeys = {"text", "fix"};
constexpr std::array<std::string_view, 7> kFixKeys = {"set", "remove", "action", "safety", "reason", "requires", "conflicts"};
constexpr std::array<std::string_view, 2> kExampleKeys = {"match", "no_match"};
constexpr std::array<std::string_view, 3> kMatchExampleKeys = {"text", "captures", "context"};
constexpr std::array<std::string_view, 8> kKinds = {"validation",         "unsupported-feature", "shape-mismatch",
                                                    "dtype-mismatch",     "resource",            "missing-dependency",
                                                    "configuration",      "internal"};
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

// Collects problems with positions for one file and one entry at a time.
class Reader {
 public:
  Reader(const std::string& file, std::vector<Problem>& problems) : file_(file), problems_(problems) {}

  void set_entry(std::string id) { entry_ = std::move(id); }
  std::size_t problem_count() const { return problems_.size(); }

  Location at(const YAML::Node& node) const {
    const YAML::Mark m = node.Mark();
    return {file_, m.line + 1, m.column + 1};
  }
  Location at(const YAML::Mark& m) const { return {file_, m.line + 1, m.column + 1}; }

  void problem(const Location& where, std::string message) {
    problems_.push_back({where, entry_, std::move(message)});
  }
  void problem(const YAML::Node& node, std::string message) { problem(at(node), std::move(message)); }

  // Unknown and repeated keys of a mapping. yaml-cpp keeps the last of two
  // equal keys silently, which would hide a typo'd copy-paste.
  template <std::size_t N>
  void check_keys(const YAML::Node& map, const std::array<std::string_view, N>& known, std::string_view what) {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) problem(kv.first, fmt::format("{} key '{}' is given twice", what, key));
      if (contains(known, key)) continue;
      std::string hint;
      for (std::string_view k : known)
        if (edit_distance(key, k) <= 2) hint = fmt::format(" (did you mean '{}'?)", k);
      if (hint.empty()) hint = fmt::format(" (known keys: {})", one_of(known));
      problem(kv.first, fmt::format("unknown {} key '{}'{}", what, key, hint));
    }
  }

  bool expect_map(const YAML::Node& node, std::string_view what) {
    if (node.IsMap()) return true;
    problem(node, fmt::format("{} must be a mapping", what));
    return false;
  }
  bool expect_seq(const YAML::Node& node, std::string_view what) {
    if (node.IsSequence()) return true;
    problem(node, fmt::format("{} must be a list", what));
    return false;
  }

  std::optional<std::string> string(const YAML::Node& node, std::string_view what) {
    if (node.IsScalar()) return node.Scalar();
    problem(node, fmt::format("{} must be text", what));
    return std::nullopt;
  }

  std::optional<long long> integer(const YAML::Node& node, std::string_view what) {
    if (node.IsScalar()) {
      const std::string& s = node.Scalar();
      std::size_t used = 0;
      try {
        const long long v = std::stoll(s, &used);
        if (used == s.size()) return v;
      } catch (const std::exception&) {
      }
    }
    problem(node, fmt::format("{} must be a whole number, got '{}'", what, node.IsScalar() ? node.Scalar() : "?"));
    return std::nullopt;
  }

  // A required text key: reports a missing or empty one at the entry.
  std::string required_text(const YAML::Node& map, const char* key) {
    const YAML::Node n = map[key];
    if (!n) {
      problem(map, fmt::format("missing required key '{}'", key));
      return {};
    }
    auto s = string(n, key);
    if (s && s->empty()) problem(n, fmt::format("'{}' must not be empty", key));
    return s.value_or("");
  }

  std::vector<std::string> string_list(const YAML::Node& node, std::string_view what) {
    std::vector<std::string> out;
    if (!expect_seq(node, what)) return out;
    for (const auto& item : node)
      if (auto s = string(item, what)) out.push_back(*s);
    return out;
  }

 private:
  const std::string& file_;
  std::vector<Problem>& problems_;
  std::string entry_;
};

// A plain YAML scalar resolves like YAML 1.2's core schema; a quoted one is
// always a string, so `"false"` stays text.
Value to_value(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return {Value::Type::string, s};
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return {Value::Type::null, ""};
  if (s == "true" || s == "True" || s == "TRUE") return {Value::Type::boolean, "true"};
  if (s == "false" || s == "False" || s == "FALSE") return {Value::Type::boolean, "false"};
  static const boost::regex int_re(R"([-+]?[0-9]+)");
  static const boost::regex num_re(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (boost::regex_match(s, int_re)) return {Value::Type::integer, s};
  if (boost::regex_match(s, num_re)) return {Value::Type::number, s};
  return {Value::Type::string, s};
}

std::vector<std::pair<std::string, Value>> read_assignments(Reader& r, const YAML::Node& node, std::string_view what) {
  std::vector<std::pair<std::string, Value>> out;
  if (!r.expect_map(node, what)) return out;
  for (const auto& kv : node) {
    if (!kv.second.IsScalar()) {
      r.problem(kv.second, fmt::format("{}: the value of '{}' must be a scalar", what, kv.first.Scalar()));
      continue;
    }
    out.emplace_back(kv.first.Scalar(), to_value(kv.second));
  }
  return out;
}

std::optional<Fix> read_fix(Reader& r, const YAML::Node& node) {
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
  const YAML::Node safety = node["safety"];
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
  return fix;
}

SourcePin read_pin(Reader& r, const YAML::Node& node, const SourcePin& defaults, bool need_line) {
  SourcePin pin = defaults;
  if (!r.expect_map(node, "source")) return pin;
  r.check_keys(node, kSourceKeys, "source");
  if (node["repo"]) pin.repo = r.string(node["repo"], "source.repo").value_or("");
  if (node["path"]) pin.path = r.string(node["path"], "source.path").value_or("");
  if (node["commit"]) pin.commit = r.string(node["commit"], "source.commit").value_or("");
  if (node["symbol"]) pin.symbol = r.string(node["symbol"], "source.symbol").value_or("");
  if (node["line"] && !node["line"].IsNull()) {
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

void read_examples(Reader& r, const YAML::Node& node, Entry& e) {
  if (!r.expect_map(node, "examples")) return;
  r.check_keys(node, kExampleKeys, "examples");
  const YAML::Node match = node["match"];
  if (!match || !match.IsSequence() || match.size() == 0) {
    r.problem(match ? match : node, "examples.match must list at least one message this entry explains");
  } else {
    for (const auto& item : match) {
      MatchExample ex;
      ex.where = r.at(item);
      if (item.IsScalar()) {
        ex.text = item.Scalar();
      } else if (r.expect_map(item, "a match example")) {
        r.check_keys(item, kMatchExampleKeys, "match example");
        if (!item["text"]) {
          r.problem(item, "match example has no 'text'");
          continue;
        }
        ex.text = r.string(item["text"], "match example text").value_or("");
        if (const YAML::Node caps = item["captures"]) {
          for (auto& [name, value] : read_assignments(r, caps, "match example captures")) {
            if (std::find(e.capture_names.begin(), e.capture_names.end(), name) == e.capture_names.end())
              r.problem(caps, fmt::format("match example expects capture '{}', which the pattern does not have "
                                          "(it has: {})",
                                          name, fmt::join(e.capture_names, ", ")));
            ex.captures.push_back({name, value.text});
          }
        }
        if (const YAML::Node ctx = item["context"])
          for (auto& [key, value] : read_assignments(r, ctx, "match example context")) ex.context.values[key] = value.text;
      } else {
        continue;
      }
      e.match_examples.push_back(std::move(ex));
    }
  }
  if (const YAML::Node no = node["no_match"]) {
    if (r.expect_seq(no, "examples.no_match"))
      for (const auto& item : no)
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

void read_pattern(Reader& r, const YAML::Node& map, Entry& e) {
  const YAML::Node tmpl = map["template"];
  const YAML::Node pattern = map["pattern"];
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
    if (map["captures"]) r.problem(map["captures"], "'captures' names template placeholders; a pattern names its groups itself");
    e.capture_names = named_groups(e.pattern);
    return;
  }
  e.template_text = r.string(tmpl, "template").value_or("");
  std::vector<std::string> names;
  if (map["captures"]) names = r.string_list(map["captures"], "captures");
  std::map<std::string, std::string> overrides;
  if (const YAML::Node cp = map["capture_patterns"]) {
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
std::vector<ScopeCondition> read_scope(Reader& r, const YAML::Node& node) {
  std::vector<ScopeCondition> scope;
  if (!r.expect_map(node, "applies_to")) return scope;
  for (const auto& kv : node) {
    ScopeCondition c;
    c.key = kv.first.Scalar();
    if (kv.second.IsSequence()) {
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
// a value may be a list (any of), `model` is a regex on the context's model.
std::vector<PreflightCondition> read_preflight(Reader& r, const YAML::Node& node) {
  std::vector<PreflightCondition> out;
  std::vector<YAML::Node> maps;
  if (node.IsSequence())
    for (const auto& item : node) maps.push_back(item);
  else
    maps.push_back(node);
  for (const YAML::Node& m : maps) {
    if (!r.expect_map(m, "a preflight condition")) continue;
    PreflightCondition c;
    for (const auto& kv : m) {
      const std::string key = kv.first.Scalar();
      if (key == "model") {
        c.model = r.string(kv.second, "preflight.model").value_or("");
        try {
          boost::regex check(c.model, boost::regex::perl | boost::regex::icase);
        } catch (const boost::regex_error& e) {
          r.problem(kv.second, fmt::format("preflight.model does not compile: {}", e.what()));
        }
        continue;
      }
      std::vector<Value> values;
      if (kv.second.IsSequence()) {
        for (const auto& v : kv.second)
          if (v.IsScalar()) values.push_back(to_value(v));
      } else if (kv.second.IsScalar()) {
        values.push_back(to_value(kv.second));
      }
      if (values.empty()) r.problem(kv.second, fmt::format("preflight.{} needs a value or a list of values", key));
      c.keys.emplace_back(key, std::move(values));
    }
    if (c.keys.empty()) r.problem(m, "a preflight condition needs at least one config key");
    out.push_back(std::move(c));
  }
  return out;
}

bool valid_id(const std::string& id) {
  static const boost::regex id_re(R"([a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+)");
  return boost::regex_match(id, id_re);
}

std::optional<Entry> read_entry(Reader& r, const YAML::Node& map, const std::string& library, const SourcePin& defaults) {
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

  if (const YAML::Node src = map["source"])
    e.source = read_pin(r, src, defaults, true);
  else
    r.problem(map, "missing required key 'source' (repo, path, line, commit of the upstream raise)");
  if (const YAML::Node also = map["also_at"]) {
    if (r.expect_seq(also, "also_at"))
      for (const auto& item : also) e.also_at.push_back(read_pin(r, item, e.source, true));
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

  const YAML::Node rem = map["remediation"];
  if (!rem || !rem.IsSequence() || rem.size() == 0) {
    r.problem(rem ? rem : map, "'remediation' must list at least one step, most likely to work first");
  } else {
    for (const auto& step : rem) {
      if (!r.expect_map(step, "a remediation step")) continue;
      r.check_keys(step, kRemediationKeys, "remediation");
      Remediation out;
      out.text = r.required_text(step, "text");
      if (step["fix"]) out.fix = read_fix(r, step["fix"]);
      e.remediation.push_back(std::move(out));
    }
  }
  if (map["tags"]) e.tags = r.string_list(map["tags"], "tags");
  if (const YAML::Node ex = map["examples"])
    read_examples(r, ex, e);
  else
    r.problem(map, "missing required key 'examples' (at least one 'match' message)");
  if (map["priority"]) e.priority = static_cast<int>(r.integer(map["priority"], "priority").value_or(0));
  if (map["unless"]) e.unless = r.string_list(map["unless"], "unless");
  if (map["applies_to"]) e.applies_to = read_scope(r, map["applies_to"]);
  if (map["preflight"]) e.preflight = read_preflight(r, map["preflight"]);
  if (map["imported"]) e.imported = to_value(map["imported"]).text == "true";

  r.set_entry("");
  if (r.problem_count() != before) return std::nullopt;
  return e;
}

// A file refused before it is turned into nodes, and where.
struct Refused {
  YAML::Mark mark;
  std::string message;
};

// Walks the parser's events of the first document (the one YAML::Load
// reads) before any node is built. An alias is refused at once: yaml-cpp
// shares aliased nodes, but reading them expands every reference, so a few
// lines of nested aliases ("billion laughs") would cost exponential time.
// Catalog entries are meant to be read on their own, so nothing is lost.
// Nesting is bounded so no reader recurses deeply.
class Screen final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw Refused{mark, "aliases are not allowed in catalog files (write the value out in full)"};
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    enter(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    enter(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void enter(const YAML::Mark& mark) {
    if (++depth_ > kMaxNesting)
      throw Refused{mark, fmt::format("nested more than {} levels deep; catalog files are not", kMaxNesting)};
  }
  int depth_ = 0;
};

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
  YAML::Node root;
  try {
    {
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      Screen screen;
      parser.HandleNextDocument(screen);
    }
    root = YAML::Load(std::string(text));
  } catch (const Refused& e) {
    r.problem(r.at(e.mark), e.message);
    return entries;
  } catch (const YAML::Exception& e) {
    r.problem(r.at(e.mark), fmt::format("not valid YAML: {}", e.msg));
    return entries;
  }
  if (!root || root.IsNull()) {
    r.problem(Location{file, 1, 1}, "the file is empty; a catalog file starts with 'schema: 1'");
    return entries;
  }
  if (!r.expect_map(root, "a catalog file")) return entries;
  r.check_keys(root, kFileKeys, "file");

  const YAML::Node schema = root["schema"];
  if (!schema) {
    r.problem(root, fmt::format("missing 'schema: {}' at the top of the file", kSchemaVersion));
    return entries;
  }
  if (auto v = r.integer(schema, "schema"); v && *v != kSchemaVersion) {
    r.problem(schema, fmt::format("schema {} is not supported by this errshim (it reads schema {})", *v, kSchemaVersion));
    return entries;
  }
  std::string library;
  if (root["library"]) library = r.string(root["library"], "library").value_or("");
  SourcePin defaults;
  if (const YAML::Node d = root["defaults"]; d && r.expect_map(d, "defaults")) {
    r.check_keys(d, kSourceKeys, "defaults");
    if (d["repo"]) defaults.repo = r.string(d["repo"], "defaults.repo").value_or("");
    if (d["commit"]) defaults.commit = r.string(d["commit"], "defaults.commit").value_or("");
  }
  const YAML::Node list = root["entries"];
  if (!list) {
    r.problem(root, "missing 'entries:' list");
    return entries;
  }
  if (!r.expect_seq(list, "entries")) return entries;

  std::map<std::string, Location> seen;
  for (const auto& item : list) {
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
