// The compiled set of catalog patterns and the rule that picks a winner.
// All matching lives behind this class so its internals (today a loop over
// Boost regexes) can change without touching the catalog or the callers.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include <boost/regex.hpp>

#include "errshim/catalog.hpp"
#include "errshim/normalize.hpp"

namespace errshim::detail {

class Matcher {
 public:
  // Compiles every entry's pattern and `unless` list. Each one that does not
  // compile is reported in `problems` with the entry's position.
  Matcher(std::vector<std::shared_ptr<const Entry>> entries, std::vector<Problem>& problems);

  // Normalises `message`, then applies the winner rule documented on
  // Catalog::match. Never throws: a regex that gives up (Boost's complexity
  // limit) counts as "did not match" and is reported in the result.
  MatchResult match(std::string_view message, const Context& context) const noexcept;

  // Whether entry `index` claims some segment of `message` (ignoring rivals).
  bool claims(std::size_t index, std::string_view message) const noexcept;

  const std::vector<std::shared_ptr<const Entry>>& entries() const noexcept { return entries_; }

 private:
  struct Compiled {
    boost::regex re;
    std::vector<boost::regex> unless;
    std::size_t specificity = 0;  // literal characters in the pattern
  };
  struct Hit;

  // Searches one segment with one entry; false on no match or on a regex
  // that gave up (then `problems` says so).
  bool search(std::size_t index, const std::string& text, boost::smatch& m, std::vector<std::string>* problems) const;

  std::vector<std::shared_ptr<const Entry>> entries_;
  std::vector<Compiled> compiled_;
};

// Counts the characters of a regex that must appear literally in every match
// (escaped or plain characters outside classes, groups syntax and optional
// atoms). For a template this is exactly its literal length.
std::size_t literal_length(std::string_view regex);

}  // namespace errshim::detail
