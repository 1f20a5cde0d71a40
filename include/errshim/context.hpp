// What the host knows about where an error happened: library versions,
// device, backend. Entries may declare the scope they apply to
// (`applies_to` in the catalog); the matcher prefers an entry whose scope the
// context confirms and drops one the context contradicts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace errshim {

struct Context {
  // "transformers" -> "4.57.1", "device" -> "metal", "backend" -> "cuda"
  std::map<std::string, std::string> values;

  bool empty() const noexcept { return values.empty(); }
  const std::string* get(std::string_view key) const noexcept;

  // "transformers=4.57,device=metal". Throws std::invalid_argument naming
  // the offending item.
  static Context parse(std::string_view text);
};

// One condition of an entry's scope (`applies_to` in the catalog): either a
// version range for a library ("transformers" ">=4.54") or a set of accepted
// values ("device" {"metal"}).
struct ScopeCondition {
  std::string key;
  std::string range;                // version range, when given
  std::vector<std::string> any_of;  // accepted values, otherwise
};

// How an entry's scope relates to a context.
enum class ScopeFit {
  contradicted,  // the context says the entry cannot apply: never chosen
  unknown,       // the entry is scoped but the context does not say: chosen last
  general,       // the entry has no scope
  confirmed,     // the context satisfies every condition of the scope
};

// Where `scope` stands against `context`. An empty scope is `general`.
ScopeFit scope_fit(const std::vector<ScopeCondition>& scope, const Context& context) noexcept;

// Compares dotted versions numerically ("4.9" < "4.10"); a non-numeric tail
// such as ".dev0" ranks the version just below its release. <0, 0, >0.
int compare_versions(std::string_view a, std::string_view b) noexcept;

// Whether `version` satisfies a range such as ">=4.45,<4.54" (comma = and).
// Operators: >= <= > < == !=. Throws std::invalid_argument on a bad range.
bool version_in_range(std::string_view version, std::string_view range);

}  // namespace errshim
