#include "errshim/lint.hpp"

#include <fmt/format.h>

namespace errshim {

std::vector<Problem> lint(const Catalog& catalog) {
  std::vector<Problem> problems;
  for (const auto& ep : catalog.entries()) {
    const Entry& e = *ep;
    for (const MatchExample& ex : e.match_examples) {
      const MatchResult r = catalog.match(ex.text, ex.context);
      for (const std::string& p : r.problems) problems.push_back({ex.where, e.id, p});
      if (!r.diagnosis) {
        problems.push_back({ex.where, e.id, fmt::format("match example is not matched by any entry: '{}'", ex.text)});
        continue;
      }
      if (r.diagnosis->id() != e.id) {
        const bool claimed = catalog.claims(e.id, ex.text);
        problems.push_back({ex.where, e.id,
                            claimed ? fmt::format("match example is won by '{}' (raise this entry's priority, or "
                                                  "make one of them stricter)",
                                                  r.diagnosis->id())
                                    : fmt::format("match example is not matched by this entry (it goes to '{}')",
                                                  r.diagnosis->id())});
        continue;
      }
      for (const Capture& want : ex.captures) {
        const std::string* got = r.diagnosis->capture(want.name);
        if (!got)
          problems.push_back({ex.where, e.id, fmt::format("expected capture '{}' is missing", want.name)});
        else if (*got != want.value)
          problems.push_back({ex.where, e.id,
                              fmt::format("capture '{}' is '{}', the example expects '{}'", want.name, *got, want.value)});
      }
    }
    for (const NoMatchExample& ex : e.no_match_examples)
      if (catalog.claims(e.id, ex.text))
        problems.push_back({ex.where, e.id, fmt::format("no_match example is claimed by this entry: '{}'", ex.text)});
  }
  return problems;
}

}  // namespace errshim
