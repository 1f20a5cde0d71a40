// Value: one scalar of a config or of a catalog fix, on its own so that a
// config reader needs nothing of the catalog.
#pragma once

#include <string>

namespace errshim {

// A scalar config value as written in the catalog. `text` holds the value's
// spelling; a string may contain {capture} references resolved at fix time.
struct Value {
  enum class Type { null, boolean, integer, number, string };
  Type type = Type::null;
  std::string text;

  friend bool operator==(const Value& a, const Value& b) { return a.type == b.type && a.text == b.text; }
};

}  // namespace errshim
