// Matching: search inside the message, the winner rule, `unless`, and bounded
// work that reports instead of throwing.
#include <gtest/gtest.h>

#include <array>

#include <errshim/catalog.hpp>

#include "matcher.hpp"
#include "template.hpp"
#include "test_catalogs.hpp"

namespace errshim {
namespace {

using testing::catalog_from;
using testing::entry_yaml;
using testing::file_yaml;

TEST(Matcher, SearchesInsideTheMessageNotFullMatch) {
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.a", "is not supported here")));
  const auto d = cat->diagnose("prefix: feature X is not supported here, sorry");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "lib.a");
  EXPECT_EQ(d->matched, "is not supported here");
}

TEST(Matcher, UnknownMessageIsNotMatched) {
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.a", "is not supported here")));
  EXPECT_FALSE(cat->diagnose("everything is fine"));
}

TEST(Matcher, MoreSpecificEntryWinsWhenPrioritiesTie) {
  // Both match; the longer literal text is the more specific explanation.
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.generic", "is not supported") +
                                          entry_yaml("lib.specific", "sliding window is not supported")));
  EXPECT_EQ(cat->diagnose("sliding window is not supported")->id(), "lib.specific");
}

TEST(Matcher, ExplicitPriorityBeatsSpecificity) {
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.generic", "is not supported", "    priority: 5\n") +
                                          entry_yaml("lib.specific", "sliding window is not supported")));
  EXPECT_EQ(cat->diagnose("sliding window is not supported")->id(), "lib.generic");
}

TEST(Matcher, RootCauseSegmentWinsATieOverTheOuterError) {
  const auto cat = catalog_from(
      file_yaml(entry_yaml("lib.outer", "failed to load aaaa") + entry_yaml("lib.inner", "cache is disabled x")));
  // Same literal length; the Caused-by root cause wins.
  const auto d = cat->diagnose("Error: failed to load aaaa\n\nCaused by:\n    0: cache is disabled x\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "lib.inner");
}

TEST(Matcher, IdBreaksAFullTieDeterministically) {
  const auto cat =
      catalog_from(file_yaml(entry_yaml("lib.zeta", "same words") + entry_yaml("lib.alpha", "same words")));
  EXPECT_EQ(cat->diagnose("same words")->id(), "lib.alpha");
}

TEST(Matcher, UnlessVetoesTheEntry) {
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.a", "shape mismatch in cat", "    unless: ['for dim 0']\n")));
  EXPECT_TRUE(cat->diagnose("shape mismatch in cat for dim 2"));
  EXPECT_FALSE(cat->diagnose("shape mismatch in cat for dim 0"));
}

TEST(Matcher, CapturesAreNamedAndTrimmed) {
  const auto cat =
      catalog_from(file_yaml("  - id: lib.a\n"
                             "    template: 'unsupported sdpa type {other:?}'\n"
                             "    source: {path: a.rs, line: 1}\n"
                             "    error_class: E\n    kind: validation\n    cause: c\n    trigger: t\n"
                             "    remediation: [{text: r}]\n"
                             "    examples: {match: ['unsupported sdpa type U8']}\n"));
  const auto d = cat->diagnose("Error: unsupported sdpa type U8   \n");
  ASSERT_TRUE(d);
  ASSERT_NE(d->capture("other"), nullptr);
  EXPECT_EQ(*d->capture("other"), "U8");
  EXPECT_EQ(d->capture("nothing"), nullptr);
}

// A capture is read by its group number, worked out when the regex
// compiles; a name two groups share is read by name, from the group that
// took part, as Boost does.
TEST(Matcher, CapturesComeFromTheGroupThatTookPart) {
  std::string y = entry_yaml("lib.either", "x");
  y.replace(y.find("template: 'x'"), 13, R"(pattern: 'got (?:(?<n>\d+) items|(?<n>\d+) rows) from (?<src>\w+)')");
  y.replace(y.find("match: ['x']"), 12, "match: ['got 3 items from a']");
  const auto cat = catalog_from(file_yaml(y));
  for (const auto& [message, n] : {std::pair<std::string, std::string>{"got 3 items from disk", "3"},
                                   std::pair<std::string, std::string>{"got 7 rows from disk", "7"}}) {
    const auto d = cat->diagnose(message);
    ASSERT_TRUE(d) << message;
    ASSERT_NE(d->capture("n"), nullptr) << message;
    EXPECT_EQ(*d->capture("n"), n) << message;
    ASSERT_NE(d->capture("src"), nullptr);
    EXPECT_EQ(*d->capture("src"), "disk");
  }
}

TEST(Matcher, CatastrophicPatternBecomesNoMatchWithAReport) {
  // Nested quantifiers on a long non-matching input: Boost gives up; the
  // host sees "no match" plus a report, and other entries still work.
  std::string y = entry_yaml("lib.evil", "x");
  y.replace(y.find("template: 'x'"), 13, "pattern: '(a+)+b'");
  y.replace(y.find("match: ['x']"), 12, "match: ['aab']");
  const auto cat = catalog_from(file_yaml(y + entry_yaml("lib.fine", "fine words")));
  const MatchResult r = cat->match(std::string(4000, 'a') + " fine words");
  ASSERT_TRUE(r.diagnosis);
  EXPECT_EQ(r.diagnosis->id(), "lib.fine");
  ASSERT_FALSE(r.problems.empty());
  EXPECT_NE(r.problems[0].find("entry 'lib.evil' gave up"), std::string::npos) << r.problems[0];
}

TEST(Matcher, OversizedInputIsCutAndReported) {
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.a", "kv_cache_enabled=true is not supported")));
  std::string huge = "Error: kv_cache_enabled=true is not supported\n" + std::string(3u << 20, 'z');
  const MatchResult r = cat->match(huge);
  ASSERT_TRUE(r.diagnosis);
  EXPECT_LE(r.diagnosis->raw.size(), kMaxInputBytes);
  ASSERT_FALSE(r.problems.empty());
}

TEST(Matcher, ClaimsIgnoresRivalsButHonoursUnless) {
  const auto cat =
      catalog_from(file_yaml(entry_yaml("lib.generic", "is not supported") +
                             entry_yaml("lib.specific", "window is not supported", "    unless: ['sliding']\n")));
  EXPECT_TRUE(cat->claims("lib.generic", "window is not supported"));
  EXPECT_TRUE(cat->claims("lib.specific", "window is not supported"));
  EXPECT_FALSE(cat->claims("lib.specific", "sliding window is not supported"));
  EXPECT_FALSE(cat->claims("lib.unknown", "window is not supported"));
  using Ids = std::vector<std::string_view>;
  EXPECT_EQ(cat->claimants("window is not supported"), (Ids{"lib.generic", "lib.specific"}));
  EXPECT_EQ(cat->claimants("sliding window is not supported"), (Ids{"lib.generic"}));
  EXPECT_EQ(cat->claimants("nothing here"), Ids{});
}

// A catalog of raw patterns (source text as YAML single-quoted scalars).
CatalogPtr raw_catalog(const std::vector<std::array<std::string, 3>>& id_pattern_example) {
  std::string y;
  for (const auto& [id, pattern, example] : id_pattern_example) {
    std::string e = entry_yaml(id, "x");
    e.replace(e.find("template: 'x'"), 13, "pattern: '" + pattern + "'");
    e.replace(e.find("match: ['x']"), 12, "match: ['" + example + "']");
    y += e;
  }
  return catalog_from(file_yaml(y));
}

// The prefilter starts Boost late (near the literal) and, for single-line
// patterns, searches only the lines holding the literal: anchors, word
// edges and look-behind must still see the text around, and the leftmost
// match must stay the naive loop's.
TEST(Matcher, StartingNearTheLiteralKeepsAnchorsEdgesAndLookBehind) {
  const auto cat = raw_catalog({{"lib.anchored", "^cache is full", "cache is full"},
                                {"lib.edge", "\\bshard lost (?<n>\\d+)", "shard lost 7"},
                                {"lib.behind", "(?<=\\[)E42\\] bad config", "[E42] bad config"},
                                {"lib.tail", "queue overflow at (?<at>\\w+)$", "queue overflow at b2"}});
  std::vector<Problem> problems;
  const detail::Matcher m(cat->entries(), problems);
  struct Case {
    std::string message, id, matched;
  };
  const std::vector<Case> cases = {
      {"note: the cache is full\ncache is full", "lib.anchored", "cache is full"},
      {"note: the cache is full, sadly", "", ""},
      {"reshard lost 3; shard lost 7", "lib.edge", "shard lost 7"},
      {"x E42] bad config [E42] bad config", "lib.behind", "E42] bad config"},
      {"queue overflow at a1 later\nqueue overflow at b2", "lib.tail", "queue overflow at b2"},
  };
  for (const Case& c : cases) {
    const MatchResult fast = m.match(c.message, {});
    const MatchResult naive = m.match_naive(c.message, {});
    ASSERT_EQ(fast.diagnosis.has_value(), !c.id.empty()) << c.message;
    ASSERT_EQ(naive.diagnosis.has_value(), !c.id.empty()) << c.message;
    if (c.id.empty()) continue;
    EXPECT_EQ(fast.diagnosis->id(), c.id);
    EXPECT_EQ(fast.diagnosis->matched, c.matched) << c.message;
    EXPECT_EQ(naive.diagnosis->matched, c.matched) << c.message;
    EXPECT_EQ(fast.diagnosis->captures, naive.diagnosis->captures) << c.message;
  }
}

TEST(Matcher, LeftmostMatchWhenTheLiteralFirstOccursWhereNoMatchIs) {
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.a", "q dims {q} must match k dims {k}")));
  std::vector<Problem> problems;
  const detail::Matcher m(cat->entries(), problems);
  // The literal " must match k dims " first occurs on a line where the
  // regex fails; the match is two lines down.
  const std::string msg = "must match k dims only\nnothing here\nq dims [1, 2] must match k dims [3]";
  const MatchResult fast = m.match(msg, {});
  ASSERT_TRUE(fast.diagnosis);
  EXPECT_EQ(fast.diagnosis->matched, "q dims [1, 2] must match k dims [3]");
  EXPECT_EQ(fast.diagnosis->captures, m.match_naive(msg, {}).diagnosis->captures);
}

TEST(Matcher, TemplatesCompileOnFirstUseAndAllForLint) {
  const auto cat =
      catalog_from(file_yaml(entry_yaml("lib.a", "only {n} heads here") + entry_yaml("lib.b", "cannot map {x}")));
  EXPECT_TRUE(cat->compile_all().empty());
  std::vector<Problem> problems;
  const detail::Matcher m(cat->entries(), problems);
  EXPECT_EQ(m.stats().compiled, 0u);
  EXPECT_TRUE(m.match("cannot map q_proj", {}).diagnosis);
  EXPECT_EQ(m.stats().compiled, 1u);  // the only candidate
  EXPECT_TRUE(m.compile_all().empty());
  EXPECT_EQ(m.stats().compiled, 2u);
}

// The nested-claim rule reads which captures take free text from what the
// matcher worked out when each regex compiled; it must say what
// free_text_capture() says of every capture.
TEST(Matcher, KnowsWhichCapturesTakeFreeTextAsTheEntrySays) {
  errshim::CatalogBuilder b;
  b.add_embedded();
  const auto cat = b.build();
  std::vector<Problem> problems;
  const detail::Matcher m(cat->entries(), problems);
  // Templates compile lazily: free_text() compiles what it asks of.
  EXPECT_LT(m.stats().compiled, cat->entries().size());
  std::size_t free = 0, typed = 0;
  for (std::size_t i = 0; i < cat->entries().size(); ++i) {
    const Entry& e = *cat->entries()[i];
    for (std::size_t c = 0; c < e.capture_names.size(); ++c) {
      const bool expected = detail::free_text_capture(e, e.capture_names[c]);
      EXPECT_EQ(m.free_text(i, c), expected) << e.id << " capture " << e.capture_names[c];
      ++(expected ? free : typed);
    }
    EXPECT_FALSE(m.free_text(i, e.capture_names.size())) << e.id << ": no such capture";
  }
  EXPECT_GT(free, 0u);  // both kinds occur, so a constant answer fails
  EXPECT_GT(typed, 0u);
  EXPECT_TRUE(m.compile_all().empty());
}

// The index views its keys; a plan whose keys view its caller's bytes is
// copied, so the caller may free them once the matcher is built.
TEST(Matcher, APlanViewingItsCallersBytesOutlivesThem) {
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.a", "head dim {} is not supported here") +
                                          entry_yaml("lib.b", "kv cache of {} layers is full")));
  std::vector<std::shared_ptr<const Entry>> entries(cat->entries().begin(), cat->entries().end());
  detail::MatchPlan plan = detail::plan_matching(entries);
  // Every view a key holds (its text and its second literal) moves to the
  // caller's bytes before the plan's own block goes.
  auto caller = std::make_unique<std::string>();
  for (const detail::MatchPlan::Item& item : plan.items)
    *caller += std::string(item.key.text) + "|" + std::string(item.key.also) + "|";
  std::size_t at = 0;
  for (detail::MatchPlan::Item& item : plan.items) {
    ASSERT_FALSE(item.key.text.empty());
    for (std::string_view* s : {&item.key.text, &item.key.also}) {
      *s = std::string_view(*caller).substr(at, s->size());
      at += s->size() + 1;
    }
  }
  ASSERT_EQ(at, caller->size());
  plan.bytes = nullptr;
  std::vector<Problem> problems;
  const detail::Matcher m(entries, problems, plan);
  ASSERT_TRUE(problems.empty());
  std::fill(caller->begin(), caller->end(), '#');
  caller.reset();
  const MatchResult r = m.match("RuntimeError: kv cache of 32 layers is full", {});
  ASSERT_TRUE(r.diagnosis.has_value());
  EXPECT_EQ(r.diagnosis->id(), "lib.b");
}

// Near-duplicate templates share their most selective literal; each
// occurrence of it must not hand the whole group to the regexes. The plan
// is given, so the test pins the grouping whatever literals the catalog-wide
// choice would pick.
TEST(Matcher, ACrowdedKeyHandsOnlyMembersWhoseSecondLiteralOccurs) {
  std::string yaml;
  for (int k = 0; k < 40; ++k) {
    const std::string name = "option_k" + std::to_string(100 + k);
    yaml += entry_yaml("lib." + name, "cannot broadcast {} to {} for " + name);
  }
  const auto cat = catalog_from(file_yaml(yaml));
  auto matcher_with_plan = [&](std::size_t group) {
    std::vector<std::shared_ptr<const Entry>> entries(cat->entries().begin(), cat->entries().begin() + group);
    detail::MatchPlan plan = detail::plan_matching(entries);
    std::vector<std::string> also(group);
    for (std::size_t i = 0; i < group; ++i) {
      detail::MatchPlan::Key& key = plan.items[i].key;
      also[i] = " for option_k" + std::to_string(100 + i);
      key = {};
      key.text = "cannot broadcast ";
      key.also = also[i];
    }
    plan.hold_keys();
    std::vector<Problem> problems;
    auto m = std::make_unique<detail::Matcher>(entries, problems, plan);
    EXPECT_TRUE(problems.empty());
    return m;
  };
  auto expect_same = [](const detail::Matcher& m, const std::string& text, const char* want) {
    const MatchResult fast = m.match(text, {}), naive = m.match_naive(text, {});
    ASSERT_EQ(fast.diagnosis.has_value(), naive.diagnosis.has_value()) << text;
    EXPECT_EQ(fast.diagnosis ? fast.diagnosis->id() : "none", want) << text;
    if (naive.diagnosis) {
      EXPECT_EQ(naive.diagnosis->id(), want) << text;
    }
  };

  // A large group against few literals found: each found one looked up.
  const auto big = matcher_with_plan(40);
  EXPECT_EQ(big->literal(7), "cannot broadcast ");
  const std::string one = "error: cannot broadcast [2, 3] to [4] for option_k117";
  EXPECT_EQ(big->candidate_count(one), 1u);
  expect_same(*big, one, "lib.option_k117");
  const std::string two = "cannot broadcast [2] to [4] for option_k103 (also seen for option_k131)";
  EXPECT_EQ(big->candidate_count(two), 2u);
  expect_same(*big, two, "lib.option_k103");
  EXPECT_EQ(big->candidate_count("cannot broadcast [2] to [4] for option_x"), 0u);
  expect_same(*big, "cannot broadcast [2] to [4] for option_x", "none");
  // The second literal alone is no candidate either.
  EXPECT_EQ(big->candidate_count("value for option_k117 is bad"), 0u);

  // A small group against many literals found: each member checked.
  const auto small = matcher_with_plan(4);
  const std::string all =
      "seen for option_k100 for option_k101 for option_k102 for option_k103: cannot broadcast [1] to [2] for "
      "option_k102";
  EXPECT_EQ(small->candidate_count(all), 4u);
  expect_same(*small, all, "lib.option_k102");
  EXPECT_EQ(small->candidate_count("cannot broadcast [1] to [2] for option_k101"), 1u);
  expect_same(*small, "cannot broadcast [1] to [2] for option_k101", "lib.option_k101");
}

TEST(Matcher, BrokenRawPatternIsStillABuildProblem) {
  try {
    raw_catalog({{"lib.bad", "unclosed (group", "unclosed (group"}});
    FAIL() << "build() accepted a pattern that does not compile";
  } catch (const catalog_error& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_NE(e.problems()[0].message.find("pattern does not compile"), std::string::npos) << e.problems()[0].message;
  }
}

TEST(LiteralLength, CountsOnlyTextEveryMatchMustContain) {
  using detail::literal_length;
  EXPECT_EQ(literal_length("abc"), 3u);
  EXPECT_EQ(literal_length(R"(a\.b)"), 3u);
  EXPECT_EQ(literal_length(R"(dim (?<d>[^\n]+?) end)"), 8u);
  EXPECT_EQ(literal_length(R"(ab?c)"), 2u);
  EXPECT_EQ(literal_length(R"(\d+x)"), 1u);
}

TEST(LiteralLength, SkipsLookArounds) {
  // A tempered placeholder's look-ahead holds the next literal, which the
  // match holds once, after the run: counted once, not twice.
  using detail::literal_length;
  EXPECT_EQ(literal_length(R"(a(?!bc)d)"), 2u);
  EXPECT_EQ(literal_length(R"(x(?<a>(?:(?! end)[^\n])++) end)"), 5u);
  EXPECT_EQ(literal_length(R"((?<=\()q(?=[)]))"), 1u);
  EXPECT_EQ(literal_length(detail::compile_template("dim {d} end").regex), 8u);
}

TEST(Matcher, TemperedTemplatesStayLineLocalAndSearchOnlyWhereTheirLiteralsOccurInOrder) {
  std::vector<Problem> problems;
  const auto cat = catalog_from(file_yaml(entry_yaml("lib.a", "load {a} from {b} done")));
  const detail::Matcher m(cat->entries(), problems);
  EXPECT_EQ(m.stats().line_local, 1u) << "the look-aheads hold literals without a newline";
  // The last literal is missing: the regex never runs, so no step is spent.
  std::string near = "load 1";
  while (near.size() < 4096) near += " from 1";
  const MatchResult r = m.match(near, {});
  EXPECT_FALSE(r.diagnosis);
  EXPECT_EQ(r.steps, 0u);
  EXPECT_GT(m.match("load x from y done", {}).steps, 0u);
  EXPECT_EQ(*m.match("x load a from b done", {}).diagnosis->capture("b"), "b");
}

}  // namespace
}  // namespace errshim
