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
  // Also reported: lib.short is shadowed, and the two overlap (see below).
  ASSERT_FALSE(ps.empty());
  EXPECT_EQ(ps[0].entry_id, "lib.short");
  EXPECT_EQ(ps[0].where.line, 15);
  EXPECT_NE(ps[0].message.find("won by 'lib.long'"), std::string::npos) << all(ps);
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

TEST(Lint, ReportsShadowedEntryThatCanNeverWin) {
  std::string y = entry_yaml("lib.short", "is not supported");
  y.replace(y.find("match: ['is not supported']"), 27, "match: ['window is not supported']");
  const auto ps = lint(*catalog_from(file_yaml(y + entry_yaml("lib.long", "window is not supported"))));
  bool shadowed = false;
  for (const auto& p : ps)
    shadowed = shadowed || (p.entry_id == "lib.short" && p.message.find("can never win") != std::string::npos);
  EXPECT_TRUE(shadowed) << all(ps);
}

TEST(Lint, ReportsMutualOverlapWithoutPriority) {
  // Each pattern matches the other's example: only id order would decide.
  std::string a = entry_yaml("lib.a", "cache (full|over)");
  a.replace(a.find("template: 'cache (full|over)'"), 29, "pattern: 'cache (full|over)'");
  a.replace(a.find("match: ['cache (full|over)']"), 28, "match: ['cache full']");
  std::string b = entry_yaml("lib.b", "x");
  b.replace(b.find("template: 'x'"), 13, "pattern: 'cache (over|full)'");
  b.replace(b.find("match: ['x']"), 12, "match: ['cache over']");
  const auto ps = lint(*catalog_from(file_yaml(a + b)));
  bool overlap = false;
  for (const auto& p : ps) overlap = overlap || p.message.find("overlaps with 'lib.b'") != std::string::npos;
  EXPECT_TRUE(overlap) << all(ps);
  // A priority settles it.
  std::string b2 = b + "    priority: 1\n";
  for (const auto& p : lint(*catalog_from(file_yaml(a + b2))))
    EXPECT_EQ(p.message.find("overlaps with"), std::string::npos) << p.to_string();
}

TEST(Lint, ReportsEntryWhoseExamplesNeverStateTheirCaptures) {
  const auto ps = lint(*catalog_from(file_yaml(entry_yaml("lib.a", "head dim {d}"))));
  ASSERT_EQ(ps.size(), 1u) << all(ps);
  EXPECT_NE(ps[0].message.find("no match example states the captures it expects (d)"), std::string::npos);
}

// A raw pattern whose lazy runs retry every later literal: matching its
// near miss (the last literal left out) grows quadratically.
std::string raw_entry(const std::string& id, const std::string& pattern, const std::string& example) {
  std::string y = entry_yaml(id, "x");
  y.replace(y.find("template: 'x'"), 13, "pattern: '" + pattern + "'");
  y.replace(y.find("match: ['x']"), 12, "match: ['" + example + "']");
  return y;
}

TEST(Lint, ReportsWorkThatGrowsFasterThanTheTextOnNearMisses) {
  const auto ps =
      lint(*catalog_from(file_yaml(raw_entry("lib.poly", "load (?<a>.+?) from (?<b>.+?) done", "load a from b done"))));
  bool found = false;
  for (const Problem& p : ps)
    found = found || (p.entry_id == "lib.poly" &&
                      p.message.find("takes work that grows faster than the text") != std::string::npos);
  EXPECT_TRUE(found) << all(ps);
}

TEST(Lint, DoesNotReportALinearPatternOrATemplate) {
  const auto ps = lint(
      *catalog_from(file_yaml(raw_entry("lib.runs", "load (?<a>[^ ]+) from (?<b>[^ ]+) done", "load a from b done") +
                              entry_yaml("lib.tmpl", "load {a} from {b} at {c} done"))));
  for (const Problem& p : ps) EXPECT_EQ(p.message.find("grows faster"), std::string::npos) << p.to_string();
}

// examples.preflight: the entry's condition must fire on each 'fires' config
// and stay quiet on each 'quiet' one, and both kinds must be there.
struct PreflightLintCase {
  std::string name;
  std::string examples;  // lines inside `examples:` (indent 6)
  std::string preflight;  // the entry's preflight line (indent 4), may be empty
  std::string message;  // expected part of the one problem; empty: clean
};

class LintPreflightTest : public ::testing::TestWithParam<PreflightLintCase> {};

TEST_P(LintPreflightTest, ChecksExampleConfigsAgainstTheCondition) {
  const auto ps = lint(*catalog_from(file_yaml(entry_yaml("lib.pf", "x", GetParam().examples + GetParam().preflight))));
  if (GetParam().message.empty()) {
    EXPECT_TRUE(ps.empty()) << all(ps);
    return;
  }
  ASSERT_EQ(ps.size(), 1u) << all(ps);
  EXPECT_EQ(ps[0].entry_id, "lib.pf");
  EXPECT_NE(ps[0].message.find(GetParam().message), std::string::npos) << ps[0].to_string();
}

const std::string kCondition = "    preflight: {when: {use_cache: false}, model_type: llama}\n";

INSTANTIATE_TEST_SUITE_P(
    Rows, LintPreflightTest,
    ::testing::Values(PreflightLintCase{"Clean",
                                        "      preflight:\n"
                                        "        fires: [{model_config: {model_type: llama, use_cache: false}}]\n"
                                        "        quiet: [{model_config: {model_type: mistral, use_cache: false}}]\n",
                                        kCondition, ""},
                      PreflightLintCase{"NoExamples", "", kCondition, "(missing: both)"},
                      PreflightLintCase{"NoQuietExample",
                                        "      preflight:\n"
                                        "        fires: [{model_config: {model_type: llama, use_cache: false}}]\n",
                                        kCondition, "(missing: quiet)"},
                      PreflightLintCase{"QuietExampleFires",
                                        "      preflight:\n"
                                        "        fires: [{model_config: {model_type: llama, use_cache: false}}]\n"
                                        "        quiet: [{config: {model_type: llama, use_cache: false}}]\n",
                                        kCondition,
                                        "under 'quiet' meets a preflight condition of the entry: a false alarm"},
                      PreflightLintCase{"FiresExampleQuiet",
                                        "      preflight:\n"
                                        "        fires: [{model_config: {use_cache: false}}]\n"
                                        "        quiet: [{model_config: {model_type: llama, use_cache: true}}]\n",
                                        kCondition, "under 'fires' does not meet any preflight condition"},
                      PreflightLintCase{"ExamplesWithoutCondition",
                                        "      preflight:\n"
                                        "        fires: [{config: {use_cache: false}}]\n",
                                        "", "examples.preflight is given but the entry has no 'preflight' condition"}),
    [](const ::testing::TestParamInfo<PreflightLintCase>& info) { return info.param.name; });
// An entry whose cause (or another user-facing field) is `text`.
std::string entry_with_cause(const std::string& id, const std::string& field, const std::string& text) {
  std::string y = entry_yaml(id, "prose " + id);
  const std::string from = field == "cause"     ? "    cause: c\n"
                           : field == "trigger" ? "    trigger: t\n"
                                                : "      - text: r\n";
  const std::string indent = field == "text" ? "      - text: " : "    " + field + ": ";
  y.replace(y.find(from), from.size(), indent + "'" + text + "'\n");
  return y;
}

bool has_problem(const std::vector<Problem>& ps, const std::string& id, const std::string& part) {
  for (const Problem& p : ps)
    if (p.entry_id == id && p.message.find(part) != std::string::npos) return true;
  return false;
}

struct NoteCase {
  const char* name;
  const char* field;
  const char* text;
};

class LintAuthoringNote : public ::testing::TestWithParam<NoteCase> {};

TEST_P(LintAuthoringNote, IsRefusedInUserFacingProse) {
  const NoteCase& c = GetParam();
  const auto ps = lint(*catalog_from(file_yaml(entry_with_cause("lib.note", c.field, c.text))));
  EXPECT_TRUE(has_problem(ps, "lib.note", "holds an authoring note")) << all(ps);
}

INSTANTIATE_TEST_SUITE_P(
    Lint, LintAuthoringNote,
    ::testing::Values(NoteCase{"NotReproducible", "cause", "The GPU ran out. Not reproducible on this CPU-only build."},
                      NoteCase{"Todo", "trigger", "A long prompt. TODO: check the 2.x wording."},
                      NoteCase{"WeCouldNot", "text", "Lower the batch size; we could not test it."},
                      NoteCase{"Fixme", "cause", "Something FIXME here."}),
    [](const ::testing::TestParamInfo<NoteCase>& info) { return std::string(info.param.name); });

TEST(Lint, AcceptsProseThatMentionsBuildsAsFacts) {
  // "a CPU-only build" of the user's torch is a fact about their error, and
  // "todos" inside a word is no marker.
  const auto ps = lint(*catalog_from(file_yaml(entry_with_cause(
      "lib.fact", "cause", "The installed torch is a CPU-only build; the photodosimeter is unrelated."))));
  EXPECT_FALSE(has_problem(ps, "lib.fact", "authoring note")) << all(ps);
}

TEST(Lint, RefusesACauseWhoseFirstSentenceIsLongerThanAListLine) {
  const std::string clause = "the kernel has no variant for this head size, ";
  std::string long_first;
  while (long_first.size() < 250) long_first += clause;
  long_first += "so it refuses. Then more.";
  const auto ps = lint(*catalog_from(file_yaml(
      entry_with_cause("lib.long", "cause", long_first) +
      entry_with_cause("lib.short", "cause", "The kernel has no variant for this head size. " + long_first))));
  EXPECT_TRUE(has_problem(ps, "lib.long", "first sentence takes")) << all(ps);
  EXPECT_FALSE(has_problem(ps, "lib.short", "first sentence takes")) << all(ps);
}

}  // namespace
}  // namespace errshim
