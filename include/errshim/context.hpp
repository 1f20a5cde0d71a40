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
  std::string range;  // version range, when given
  std::vector<std::string> any_of;  // accepted values, otherwise
};

}  // namespace errshim
