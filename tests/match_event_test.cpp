// Policy::on_match: remediate() reports each catalog lookup it makes for a
// failed call (the text, the verdict, the time), the observation point the
// prometheus bridge counts unrecognised errors and match latency from.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <errshim/errshim.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

CatalogPtr catalog() {
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(testing::kv_cache_entry_yaml("t.kv")));
  return c;
}

struct Seen {
  std::string text;
  std::string id;  // empty: unrecognised
};

Policy observing(std::vector<Seen>& seen) {
  Policy p;
  p.on_match = [&seen](const MatchEvent& e) {
    seen.push_back({std::string(e.text), e.diagnosis ? e.diagnosis->id() : std::string()});
  };
  return p;
}

ConfigTree config() { return ConfigTree::parse("kv_cache_enabled: true\n"); }

TEST(MatchEvent, UnrecognisedErrorIsReportedWithItsTextAndRethrownUnchanged) {
  std::vector<Seen> seen;
  const Policy policy = observing(seen);
  EXPECT_THROW(remediate(
                   config(), [](const ConfigTree&) -> int { throw std::out_of_range("no such tensor: lm_head"); },
                   policy, *catalog()),
               std::out_of_range);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].text, "no such tensor: lm_head");
  EXPECT_EQ(seen[0].id, "");
}

TEST(MatchEvent, OneLookupPerFailedCallWithTheEntryThatWon) {
  std::vector<Seen> seen;
  const Policy policy = observing(seen);
  const auto r = remediate(
      config(),
      [](const ConfigTree& c) {
        if (c.get({"kv_cache_enabled"})->text == "true")
          throw std::runtime_error("kv_cache_enabled=true is not supported");
        return 7;
      },
      policy, *catalog());
  EXPECT_EQ(r.value, 7);
  ASSERT_EQ(seen.size(), 1u);  // the retry succeeded: no second lookup
  EXPECT_EQ(seen[0].id, "t.kv");
  EXPECT_EQ(seen[0].text, "kv_cache_enabled=true is not supported");
}

TEST(MatchEvent, ErrorAlreadyTranslatedByAnInnerGuardNeedsNoLookup) {
  std::vector<Seen> seen;
  const Policy policy = observing(seen);
  const Catalog& cat = *catalog();
  const auto r = remediate(
      config(),
      [&](const ConfigTree& c) {
        return guard(
            [&] {
              if (c.get({"kv_cache_enabled"})->text == "true")
                throw std::runtime_error("kv_cache_enabled=true is not supported");
              return 1;
            },
            cat);
      },
      policy, cat);
  EXPECT_EQ(r.value, 1);
  EXPECT_TRUE(seen.empty());
}

TEST(MatchEvent, ObserverThatThrowsDoesNotReplaceTheHostsError) {
  Policy policy;
  policy.on_match = [](const MatchEvent&) { throw std::logic_error("observer broke"); };
  EXPECT_THROW(remediate(
                   config(), [](const ConfigTree&) -> int { throw std::out_of_range("no such tensor: lm_head"); },
                   policy, *catalog()),
               std::out_of_range);
}

}  // namespace
}  // namespace errshim
