// Loading catalog YAML: every kind of bad input is reported with its file,
// line, column and entry id; a catalog with any problem is never built.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <errshim/catalog.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

using testing::catalog_from;
using testing::entry_yaml;
using testing::file_yaml;

// The problems a YAML text produces, or an empty list if it loads.
std::vector<Problem> problems_of(const std::string& yaml) {
  try {
    catalog_from(yaml);
  } catch (const catalog_error& e) {
    return e.problems();
  }
  return {};
}

::testing::AssertionResult has_problem(const std::vector<Problem>& ps, const std::string& fragment, int line = 0,
                                       const std::string& entry = "") {
  std::string all;
  for (const Problem& p : ps) {
    all += p.to_string() + "\n";
    if (p.message.find(fragment) == std::string::npos) continue;
    if (line && p.where.line != line) continue;
    if (!entry.empty() && p.entry_id != entry) continue;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no problem containing '" << fragment << "' (line " << line << ", entry '"
                                       << entry << "') in:\n"
                                       << all;
}

TEST(CatalogLoader, LoadsAValidEntryWithAllFields) {
  const auto cat = catalog_from(file_yaml(
      "  - id: lib.area.name\n"
      "    template: 'bad head dim {q_head}: q dims {:?}'\n"
      "    captures: [q_dims]\n"
      "    source: {path: src/ops.rs, line: 1098, symbol: Sdpa::fwd}\n"
      "    also_at: [{path: src/ops.rs, line: 1200}]\n"
      "    error_class: candle::Error::Msg\n"
      "    kind: unsupported-feature\n"
      "    severity: fatal\n"
      "    cause: what it means\n"
      "    trigger: what does it\n"
      "    remediation:\n"
      "      - text: first\n"
      "        fix: {set: {kv_cache_enabled: false, cache_implementation: dynamic, kv_repeat: 1, dtype: 'true'},\n"
      "              safety: slower, reason: same output}\n"
      "      - text: second\n"
      "        fix: {action: fallback-manual-attention, safety: safe}\n"
      "    tags: [a, b]\n"
      "    priority: 3\n"
      "    unless: ['never here']\n"
      "    examples:\n"
      "      match:\n"
      "        - text: 'bad head dim 48: q dims [1, 2]'\n"
      "          captures: {q_head: '48', q_dims: '[1, 2]'}\n"
      "      no_match: ['bad head dim']\n"));
  ASSERT_EQ(cat->size(), 1u);
  const Entry* e = cat->find("lib.area.name");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->source.repo, "example/repo");  // from the file's defaults
  EXPECT_EQ(e->source.commit, "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(e->source.line, 1098);
  EXPECT_EQ(e->source.symbol, "Sdpa::fwd");
  ASSERT_EQ(e->also_at.size(), 1u);
  EXPECT_EQ(e->also_at[0].line, 1200);
  EXPECT_EQ(e->also_at[0].repo, "example/repo");
  EXPECT_EQ(e->library, "test");
  EXPECT_EQ(e->severity, "fatal");
  EXPECT_EQ(e->priority, 3);
  EXPECT_EQ(e->capture_names, (std::vector<std::string>{"q_head", "q_dims"}));
  ASSERT_EQ(e->remediation.size(), 2u);
  ASSERT_TRUE(e->remediation[0].fix);
  const Fix& f = *e->remediation[0].fix;
  EXPECT_EQ(f.safety, Safety::slower);
  ASSERT_EQ(f.set.size(), 4u);
  EXPECT_EQ(f.set[0].first, "kv_cache_enabled");
  EXPECT_EQ(f.set[0].second, (Value{Value::Type::boolean, "false"}));
  EXPECT_EQ(f.set[1].second, (Value{Value::Type::string, "dynamic"}));
  EXPECT_EQ(f.set[2].second, (Value{Value::Type::integer, "1"}));
  EXPECT_EQ(f.set[3].second, (Value{Value::Type::string, "true"}));  // quoted stays text
  EXPECT_EQ(e->remediation[1].fix->action, "fallback-manual-attention");
  ASSERT_EQ(e->match_examples.size(), 1u);
  EXPECT_EQ(e->match_examples[0].captures.size(), 2u);
  EXPECT_EQ(e->match_examples[0].where.line, 26);
}

TEST(CatalogLoader, ReportsUnknownKeyWithPositionEntryAndSuggestion) {
  const auto ps = problems_of(file_yaml(entry_yaml("lib.a", "boom", "    cuase: typo\n")));
  // The entry starts on line 5; the extra key sits after its 11 lines.
  ASSERT_TRUE(has_problem(ps, "unknown entry key 'cuase' (did you mean 'cause'?)", 16, "lib.a"));
  EXPECT_EQ(ps[0].where.column, 5);
  EXPECT_EQ(ps[0].where.file, "test.yaml");
  EXPECT_EQ(ps[0].to_string(), "test.yaml:16:5: entry 'lib.a': unknown entry key 'cuase' (did you mean 'cause'?)");
}

TEST(CatalogLoader, ReportsEachMissingRequiredKey) {
  const auto ps = problems_of(file_yaml("  - id: lib.a\n    template: boom\n"));
  for (const char* key : {"'source'", "'error_class'", "'kind'", "'cause'", "'trigger'", "'examples'"})
    EXPECT_TRUE(has_problem(ps, key, 5, "lib.a"));
  EXPECT_TRUE(has_problem(ps, "'remediation' must list at least one step"));
}

TEST(CatalogLoader, ReportsMissingTemplateAndPattern) {
  std::string y = entry_yaml("lib.a", "boom");
  y.erase(y.find("    template:"), std::string("    template: 'boom'\n").size());
  EXPECT_TRUE(has_problem(problems_of(file_yaml(y)), "missing required key 'template'", 5, "lib.a"));
}

TEST(CatalogLoader, ReportsDuplicateIdWithBothPlaces) {
  const auto ps = problems_of(file_yaml(entry_yaml("lib.a", "one") + entry_yaml("lib.a", "two")));
  EXPECT_TRUE(has_problem(ps, "duplicate id (first defined at 5:5)", 16, "lib.a"));
}

TEST(CatalogLoader, ReportsDuplicateIdAcrossFilesOfOneFolder) {
  const auto dir = std::filesystem::temp_directory_path() / "errshim_dup_ids";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.yaml") << file_yaml(entry_yaml("lib.a", "one"));
  std::ofstream(dir / "b.yaml") << file_yaml(entry_yaml("lib.a", "two"));
  try {
    CatalogBuilder().add_path(dir).build();
    FAIL() << "duplicate ids across a folder must not load";
  } catch (const catalog_error& e) {
    EXPECT_TRUE(has_problem(e.problems(), "duplicate id (first defined at " + (dir / "a.yaml").string() + ":5:5)"));
    EXPECT_EQ(e.problems()[0].where.file, (dir / "b.yaml").string());
  }
  std::filesystem::remove_all(dir);
}

TEST(CatalogLoader, ReportsUnbalancedTemplatePlaceholder) {
  const auto ps = problems_of(file_yaml(entry_yaml("lib.a", "q dims {:? and more")));
  EXPECT_TRUE(has_problem(ps, "template (at character 8)", 6, "lib.a"));
}

TEST(CatalogLoader, ReportsRegexThatDoesNotCompile) {
  std::string y = entry_yaml("lib.a", "x");
  y.replace(y.find("template: 'x'"), 13, "pattern: 'bad (group'");
  y.replace(y.find("match: ['x']"), 12, "match: ['bad (group']");
  const auto ps = problems_of(file_yaml(y));
  EXPECT_TRUE(has_problem(ps, "pattern does not compile", 5, "lib.a"));
}

TEST(CatalogLoader, ReportsInvalidYamlWithPosition) {
  const auto ps = problems_of("schema: 1\nentries:\n  - id: [unclosed\n");
  ASSERT_FALSE(ps.empty());
  EXPECT_TRUE(has_problem(ps, "not valid YAML"));
  EXPECT_GT(ps[0].where.line, 0);
}

TEST(CatalogLoader, RejectsMissingOrUnknownSchema) {
  EXPECT_TRUE(has_problem(problems_of("entries: []\n"), "missing 'schema: 1'"));
  EXPECT_TRUE(has_problem(problems_of("schema: 7\nentries: []\n"), "schema 7 is not supported", 1));
}

TEST(CatalogLoader, RejectsBadValuesOfKnownKeys) {
  const auto ps = problems_of(file_yaml(entry_yaml("Lib.Bad Id", "boom",
                                                   "    severity: loud\n"
                                                   "    priority: high\n")));
  EXPECT_TRUE(has_problem(ps, "must be dotted lower-case words"));
  EXPECT_TRUE(has_problem(ps, "unknown severity 'loud'"));
  EXPECT_TRUE(has_problem(ps, "priority must be a whole number, got 'high'"));
}

TEST(CatalogLoader, RejectsFixWithoutSafetyOrWithUnknownSafety) {
  std::string y = entry_yaml("lib.a", "boom");
  y.replace(
      y.find("      - text: r\n"), 16,
      "      - text: r\n        fix: {set: {k: 1}}\n      - text: s\n        fix: {set: {k: 2}, safety: risky}\n");
  const auto ps = problems_of(file_yaml(y));
  EXPECT_TRUE(has_problem(ps, "fix has no 'safety'", 14, "lib.a"));
  EXPECT_TRUE(has_problem(ps, "unknown safety 'risky'", 16, "lib.a"));
}

TEST(CatalogLoader, RejectsExampleCaptureThePatternLacks) {
  std::string y = entry_yaml("lib.a", "dim {d}");
  y.replace(y.find("match: ['dim {d}']"), 18, "match: [{text: 'dim 4', captures: {e: '4'}}]");
  EXPECT_TRUE(has_problem(problems_of(file_yaml(y)), "expects capture 'e', which the pattern does not have"));
}

// One step whose fix is `fix` (a flow mapping), in an entry of `tmpl`.
std::string entry_with_fix(const std::string& tmpl, const std::string& fix) {
  std::string y = entry_yaml("lib.fix", tmpl);
  y.replace(y.find("      - text: r\n"), 16, "      - text: r\n        fix: " + fix + "\n      - text: s\n");
  return file_yaml(y);
}

// A key that names no path used to load, then made choose_fix throw when the
// step came up, so the steps after it were never tried.
TEST(CatalogLoader, RejectsFixKeyPathsThatNameNothing) {
  for (const char* key : {"generation..num_beams", ".num_beams", "num_beams.", "num beams"}) {
    SCOPED_TRACE(key);
    const auto ps = problems_of(entry_with_fix("boom", std::string("{set: {'") + key + "': 1}, safety: safe}"));
    EXPECT_TRUE(has_problem(ps, std::string("key '") + key + "'", 14, "lib.fix"));
  }
  EXPECT_TRUE(has_problem(problems_of(entry_with_fix("boom", "{remove: ['a..b'], safety: safe}")),
                          "fix.remove: key 'a..b'", 14, "lib.fix"));
  EXPECT_TRUE(has_problem(problems_of(entry_with_fix("boom", "{set: {a: 1}, conflicts: {'': 1}, safety: safe}")),
                          "fix.conflicts: the key is empty", 14, "lib.fix"));
  EXPECT_TRUE(problems_of(entry_with_fix("boom", "{set: {generation_config.num_beams: 1}, safety: safe}")).empty());
}

TEST(CatalogLoader, RejectsFixValueNamingACaptureThePatternLacks) {
  const auto ps = problems_of(entry_with_fix("dim {d}", "{set: {num_heads: '{e}'}, safety: safe}"));
  EXPECT_TRUE(has_problem(ps, "fix.set.num_heads uses capture 'e', which the pattern does not have (it has: d)", 14,
                          "lib.fix"));
  EXPECT_TRUE(has_problem(problems_of(entry_with_fix("dim {d}", "{set: {num_heads: '{d:weird}'}, safety: safe}")),
                          "unknown conversion 'weird'", 14, "lib.fix"));
}

TEST(CatalogLoader, ReportsEveryProblemInOneRunNotJustTheFirst) {
  const auto ps = problems_of(file_yaml(entry_yaml("lib.a", "x {", "    cuase: 1\n") + entry_yaml("lib.b", "y }")));
  EXPECT_TRUE(has_problem(ps, "template", 0, "lib.a"));
  EXPECT_TRUE(has_problem(ps, "cuase", 0, "lib.a"));
  EXPECT_TRUE(has_problem(ps, "template", 0, "lib.b"));
}

TEST(CatalogLoader, NothingHalfLoadedIsReturned) {
  // One good entry and one bad: build() must throw rather than return the good one.
  EXPECT_THROW(catalog_from(file_yaml(entry_yaml("lib.good", "fine") + entry_yaml("lib.bad", "broken {"))),
               catalog_error);
}

TEST(CatalogLoader, MissingPathIsAProblem) {
  try {
    CatalogBuilder().add_path("/nonexistent/errshim/catalog.yaml").build();
    FAIL();
  } catch (const catalog_error& e) {
    EXPECT_TRUE(has_problem(e.problems(), "no such catalog file or folder"));
  }
}

TEST(CatalogLoader, LaterLayerOverridesEntryById) {
  const auto cat =
      CatalogBuilder()
          .add_yaml(file_yaml(entry_yaml("lib.a", "first text") + entry_yaml("lib.b", "other")), "base.yaml")
          .add_yaml(file_yaml(entry_yaml("lib.a", "second text")), "user.yaml")
          .build();
  ASSERT_EQ(cat->size(), 2u);
  EXPECT_EQ(cat->entries()[0]->id, "lib.a");  // keeps its place
  EXPECT_EQ(cat->entries()[0]->template_text, "second text");
  EXPECT_EQ(cat->entries()[0]->where.file, "user.yaml");
  EXPECT_FALSE(cat->diagnose("first text"));
  EXPECT_TRUE(cat->diagnose("second text"));
}

TEST(CatalogLoader, EmbeddedCatalogLoadsWithoutFiles) {
  const auto cat = Catalog::embedded();
  ASSERT_GT(cat->size(), 0u);
  EXPECT_EQ(cat.get(), Catalog::embedded().get());  // built once, shared
  for (const auto& e : cat->entries()) EXPECT_EQ(e->where.file.rfind("patterns/", 0), 0u) << e->where.file;
}

}  // namespace
}  // namespace errshim
