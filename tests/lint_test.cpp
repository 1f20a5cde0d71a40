// Lint: a catalog checked against its own examples.
#include <gtest/gtest.h>

#include <errshim/catalog.hpp>
#include <errshim/lint.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

using testing::catalog_from;
using testing::entry_yaml;
using testing::file_yaml;

std::string all(const std::vector<Problem>& ps) {
  std::string s;
  for (const auto& p : ps) s += p.to_string() + "\n";
  return s;
}

TEST(Lint, CleanCatalogHasNoProblems) {
  EXPECT_EQ(all(lint(*catalog_from(file_yaml(entry_yaml("lib.a", "one thing") + entry_yaml("lib.b", "another"))))), "");
}

TEST(Lint, ReportsMatchExampleWonByAnotherEntry) {
  // lib.short's example is also matched by the more specific lib.long.
  std::string y = entry_yaml("lib.short", "is not supported");
  y.replace(y.find("match: ['is not supported']"), 27, "match: ['window is not supported']");
  const auto ps = lint(*catalog_from(file_yaml(y + entry_yaml("lib.long", "window is not supported"))));
  ASSERT_EQ(ps.size(), 1u) << all(ps);
  EXPECT_EQ(ps[0].entry_id, "lib.short");
  EXPECT_EQ(ps[0].where.line, 15);
  EXPECT_NE(ps[0].message.find("won by 'lib.long'"), std::string::npos);
}

TEST(Lint, ReportsMatchExampleNobodyMatches) {
  std::string y = entry_yaml("lib.a", "one thing");
  y.replace(y.find("match: ['one thing']"), 20, "match: ['a different thing']");
  const auto ps = lint(*catalog_from(file_yaml(y)));
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_NE(ps[0].message.find("not matched by any entry"), std::string::npos);
}

TEST(Lint, ReportsWrongExpectedCapture) {
  std::string y = entry_yaml("lib.a", "head dim {d}");
  y.replace(y.find("match: ['head dim {d}']"), 23, "match: [{text: 'head dim 48', captures: {d: '64'}}]");
  const auto ps = lint(*catalog_from(file_yaml(y)));
  ASSERT_EQ(ps.size(), 1u) << all(ps);
  EXPECT_NE(ps[0].message.find("capture 'd' is '48', the example expects '64'"), std::string::npos);
}

TEST(Lint, ReportsNoMatchExampleClaimed) {
  std::string y = entry_yaml("lib.a", "is not supported");
  y.replace(y.find("match: ['is not supported']"), 27,
            "match: ['is not supported']\n      no_match: ['seanet lstm is not supported', 'fine']");
  const auto ps = lint(*catalog_from(file_yaml(y)));
  ASSERT_EQ(ps.size(), 1u) << all(ps);
  EXPECT_NE(ps[0].message.find("no_match example is claimed by this entry: 'seanet lstm is not supported'"),
            std::string::npos);
  EXPECT_EQ(ps[0].where.line, 16);
}

}  // namespace
}  // namespace errshim
