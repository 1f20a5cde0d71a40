// The catastrophic-backtracking detector (src/match/pattern_risk.hpp) and lint's
// use of it: the classic shapes are flagged, separated or possessive forms
// and every shipped pattern are not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <errshim/catalog.hpp>
#include <errshim/lint.hpp>

#include "pattern_risk.hpp"
#include "template.hpp"
#include "test_catalogs.hpp"

namespace errshim {
namespace {

using detail::backtracking_risk;
using Kind = detail::BacktrackingRisk::Kind;

::testing::AssertionResult flagged_as(const std::string& pattern, Kind kind) {
  const auto risk = backtracking_risk(pattern);
  if (!risk) return ::testing::AssertionFailure() << "'" << pattern << "' is not flagged";
  if (risk->kind != kind)
    return ::testing::AssertionFailure() << "'" << pattern << "' flagged otherwise: " << risk->why;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult accepted(const std::string& pattern) {
  if (const auto risk = backtracking_risk(pattern))
    return ::testing::AssertionFailure() << "'" << pattern << "' flagged: " << risk->why;
  return ::testing::AssertionSuccess();
}

TEST(PatternRisk, FlagsNestedQuantifiersWhoseRepetitionsCanTradeText) {
  for (const char* p : {"(a+)+b", "(.*)*x", "(\\w+\\s?)+$", "((ab)+)+", "(a*)*", "(a+ba+)+", "(a{1,3})+",
                        "(?:\\s*\\S+)+", "(\\d+\\.?)+", "(a+){2}"})
    EXPECT_TRUE(flagged_as(p, Kind::nested_quantifiers));
}

TEST(PatternRisk, FlagsARepeatedRunThatCanSwallowItsOwnSeparator) {
  // .* also matches the ',' that ends each repetition: every subset of the
  // commas is a way to split ",,,,".
  EXPECT_TRUE(flagged_as("(.*,)+y", Kind::nested_quantifiers));
  EXPECT_TRUE(flagged_as("(?:.+\\w;)*", Kind::nested_quantifiers));
}

TEST(PatternRisk, FlagsRepeatedAlternationsWithOverlappingBranches) {
  for (const char* p : {"(\\w|\\d)+", "(?:a|a)*", "(a|a?)+", "(a|ab|b)+", "(?:x|[a-z])+!"})
    EXPECT_TRUE(flagged_as(p, Kind::overlapping_alternation));
}

TEST(PatternRisk, FlagsAdjacentRunsOverTheSameCharacters) {
  for (const char* p : {"\\d+\\d+", ".*.*", "\\w+\\s*\\w+", "x(?:.*)(.*?)y", "(?i)A+a+", "[a-f]+[0-9a-f]*"})
    EXPECT_TRUE(flagged_as(p, Kind::adjacent_quantifiers));
}

TEST(PatternRisk, AcceptsRepetitionsKeptApartByASeparator) {
  for (const char* p : {"(\\w+\\s)+", "[^\\s.]+(?:\\.[^\\s.]+)*", "(ab+)+", "(a+b+)+", "(?:[^,]*,)*", "(\\d+\\.){3}",
                        "(?:\"[^\"]*\")+", "(a|ab)+", "(?:cos|sin)+", "(\\d{1,3}\\.){3}\\d{1,3}", ".*foo.*"})
    EXPECT_TRUE(accepted(p));
}

TEST(PatternRisk, AcceptsPossessiveQuantifiersAndAtomicGroups) {
  for (const char* p : {"(?>a+)+b", "(a++)+b", "(?>\\w+\\s?)+$", "\\d++\\d+", "(?>.*).*"}) EXPECT_TRUE(accepted(p));
}

TEST(PatternRisk, ReadsQuotedClassAndCommentTextAsLiterals) {
  EXPECT_TRUE(accepted("\\Q(a+)+\\E"));
  EXPECT_TRUE(accepted("x\\Qa+\\E+y"));  // quoted '+' is text; the '+' after \\E repeats it
  EXPECT_TRUE(accepted("[(a+)+]"));
  EXPECT_TRUE(accepted("x(?#(a+)+)y"));
  EXPECT_TRUE(accepted("\\(a+\\)+"));
  // Extended mode drops white space, so the shape is still there.
  EXPECT_TRUE(flagged_as("(?x) ( a + ) + # comment", Kind::nested_quantifiers));
}

TEST(PatternRisk, SaysWhereTheShapeStartsAndQuotesIt) {
  const auto risk = backtracking_risk("prefix: (a+)+ suffix");
  ASSERT_TRUE(risk);
  EXPECT_EQ(risk->offset, 8u);
  EXPECT_NE(risk->why.find("'(a+)+'"), std::string::npos) << risk->why;
}

TEST(PatternRisk, GivesNoVerdictOnPatternsItCannotRead) {
  for (const char* p : {"[a-z", "(a", "a)", "*a", "\\x{zz}"}) EXPECT_FALSE(backtracking_risk(p)) << p;
  std::string deep(300, '(');
  deep += "a+";
  deep += std::string(300, ')') + "+";
  EXPECT_FALSE(backtracking_risk(deep));  // deeper than Boost accepts anyway
}

// Conditions whose conditions are look-arounds, nested without end: the
// limit on nesting holds for them too (the old reader recursed once per
// "(?" and overflowed the stack on a user catalog's pattern).
TEST(PatternRisk, GivesNoVerdictOnEndlesslyNestedConditions) {
  std::string p;
  for (int i = 0; i < 100000; ++i) p += "(?";
  EXPECT_FALSE(backtracking_risk(p));
  EXPECT_FALSE(backtracking_risk(p + "(a+)+"));
}

TEST(PatternRisk, StaysUsableOnVeryLongPatterns) {
  std::string alternatives = "(?:";
  for (int i = 0; i < 20000; ++i) alternatives += "w" + std::to_string(i) + "|";
  alternatives += "z)+";
  EXPECT_TRUE(accepted(alternatives));
  std::string runs;
  for (int i = 0; i < 20000; ++i) runs += "a*b?";
  EXPECT_TRUE(flagged_as(runs, Kind::adjacent_quantifiers));
}

TEST(PatternRisk, AcceptsEveryRegexInTheShippedCatalog) {
  for (const auto& e : Catalog::embedded()->entries()) {
    EXPECT_TRUE(accepted(e->pattern)) << e->id;
    for (const std::string& u : e->unless) EXPECT_TRUE(accepted(u)) << e->id;
  }
}

TEST(PatternRisk, AcceptsTemplateRegexesOfSeparatedPlaceholders) {
  for (const char* t : {"Meta SDPA does not support q head dim {q_head}: q dims {:?}, k dims {:?}, v dims {:?}.",
                        "expected {} got {}", "%s: %d tokens exceed %(limit)d", "{a}, {b} and {c}"}) {
    const detail::CompiledTemplate c = detail::compile_template(t);
    EXPECT_TRUE(accepted(c.regex)) << t;
  }
}

// ------------------------------------------------------------------- lint

std::string raw_entry(const std::string& id, const std::string& pattern, const std::string& example,
                      const std::string& extra = "") {
  return "  - id: " + id +
         "\n"
         "    pattern: '" +
         pattern +
         "'\n"
         "    source: {path: src/x.rs, line: 10}\n"
         "    error_class: E\n"
         "    kind: validation\n"
         "    cause: c\n"
         "    trigger: t\n"
         "    remediation: [{text: r}]\n"
         "    examples: {match: ['" +
         example + "']}\n" + extra;
}

std::vector<std::string> lint_messages(const std::string& yaml) {
  std::vector<std::string> out;
  for (const Problem& p : lint(*testing::catalog_from(yaml))) out.push_back(p.entry_id + ": " + p.message);
  return out;
}

bool has(const std::vector<std::string>& messages, const std::string& fragment) {
  for (const std::string& m : messages)
    if (m.find(fragment) != std::string::npos) return true;
  return false;
}

TEST(PatternRiskLint, FlagsACatastrophicRawPattern) {
  const auto ms = lint_messages(testing::file_yaml(raw_entry("t.nested", "slow (a+)+b", "slow aab")));
  EXPECT_TRUE(has(ms, "t.nested: pattern may backtrack catastrophically: nested quantifiers"))
      << ::testing::PrintToString(ms);
}

TEST(PatternRiskLint, FlagsACatastrophicUnlessPattern) {
  const auto ms = lint_messages(
      testing::file_yaml(raw_entry("t.unless", "plain words", "plain words", "    unless: ['(\\w|\\d)+!']\n")));
  EXPECT_TRUE(has(ms, "t.unless: 'unless' pattern may backtrack catastrophically: quantified alternation"))
      << ::testing::PrintToString(ms);
}

TEST(PatternRiskLint, FlagsACatastrophicCapturePatternOverride) {
  const auto ms = lint_messages(testing::file_yaml(
      testing::entry_yaml("t.override", "bad value {v} here", "    capture_patterns: {v: '(?:x+)+'}\n")));
  EXPECT_TRUE(has(ms, "t.override: the template's regex may backtrack catastrophically"))
      << ::testing::PrintToString(ms);
}

TEST(PatternRiskLint, LeavesASafeCatalogClean) {
  const auto ms = lint_messages(
      testing::file_yaml(raw_entry("t.safe", "value (?<v>\\d+(?:\\.\\d+)*) is bad", "value 1.2.3 is bad") +
                         testing::entry_yaml("t.tmpl", "{a}{b} side by side")));
  for (const std::string& m : ms) EXPECT_EQ(m.find("backtrack"), std::string::npos) << m;
}

}  // namespace
}  // namespace errshim
