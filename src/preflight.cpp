#include "errshim/preflight.hpp"

#include <boost/regex.hpp>

namespace errshim {

namespace {
bool loosely_equal(const Value& have, const Value& want) {
  if (have.type == want.type) return have.text == want.text;
  // Config files spell booleans and numbers as text now and then.
  return have.text == want.text && (have.type == Value::Type::string || want.type == Value::Type::string);
}

// The paths of `key` in `config`: an explicit dotted path, or every place the
// bare key is found.
std::vector<KeyPath> paths_of(const ConfigAccess& config, const std::string& key) {
  if (key.find('.') != std::string::npos) return {parse_key_path(key)};
  return config.find(key);
}

bool meets(const PreflightCondition& c, const ConfigAccess& config, const Context& context,
           std::vector<std::pair<KeyPath, Value>>& because) {
  if (!c.model.empty()) {
    const std::string* model = context.get("model");
    if (!model) return false;
    try {
      if (!boost::regex_search(*model, boost::regex(c.model, boost::regex::perl | boost::regex::icase))) return false;
    } catch (const std::exception&) {
      return false;
    }
  }
  for (const auto& [key, accepted] : c.keys) {
    bool found = false;
    for (const KeyPath& p : paths_of(config, key)) {
      const std::optional<Value> have = config.get(p);
      if (!have) continue;
      for (const Value& want : accepted)
        if (loosely_equal(*have, want)) {
          because.emplace_back(p, *have);
          found = true;
          break;
        }
      if (found) break;
    }
    if (!found) return false;
  }
  return true;
}
}  // namespace

std::vector<Finding> check(const ConfigAccess& config, const Catalog& catalog, const Context& context) {
  std::vector<Finding> findings;
  for (const auto& entry : catalog.entries()) {
    if (entry->preflight.empty() || scope_fit(entry->applies_to, context) == ScopeFit::contradicted) continue;
    for (const PreflightCondition& c : entry->preflight) {
      std::vector<std::pair<KeyPath, Value>> because;
      if (meets(c, config, context, because)) {
        findings.push_back({entry, std::move(because)});
        break;
      }
    }
  }
  return findings;
}

}  // namespace errshim
