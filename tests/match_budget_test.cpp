// The per-message step budget (MatchOptions::max_steps): deterministic,
// counted in regex steps, so these tests assert behaviour, not time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <errshim/catalog.hpp>
#include <errshim/normalize.hpp>

#include "pattern_risk.hpp"
#include "test_catalogs.hpp"

namespace errshim {
namespace {

using testing::catalog_from;
using testing::entry_yaml;
using testing::file_yaml;

// A raw pattern that backtracks exponentially on "aaa...a!".
std::string runaway(const std::string& id) {
  std::string y = entry_yaml(id, "x", "    priority: 1\n");
  y.replace(y.find("template: 'x'"), 13, "pattern: '(a+)+$'");
  y.replace(y.find("match: ['x']"), 12, "match: ['aa']");
  return y;
}

std::size_t count(const std::vector<std::string>& problems, const std::string& what) {
  std::size_t n = 0;
  for (const std::string& p : problems) n += p.find(what) != std::string::npos;
  return n;
}

const std::string kTrap = std::string(40, 'a') + "!";

TEST(MatchBudget, WhenItRunsOutMatchingStopsAndTheBestHitSoFarStands) {
  std::string entries = entry_yaml("lib.good", "alpha failed");
  for (const char* id : {"lib.r1", "lib.r2", "lib.r3", "lib.r4", "lib.r5"}) entries += runaway(id);
  const CatalogPtr cat = catalog_from(file_yaml(entries));
  MatchOptions options;
  options.max_steps = 40'000;
  const MatchResult r = cat->match("alpha failed\n" + kTrap, {}, options);
  ASSERT_TRUE(r.diagnosis) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.diagnosis->id(), "lib.good");
  // Three runaways give up on their quarter each; the fourth uses up the rest.
  EXPECT_EQ(count(r.problems, "gave up on this message"), 3u) << ::testing::PrintToString(r.problems);
  ASSERT_EQ(count(r.problems, "budget exhausted"), 1u) << ::testing::PrintToString(r.problems);
  EXPECT_NE(r.problems.back().find("budget exhausted: matching stopped after 40000 regex steps"), std::string::npos)
      << r.problems.back();
  EXPECT_EQ(count(r.problems, "'lib.r5'"), 0u) << "nothing runs once the budget is spent";
  EXPECT_EQ(r.steps, 40'000u);
}

// A template that opens with a placeholder ("{op}: dimension index {dim}
// ..."), on a long line that repeats its first literal but never completes:
// unanchored, the run was tried again from every position of the line, and
// Boost ran out of stack space at 4 KiB. Starting only at the line start or
// right after the literal, it stays linear: no entry gives up.
TEST(MatchBudget, ATemplateOpeningWithAPlaceholderDoesNotRetryEveryPositionOfALongLine) {
  const CatalogPtr cat =
      catalog_from(file_yaml(entry_yaml("lib.dim", "{op}: dimension index {dim} out of range for shape {shape}",
                                        "    capture_patterns: {dim: '-?[0-9]+', shape: '\\[[0-9, ]*\\]'}\n")));
  std::string line;
  while (line.size() < 64 * 1024) line += "narrow: dimension index 1 out of range for shape 1[1";
  MatchOptions options;
  options.max_steps = 4'000'000;
  const MatchResult r = cat->match(line, {}, options);
  EXPECT_FALSE(r.diagnosis);
  EXPECT_TRUE(r.problems.empty()) << ::testing::PrintToString(r.problems);
  EXPECT_LT(r.steps, 20 * line.size()) << "work linear in the line";
  const MatchResult hit = cat->match("narrow: dimension index 3 out of range for shape [2, 4]");
  ASSERT_TRUE(hit.diagnosis);
  EXPECT_EQ(hit.diagnosis->id(), "lib.dim");
}

TEST(MatchBudget, IsDeterministic) {
  std::string entries = entry_yaml("lib.good", "alpha failed");
  for (const char* id : {"lib.r1", "lib.r2"}) entries += runaway(id);
  const CatalogPtr cat = catalog_from(file_yaml(entries));
  MatchOptions options;
  options.max_steps = 30'000;
  const MatchResult a = cat->match(kTrap + "\nalpha failed", {}, options);
  const MatchResult b = cat->match(kTrap + "\nalpha failed", {}, options);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.problems, b.problems);
  EXPECT_LE(a.steps, options.max_steps);
}

TEST(MatchBudget, ARunawayEntryTakesAQuarterAndTheOthersStillMatch) {
  const CatalogPtr cat = catalog_from(file_yaml(runaway("lib.evil") + entry_yaml("lib.fine", "fine words")));
  const MatchResult r = cat->match(kTrap + "\nfine words");
  ASSERT_TRUE(r.diagnosis);
  EXPECT_EQ(r.diagnosis->id(), "lib.fine");
  EXPECT_EQ(count(r.problems, "entry 'lib.evil' gave up on this message"), 1u) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(count(r.problems, "budget exhausted"), 0u);
  EXPECT_LE(r.steps, MatchOptions{}.max_steps / 4 + 1000);
}

TEST(MatchBudget, ANoughtBudgetSearchesNothing) {
  const CatalogPtr cat = catalog_from(file_yaml(entry_yaml("lib.good", "alpha failed")));
  MatchOptions options;
  options.max_steps = 0;
  const MatchResult r = cat->match("alpha failed", {}, options);
  EXPECT_FALSE(r.diagnosis);
  EXPECT_EQ(count(r.problems, "budget exhausted"), 1u) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.steps, 0u);
  EXPECT_TRUE(cat->match("alpha failed").diagnosis) << "the default budget matches it";
}

// A polynomial raw pattern (lazy runs between literals) on its near miss.
TEST(MatchBudget, APolynomialUserPatternGivesUpOnItsNearMissWithinTheBudget) {
  std::string y = entry_yaml("user.poly", "x");
  y.replace(y.find("template: 'x'"), 13, "pattern: 'load (?<a>.+?) from (?<b>.+?) at (?<c>.+?) done'");
  y.replace(y.find("match: ['x']"), 12, "match: ['load a from b at c done']");
  const CatalogPtr cat = catalog_from(file_yaml(y + entry_yaml("lib.fine", "fine words")));
  std::string near = "load 1";
  while (near.size() < 16 * 1024) near += " from 1 at 1";
  const MatchResult r = cat->match("fine words\n" + near);
  ASSERT_TRUE(r.diagnosis);
  EXPECT_EQ(r.diagnosis->id(), "lib.fine");
  EXPECT_EQ(count(r.problems, "entry 'user.poly' gave up"), 1u) << ::testing::PrintToString(r.problems);
  EXPECT_LE(r.steps, MatchOptions{}.max_steps);
}

TEST(MatchBudget, AMebibyteOfShippedNearMissesNeedsATenthOfTheDefault) {
  const CatalogPtr cat = Catalog::embedded();
  std::vector<std::string> lines;
  for (const char* id : {"candle.sdpa.unsupported_head_dim", "candle.sdpa.unsupported_use_case",
                         "candle.cpu_flash.varlen_dtype_mismatch", "transformers.cache.encoder_decoder_not_dynamic",
                         "transformers.attention.flash_attention_compute_capability"}) {
    const Entry* e = cat->find(id);
    ASSERT_NE(e, nullptr) << id;
    lines.push_back(detail::near_misses(*e, 16 * 1024 - 16).back());  // the middle repeated, the last left out
  }
  // A Rust "Caused by:" chain makes each line a message of its own (each
  // one different: repeated causes are matched once).
  std::string message = "Error: " + lines[0] + "\n\nCaused by:\n";
  for (std::size_t i = 0; message.size() < (1u << 20); ++i) {
    const std::string n = std::to_string(i);  // right-aligned, as anyhow prints them
    message += std::string(6 - n.size(), ' ') + n + ": " + n + " " + lines[i % lines.size()] + "\n";
  }
  const Normalized norm = normalize(message);
  ASSERT_GE(norm.segments.size(), kMaxSegments - 1);
  for (const Segment& seg : norm.segments) ASSERT_GT(seg.text.size(), 16000u);
  const MatchResult r = cat->match(message);
  EXPECT_EQ(count(r.problems, "gave up"), 0u) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(count(r.problems, "budget exhausted"), 0u);
  EXPECT_LT(r.steps, MatchOptions{}.max_steps / 10);
}

TEST(MatchBudget, EveryShippedMatchExampleNeedsATenthOfTheDefault) {
  const CatalogPtr cat = Catalog::embedded();
  for (const auto& e : cat->entries())
    for (const MatchExample& ex : e->match_examples) {
      const MatchResult r = cat->match(ex.text, ex.context);
      EXPECT_LT(r.steps, MatchOptions{}.max_steps / 10) << e->id << ": " << ex.text;
      EXPECT_EQ(count(r.problems, "budget exhausted"), 0u) << e->id;
    }
}

}  // namespace
}  // namespace errshim
