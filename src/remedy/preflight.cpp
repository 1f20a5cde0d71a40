#include "errshim/preflight.hpp"
#include "context_internal.hpp"
#include "preflight_internal.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include <boost/regex.hpp>

namespace errshim {

namespace {

// Lists in a config are read element by element (path part "0", "1", ...);
// the longest a condition reads are per-layer lists (`layer_types`).
constexpr std::size_t kMaxListItems = 1024;

bool loosely_equal(const Value& have, const Value& want) {
  if (have.type == want.type) return have.text == want.text;
  // Config files spell booleans and numbers as text now and then, and JSON
  // writes 0.0 where YAML reads an integer-looking 0.
  if (have.text == want.text && (have.type == Value::Type::string || want.type == Value::Type::string)) return true;
  const bool numeric_have = have.type == Value::Type::integer || have.type == Value::Type::number;
  const bool numeric_want = want.type == Value::Type::integer || want.type == Value::Type::number;
  if (!numeric_have || !numeric_want) return false;
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double a = std::strtod(have.text.c_str(), &end_a);
  const double b = std::strtod(want.text.c_str(), &end_b);
  return *end_a == '\0' && *end_b == '\0' && a == b;
}

std::optional<double> number_of(const Value& v) {
  if (v.type != Value::Type::integer && v.type != Value::Type::number && v.type != Value::Type::string)
    return std::nullopt;
  if (v.text.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(v.text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(d)) return std::nullopt;
  return d;
}

// The paths of `key` in `config`: an explicit dotted path, or every place the
// bare key is found.
std::vector<KeyPath> paths_of(const ConfigAccess& config, const std::string& key) {
  if (key.find('.') != std::string::npos) return {parse_key_path(key)};
  return config.find(key);
}

// The configs a condition of `kind` may read, in the order they are asked.
std::vector<const ConfigAccess*> sources(const PreflightConfigs& in, PreflightSource kind) {
  std::vector<const ConfigAccess*> out;
  auto add = [&out](const ConfigAccess* c) {
    if (c) out.push_back(c);
  };
  switch (kind) {
    case PreflightSource::model: add(in.model), add(in.config); break;
    case PreflightSource::generation: add(in.generation), add(in.config); break;
    case PreflightSource::any: add(in.config), add(in.model), add(in.generation); break;
  }
  return out;
}

struct Found {
  const ConfigAccess* in = nullptr;
  KeyPath path;
  Value value;
};

// Every scalar value of `key` in the first source that has the key at all;
// a list stands for its elements (`layer_types: [mamba, attention]` holds
// `mamba`).
std::vector<Found> values_of(const std::vector<const ConfigAccess*>& from, const std::string& key) {
  std::vector<Found> out;
  for (const ConfigAccess* c : from) {
    for (const KeyPath& p : paths_of(*c, key)) {
      std::optional<Value> v = c->get(p);
      if (!v) continue;
      if (v->type != Value::Type::null || v->text != "<list>") {
        out.push_back({c, p, std::move(*v)});
        continue;
      }
      for (std::size_t i = 0; i < kMaxListItems; ++i) {
        KeyPath item = p;
        item.push_back(std::to_string(i));
        std::optional<Value> e = c->get(item);
        if (!e) break;
        out.push_back({c, std::move(item), std::move(*e)});
      }
    }
    if (!out.empty()) break;
  }
  return out;
}

// The operand of a test: a literal number, or the value of another key in
// the config the tested key came from.
std::optional<double> operand(const Value& v, const ConfigAccess& in) {
  if (v.type != Value::Type::string) return number_of(v);
  const std::vector<KeyPath> paths = paths_of(in, v.text);
  if (paths.size() != 1) return std::nullopt;  // absent or ambiguous: cannot tell
  const std::optional<Value> other = in.get(paths.front());
  return other ? number_of(*other) : std::nullopt;
}

bool passes(const PreflightTest& t, const Value& have, const ConfigAccess& in) {
  if (t.op == PreflightTest::Op::not_in) {
    if (have.type == Value::Type::null) return false;  // a mapping, a list or null: not a value to judge
    for (const Value& v : t.values)
      if (loosely_equal(have, v)) return false;
    return true;
  }
  if (t.values.size() != 1) return false;
  const std::optional<double> a = number_of(have);
  const std::optional<double> b = operand(t.values.front(), in);
  if (!a || !b) return false;
  switch (t.op) {
    case PreflightTest::Op::gt: return *a > *b;
    case PreflightTest::Op::ge: return *a >= *b;
    case PreflightTest::Op::lt: return *a < *b;
    case PreflightTest::Op::le: return *a <= *b;
    case PreflightTest::Op::not_multiple_of: {
      if (*b == 0 || std::floor(*a) != *a || std::floor(*b) != *b) return false;
      return std::fmod(*a, *b) != 0;
    }
    case PreflightTest::Op::not_in: break;
  }
  return false;
}

bool name_matches(const std::string& regex, const Context& context) {
  const std::string* model = context.get("model");
  if (!model) return false;
  try {
    return boost::regex_search(*model, boost::regex(regex, boost::regex::perl | boost::regex::icase));
  } catch (const std::exception&) {
    return false;
  }
}

bool one_of(const std::string& s, const std::vector<std::string>& set) {
  for (const std::string& x : set)
    if (x == s) return true;
  return false;
}

// The family the model config states, judged against the condition's. The
// config is the authority: when it names its family, a model name does not
// overrule it; when it does not, the name decides, where the condition
// gives a regex for it.
bool family_fits(const PreflightCondition& c, const PreflightConfigs& in, const Context& context) {
  const bool names_family = !c.model_types.empty() || !c.architectures.empty();
  if (!names_family) return c.model.empty() || name_matches(c.model, context);
  bool stated = false;
  for (const ConfigAccess* cfg : sources(in, PreflightSource::model)) {
    if (const std::optional<Value> t = cfg->get({"model_type"}); t && t->type == Value::Type::string) {
      stated = true;
      if (one_of(t->text, c.model_types)) return true;
    }
    for (std::size_t i = 0; i < kMaxListItems; ++i) {
      const std::optional<Value> a = cfg->get({"architectures", std::to_string(i)});
      if (!a) break;
      stated = true;
      if (one_of(a->text, c.architectures)) return true;
    }
    if (stated) return false;
  }
  return !c.model.empty() && name_matches(c.model, context);
}

bool meets(const PreflightCondition& c, const PreflightConfigs& in, const Context& context,
           std::vector<std::pair<KeyPath, Value>>& because) {
  if (!c.applies_to.empty() && scope_fit(c.applies_to, context) != ScopeFit::confirmed) return false;
  if (!family_fits(c, in, context)) return false;
  const std::vector<const ConfigAccess*> from = sources(in, c.config);
  for (const auto& [key, accepted] : c.keys) {
    bool found = false;
    for (const Found& f : values_of(from, key)) {
      for (const Value& want : accepted)
        if (loosely_equal(f.value, want)) {
          because.emplace_back(f.path, f.value);
          found = true;
          break;
        }
      if (found) break;
    }
    if (!found) return false;
  }
  for (const PreflightTest& t : c.tests) {
    bool found = false;
    for (const Found& f : values_of(from, t.key))
      if (passes(t, f.value, *f.in)) {
        because.emplace_back(f.path, f.value);
        found = true;
        break;
      }
    if (!found) return false;
  }
  return true;
}
}  // namespace

bool preflight_fires(const Entry& entry, const PreflightConfigs& configs, const Context& context,
                     std::vector<std::pair<KeyPath, Value>>* because) {
  for (const PreflightCondition& c : entry.preflight) {
    std::vector<std::pair<KeyPath, Value>> why;
    if (meets(c, configs, context, why)) {
      if (because) *because = std::move(why);
      return true;
    }
  }
  return false;
}

std::vector<Finding> check(const PreflightConfigs& configs, const Catalog& catalog, const Context& context) {
  std::vector<Finding> findings;
  for (const auto& entry : catalog.entries()) {
    if (entry->preflight.empty() || scope_fit(entry->applies_to, context) == ScopeFit::contradicted) continue;
    std::vector<std::pair<KeyPath, Value>> because;
    if (preflight_fires(*entry, configs, context, &because)) findings.push_back({entry, std::move(because)});
  }
  return findings;
}

std::vector<Finding> check(const ConfigAccess& config, const Catalog& catalog, const Context& context) {
  PreflightConfigs in;
  in.config = &config;
  return check(in, catalog, context);
}

}  // namespace errshim
