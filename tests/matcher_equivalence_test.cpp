// The prefiltered matcher gives exactly the naive loop's answer (every regex
// on every segment): same winning entry, captures, matched text and segment.
// Checked on the shipped catalog with every example in it, and on generated
// catalogs built to make several entries match one message (generic
// entries, priorities, `unless`, scopes, raw patterns the analysis gives up
// on, backreferences, multi-line placeholders), and on a large one whose
// near-duplicate templates share their literals.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <ostream>
#include <thread>

#include <errshim/catalog.hpp>

#include "support/synthetic_catalog.hpp"
#include "matcher.hpp"

namespace errshim {
namespace {

using detail::Matcher;

std::string describe(const MatchResult& r) {
  if (!r.diagnosis) return "no match";
  std::string s = r.diagnosis->id() + " matched '" + r.diagnosis->matched + "'";
  for (const Capture& c : r.diagnosis->captures) s += " " + c.name + "=" + c.value;
  return s;
}

// Returns false (with a failure) on any difference.
bool same(const MatchResult& fast, const MatchResult& naive, const std::string& message) {
  const bool equal =
      fast.diagnosis.has_value() == naive.diagnosis.has_value() &&
      (!fast.diagnosis ||
       (fast.diagnosis->entry == naive.diagnosis->entry && fast.diagnosis->captures == naive.diagnosis->captures &&
        fast.diagnosis->matched == naive.diagnosis->matched && fast.diagnosis->segment == naive.diagnosis->segment &&
        fast.diagnosis->exception_class == naive.diagnosis->exception_class &&
        fast.diagnosis->raw == naive.diagnosis->raw));
  EXPECT_TRUE(equal) << "message: " << message << "\n  prefiltered: " << describe(fast)
                     << "\n  naive:       " << describe(naive);
  return equal;
}

TEST(MatcherEquivalence, ShippedCatalogEveryExample) {
  const CatalogPtr cat = CatalogBuilder().add_path(ERRSHIM_SOURCE_DIR "/patterns").build();
  std::vector<Problem> problems;
  const Matcher m(cat->entries(), problems);
  ASSERT_TRUE(problems.empty());
  int compared = 0, matched = 0;
  const Context contexts[] = {Context{}, Context::parse("device=metal"), Context::parse("device=cuda")};
  for (const auto& e : cat->entries()) {
    for (const MatchExample& ex : e->match_examples) {
      for (const Context& ctx : {ex.context, contexts[1], contexts[2]}) {
        const MatchResult fast = m.match(ex.text, ctx);
        same(fast, m.match_naive(ex.text, ctx), ex.text);
        matched += fast.diagnosis.has_value();
        ++compared;
      }
    }
    for (const NoMatchExample& ex : e->no_match_examples) {
      for (const Context& ctx : contexts) same(m.match(ex.text, ctx), m.match_naive(ex.text, ctx), ex.text);
      ++compared;
    }
  }
  EXPECT_GT(compared, 50);
  EXPECT_GT(matched, 20);
  // Template regexes are no longer compiled by the template compiler: all
  // of them must compile here.
  EXPECT_TRUE(m.compile_all().empty());
  EXPECT_TRUE(cat->compile_all().empty());
}

struct Messages {
  std::vector<std::string> texts;
  std::vector<Context> contexts;
};

// Hits of one entry in every wrapping, misses, near misses (one byte
// changed), and two entries' messages on two lines of one segment.
Messages messages_for(const synth::SynthCatalog& cat, std::uint64_t seed, std::size_t count) {
  synth::Rng r(seed);
  Messages out;
  const Context contexts[] = {Context{}, Context::parse("device=metal"), Context::parse("device=cuda")};
  auto size = [&] {
    const std::size_t k = r.below(10);
    return k < 6 ? synth::Size::short_ : k < 9 ? synth::Size::medium : synth::Size::long_;
  };
  for (std::size_t i = 0; i < count; ++i) {
    const synth::SynthEntry& e = cat.entries[r.below(cat.entries.size())];
    std::string m = synth::message_for(e, r);
    switch (i % 5) {
      case 0:
      case 1: break;
      case 2: m = synth::unknown_message(r); break;
      case 3: m[r.below(m.size())] ^= 0x20; break;
      default: m += "\n" + synth::message_for(cat.entries[r.below(cat.entries.size())], r);
    }
    out.texts.push_back(synth::wrap(m, size(), r));
    out.contexts.push_back(contexts[r.below(3)]);
  }
  return out;
}

// A generated catalog of 2000 entries and 500 messages for it.
struct GeneratedCase {
  const char* name;  // the kind of catalog and its seed
  bool adversarial;  // the entry shapes built to make several entries match one message
  std::uint64_t seed;
};

std::ostream& operator<<(std::ostream& os, const GeneratedCase& c) { return os << c.name; }

class MatcherEquivalenceGenerated : public ::testing::TestWithParam<GeneratedCase> {};

TEST_P(MatcherEquivalenceGenerated, PrefilteredAnswerIsTheNaiveOne) {
  const bool adversarial = GetParam().adversarial;
  const std::uint64_t seed = GetParam().seed;
  const synth::SynthCatalog cat = synth::generate_catalog(2000, seed, adversarial);
  std::vector<Problem> problems;
  const Matcher m(synth::to_entries(cat), problems);
  ASSERT_TRUE(problems.empty()) << problems.front().to_string();
  const Messages msgs = messages_for(cat, seed + 100, 500);
  std::size_t matched = 0, candidates = 0, failures = 0;
  for (std::size_t i = 0; i < msgs.texts.size() && failures < 5; ++i) {
    const MatchResult fast = m.match(msgs.texts[i], msgs.contexts[i]);
    failures += !same(fast, m.match_naive(msgs.texts[i], msgs.contexts[i]), msgs.texts[i]);
    matched += fast.diagnosis.has_value();
    candidates += m.candidate_count(msgs.texts[i]);
  }
  const Matcher::Stats st = m.stats();
  std::printf(
      "[ info     ] %s catalog of %zu: %zu of %zu messages matched, %.2f candidates per message, "
      "%zu entries always checked\n",
      adversarial ? "adversarial" : "plain", st.entries, matched, msgs.texts.size(),
      static_cast<double>(candidates) / static_cast<double>(msgs.texts.size()), st.always_checked);
  EXPECT_GT(matched, msgs.texts.size() / 3);
  EXPECT_LT(matched, msgs.texts.size());
}

// Lint's overlap check asks claimants() for each example: it must name
// exactly the entries that claims() accepts, rivals and `unless` included.
TEST_P(MatcherEquivalenceGenerated, ClaimantsAreTheEntriesThatClaim) {
  const std::uint64_t seed = GetParam().seed;
  const synth::SynthCatalog cat = synth::generate_catalog(2000, seed, GetParam().adversarial);
  std::vector<Problem> problems;
  const Matcher m(synth::to_entries(cat), problems);
  ASSERT_TRUE(problems.empty()) << problems.front().to_string();
  const Messages msgs = messages_for(cat, seed + 100, 40);
  std::size_t shared = 0;  // messages more than one entry claims
  for (const std::string& text : msgs.texts) {
    std::vector<std::size_t> want;
    for (std::size_t k = 0; k < m.table().size(); ++k)
      if (m.claims(k, text)) want.push_back(k);
    EXPECT_EQ(m.claimants(text), want) << text;
    shared += want.size() > 1;
  }
  if (GetParam().adversarial) {
    EXPECT_GT(shared, 0u);
  }
}

const GeneratedCase kGeneratedCases[] = {
    {"AdversarialSeed1", true, 1},
    {"AdversarialSeed2", true, 2},
    {"PlainSeed3", false, 3},
};

INSTANTIATE_TEST_SUITE_P(MatcherEquivalence, MatcherEquivalenceGenerated, ::testing::ValuesIn(kGeneratedCases),
                         [](const ::testing::TestParamInfo<GeneratedCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(MatcherEquivalence, CrowdedKeysAtTwentyThousandEntries) {
  // At this size near-duplicate templates share their chosen literal, and
  // the index filters those groups by each member's second literal
  // (Matcher::collect). Messages for members of such groups, and near
  // misses of them, must get the naive loop's answer.
  const synth::SynthCatalog cat = synth::generate_catalog(20000, 5);
  const auto entries = synth::to_entries(cat);
  std::vector<Problem> problems;
  const Matcher m(entries, problems);
  ASSERT_TRUE(problems.empty()) << problems.front().to_string();
  const detail::MatchPlan plan = detail::plan_matching(entries);
  std::map<std::string_view, std::size_t> group;
  for (const auto& item : plan.items) ++group[item.key.text];
  std::vector<std::size_t> crowded;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& key = plan.items[i].key;
    if (!key.text.empty() && group[key.text] >= 4 && key.also.size() >= 11) crowded.push_back(i);
  }
  ASSERT_GT(crowded.size(), 200u);
  synth::Rng r(17);
  std::size_t matched = 0, failures = 0;
  for (int i = 0; i < 120 && failures < 5; ++i) {
    const synth::SynthEntry& e = cat.entries[crowded[r.below(crowded.size())]];
    std::string msg = synth::message_for(e, r);
    if (i % 3 == 1) msg[r.below(msg.size())] ^= 0x20;  // a near miss
    if (i % 3 == 2) msg += "\n" + synth::message_for(cat.entries[crowded[r.below(crowded.size())]], r);
    msg = synth::wrap(msg, synth::Size::short_, r);
    const MatchResult fast = m.match(msg, {});
    failures += !same(fast, m.match_naive(msg, {}), msg);
    matched += fast.diagnosis.has_value();
  }
  EXPECT_GT(matched, 60u);
}

TEST(MatcherEquivalence, RegexesCompileLazilyAndAllAtOnceForLint) {
  const synth::SynthCatalog cat = synth::generate_catalog(300, 4, true);
  std::size_t raw = 0;  // the author's own regexes: a raw pattern, an `unless` list
  for (const auto& e : cat.entries) raw += e.pieces.empty() || !e.unless.empty();
  std::vector<Problem> problems;
  const Matcher m(synth::to_entries(cat), problems);
  EXPECT_EQ(m.stats().compiled, raw);  // those only, checked at build
  synth::Rng r(9);
  m.match(synth::wrap(synth::message_for(cat.entries[10], r), synth::Size::short_, r), {});
  EXPECT_LT(m.stats().compiled, raw + 20);
  EXPECT_TRUE(m.compile_all().empty());
  EXPECT_EQ(m.stats().compiled, cat.entries.size());
}

TEST(MatcherEquivalence, ManyThreadsOnAFreshCatalogAgree) {
  // Lazy compilation races here: every thread reaches the same entries first.
  const synth::SynthCatalog cat = synth::generate_catalog(1000, 5, true);
  std::vector<Problem> problems;
  const Matcher m(synth::to_entries(cat), problems);
  const Messages msgs = messages_for(cat, 6, 120);
  std::vector<std::optional<Diagnosis>> expected;
  {
    std::vector<Problem> p2;
    const Matcher reference(synth::to_entries(cat), p2);
    for (std::size_t i = 0; i < msgs.texts.size(); ++i)
      expected.push_back(reference.match_naive(msgs.texts[i], msgs.contexts[i]).diagnosis);
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = 0; i < msgs.texts.size(); ++i) {
        const std::optional<Diagnosis> d = m.match(msgs.texts[i], msgs.contexts[i]).diagnosis;
        const bool ok = d.has_value() == expected[i].has_value() &&
                        (!d || (d->id() == expected[i]->id() && d->captures == expected[i]->captures));
        mismatches[t] += !ok;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace errshim
