// The result of looking a message up in the catalog.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace errshim {

struct Entry;

// A value read out of the message by a named placeholder ({q_head} -> "48").
struct Capture {
  std::string name;
  std::string value;

  friend bool operator==(const Capture& a, const Capture& b) { return a.name == b.name && a.value == b.value; }
};

// A matched error: the catalog entry that explains it and what the message
// said. Holds the entry by shared_ptr, so a Diagnosis outlives a catalog reload.
struct Diagnosis {
  std::shared_ptr<const Entry> entry;
  std::vector<Capture> captures;  // in the order the placeholders appear
  std::string matched;  // the part of the message the pattern matched
  std::string segment;  // the normalised message it was found in
  std::string exception_class;  // from the wrapper, when it named one ("ValueError")
  std::string raw;  // the message as given (capped at the input limit)
  std::size_t segment_index = 0;  // which normalised segment: 0 is the root cause (normalize.hpp)
  std::size_t offset = 0;  // where the match starts in `segment`

  // The captured value of `name`, or nullptr.
  const std::string* capture(std::string_view name) const noexcept;
  const std::string& id() const noexcept;
};

}  // namespace errshim
