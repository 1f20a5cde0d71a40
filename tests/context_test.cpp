// Context and scope: versions compare numerically, scopes fit or not, and the
// matcher prefers the entry the context confirms.
#include <gtest/gtest.h>

#include <errshim/catalog.hpp>
#include <errshim/lint.hpp>

#include "test_catalogs.hpp"
#include "context_internal.hpp"

namespace errshim {
namespace {

TEST(Versions, CompareNumericallyNotAsText) {
  EXPECT_LT(compare_versions("4.9", "4.10"), 0);
  EXPECT_EQ(compare_versions("4.45", "4.45.0"), 0);
  EXPECT_GT(compare_versions("4.57.1", "4.57"), 0);
  EXPECT_LT(compare_versions("4.54.0.dev0", "4.54.0"), 0);
  EXPECT_LT(compare_versions("v1.2", "1.3"), 0);
}

TEST(Versions, RangesAreConjunctions) {
  EXPECT_TRUE(version_in_range("4.50", ">=4.45,<4.54"));
  EXPECT_FALSE(version_in_range("4.54", ">=4.45,<4.54"));
  EXPECT_FALSE(version_in_range("4.44.2", ">=4.45"));
  EXPECT_TRUE(version_in_range("2.1", "!=2.0"));
  EXPECT_THROW(version_in_range("1", "4.45"), std::invalid_argument);
  EXPECT_THROW(version_in_range("1", ">=latest"), std::invalid_argument);
}

TEST(ContextParse, ReadsKeyValueListsAndRejectsJunk) {
  const Context c = Context::parse("transformers=4.57, device=metal");
  ASSERT_NE(c.get("device"), nullptr);
  EXPECT_EQ(*c.get("device"), "metal");
  EXPECT_EQ(*c.get("transformers"), "4.57");
  EXPECT_TRUE(Context::parse("").empty());
  EXPECT_THROW(Context::parse("transformers"), std::invalid_argument);
  EXPECT_THROW(Context::parse("=4"), std::invalid_argument);
}

TEST(ScopeFit, ConfirmedGeneralUnknownContradicted) {
  const std::vector<ScopeCondition> scope = {{"transformers", ">=4.54", {}}, {"device", "", {"metal", "mps"}}};
  EXPECT_EQ(scope_fit({}, Context::parse("transformers=4.57")), ScopeFit::general);
  EXPECT_EQ(scope_fit(scope, Context::parse("transformers=4.57,device=mps")), ScopeFit::confirmed);
  EXPECT_EQ(scope_fit(scope, Context::parse("transformers=4.57")), ScopeFit::unknown);
  EXPECT_EQ(scope_fit(scope, Context{}), ScopeFit::unknown);
  EXPECT_EQ(scope_fit(scope, Context::parse("transformers=4.50,device=mps")), ScopeFit::contradicted);
  EXPECT_EQ(scope_fit(scope, Context::parse("device=cuda")), ScopeFit::contradicted);
}

// Three entries for one text: general, old versions, new versions.
CatalogPtr scoped_catalog() {
  using testing::entry_yaml;
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(
      entry_yaml("lib.cache.general", "quantized cache unsupported") +
      entry_yaml("lib.cache.old", "quantized cache unsupported", "    applies_to: {transformers: '<4.54'}\n") +
      entry_yaml("lib.cache.new", "quantized cache unsupported", "    applies_to: {transformers: '>=4.54'}\n")));
  return c;
}

TEST(ScopedMatching, ContextPicksTheEntryWhoseScopeFits) {
  const auto c = scoped_catalog();
  EXPECT_EQ(c->diagnose("quantized cache unsupported", Context::parse("transformers=4.57"))->id(), "lib.cache.new");
  EXPECT_EQ(c->diagnose("quantized cache unsupported", Context::parse("transformers=4.50"))->id(), "lib.cache.old");
}

TEST(ScopedMatching, WithoutContextTheGeneralEntryWins) {
  const auto c = scoped_catalog();
  EXPECT_EQ(c->diagnose("quantized cache unsupported")->id(), "lib.cache.general");
  EXPECT_EQ(c->diagnose("quantized cache unsupported", Context::parse("device=cuda"))->id(), "lib.cache.general");
}

TEST(ScopedMatching, ContradictedEntryIsNeverChosenEvenAlone) {
  const auto c = testing::catalog_from(
      testing::file_yaml(testing::entry_yaml("lib.metal.only", "sdpa head dim", "    applies_to: {device: metal}\n")));
  EXPECT_FALSE(c->diagnose("sdpa head dim", Context::parse("device=cuda")));
  EXPECT_TRUE(c->diagnose("sdpa head dim", Context::parse("device=metal")));
  EXPECT_TRUE(c->diagnose("sdpa head dim"));  // unknown scope, no rival
}

TEST(ScopedMatching, LintUsesTheExampleContext) {
  // The scoped entries' only match example is the bare text: without its own
  // context it is won by the general entry, and lint says so.
  auto problems = lint(*scoped_catalog());
  std::size_t won_by_general = 0;
  for (const auto& p : problems) won_by_general += p.message.find("won by 'lib.cache.general'") != std::string::npos;
  EXPECT_EQ(won_by_general, 2u);
  const auto fixed = testing::catalog_from(testing::file_yaml(
      testing::entry_yaml("lib.cache.general", "quantized cache unsupported") +
      "  - id: lib.cache.new\n    template: 'quantized cache unsupported'\n    source: {path: a.py, line: 1}\n"
      "    error_class: ValueError\n    kind: validation\n    cause: c\n    trigger: t\n"
      "    remediation: [{text: r}]\n    applies_to: {transformers: '>=4.54'}\n"
      "    examples: {match: [{text: 'quantized cache unsupported', context: {transformers: '4.57'}}]}\n"));
  EXPECT_TRUE(lint(*fixed).empty());
}

TEST(ScopedMatching, BadVersionRangeIsALoadProblem) {
  try {
    testing::catalog_from(
        testing::file_yaml(testing::entry_yaml("lib.a", "boom", "    applies_to: {transformers: '>=soon'}\n")));
    FAIL();
  } catch (const catalog_error& e) {
    EXPECT_NE(e.problems()[0].message.find("applies_to.transformers"), std::string::npos) << e.what();
    EXPECT_EQ(e.problems()[0].where.line, 16);
  }
}

}  // namespace
}  // namespace errshim
