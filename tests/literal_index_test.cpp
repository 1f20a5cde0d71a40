// The prefilter's parts: the multi-literal index (every occurrence found,
// nothing invented), the regex analysis (a "required" literal really is in
// every match, where it says), and the catalog-wide choice of literals.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <boost/regex.hpp>

#include "literal_extract.hpp"
#include "literal_index.hpp"

namespace errshim::detail {
namespace {

using Hits = std::set<std::pair<std::size_t, std::size_t>>;  // (key, position)

Hits scan(const LiteralIndex& index, std::string_view text) {
  Hits hits;
  index.scan(text, [&](std::size_t key, std::size_t pos) { hits.insert({key, pos}); });
  return hits;
}

Hits brute_force(const std::vector<std::string>& keys, std::string_view text) {
  Hits hits;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (keys[k].size() < LiteralIndex::kMinKey) continue;
    for (std::size_t p = text.find(keys[k]); p != std::string_view::npos; p = text.find(keys[k], p + 1))
      hits.insert({k, p});
  }
  return hits;
}

TEST(LiteralIndex, FindsEveryOccurrenceAndNothingElse) {
  const std::vector<std::string> keys = {"is not supported", "dims", "head dim", "q head dim 48", "abcd", "xyzzy!"};
  const LiteralIndex index(keys);
  const std::string text = "Meta SDPA does not support q head dim 48: q dims [1], k dims [2]; abcd is not supported";
  // Keys of 4-6, 7-10 and 11+ bytes: all three lanes.
  EXPECT_EQ(scan(index, text), brute_force(keys, text));
  EXPECT_TRUE(index.unindexed().empty());
}

// Keys of 7-10 bytes have a lane of their own, unless keys of 4-6 bytes
// make the index test every position anyway: then they share that lane.
// Both ways find every occurrence, at every alignment.
TEST(LiteralIndex, MidLengthKeysAreFoundAloneAndBesideShortOnes) {
  const std::vector<std::string> mid = {"head dim", "rope_theta", "not impl"};
  std::vector<std::string> with_short = mid;
  with_short.push_back("dims");
  for (std::size_t pad = 0; pad < 8; ++pad) {
    const std::string text = std::string(pad, '.') + "q head dim 4, rope_theta=1; dims not impl, head dimx";
    EXPECT_EQ(scan(LiteralIndex(mid), text), brute_force(mid, text)) << pad;
    EXPECT_EQ(scan(LiteralIndex(with_short), text), brute_force(with_short, text)) << pad;
    EXPECT_EQ(brute_force(with_short, text).size(), 5u);
  }
}

TEST(LiteralIndex, KeysAtTheEdgesOfTheText) {
  const std::vector<std::string> keys = {"start of it", "the end", "wxyz", "whole"};
  const LiteralIndex index(keys);
  for (const std::string text : {"start of it", "start of it and the end", "wxyz", "the end", "x the end", "whole"})
    EXPECT_EQ(scan(index, text), brute_force(keys, text)) << text;
  EXPECT_TRUE(scan(index, "").empty());
  EXPECT_TRUE(scan(index, "wxy").empty());
}

TEST(LiteralIndex, ShortKeysAreListedNotIndexed) {
  const LiteralIndex index({"ab", "abcd", "", "xyz"});
  EXPECT_EQ(index.unindexed(), (std::vector<std::size_t>{0, 2, 3}));
  EXPECT_EQ(scan(index, "ab abcd xyz"), (Hits{{1, 3}}));
}

TEST(LiteralIndex, KeysThatShareTheTextAroundTheirAnchor) {
  // Keys alike at one end and different at the other: the quick check
  // before the full compare must reject the near misses and keep the hits.
  const std::vector<std::string> keys = {" for kv_len",          " for kv_lora",        " for kv_lora_rank",
                                         "hidden for kv_len",    "cannot broadcast to", "cannot broadcast from",
                                         "x cannot broadcast to"};
  const LiteralIndex index(keys);
  for (const std::string text :
       {"size for kv_lora_rank=4", "size for kv_len=4 for kv_lor", "hidden for kv_len",
        "we cannot broadcast from here, x cannot broadcast to there", "for kv_le", "cannot broadcast t"})
    EXPECT_EQ(scan(index, text), brute_force(keys, text)) << text;
}

TEST(LiteralIndex, RandomKeysAndTextsAgreeWithBruteForce) {
  // A 3-letter alphabet forces overlapping, repeating and self-similar keys
  // (an anchor that occurs twice in its own key), the hard cases.
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const char* alphabet = round % 2 ? "ab " : "abc";
    std::vector<std::string> keys(1 + rng() % 40);
    for (std::string& k : keys) {
      k.resize(1 + rng() % 14);
      for (char& c : k) c = alphabet[rng() % 3];
    }
    std::string text(rng() % 300, ' ');
    for (char& c : text) c = alphabet[rng() % 3];
    // Weights make anchors land on different offsets in different rounds.
    const LiteralIndex plain(keys);
    const LiteralIndex weighted(keys, [round](const char* p, std::size_t width) {
      return static_cast<std::uint32_t>((LiteralIndex::load_gram(p, width) * 2654435761u + round) % 17);
    });
    const Hits expected = brute_force(keys, text);
    ASSERT_EQ(scan(plain, text), expected) << "round " << round;
    ASSERT_EQ(scan(weighted, text), expected) << "round " << round;
  }
}

TEST(LiteralIndex, ManyKeysBinaryBytes) {
  std::mt19937 rng(11);
  std::vector<std::string> keys(5000);
  for (std::string& k : keys) {
    k.resize(4 + rng() % 30);
    for (char& c : k) c = static_cast<char>(rng() % 256);
  }
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += keys[rng() % keys.size()];
    for (int j = rng() % 20; j > 0; --j) text += static_cast<char>(rng() % 256);
  }
  const LiteralIndex index(keys);
  EXPECT_EQ(scan(index, text), brute_force(keys, text));
}

TEST(LiteralIndex, AViewingIndexFindsWhatACopyingOneFindsInTheCallersBytes) {
  std::mt19937 rng(5);
  std::vector<std::string> keys(300);
  for (std::string& k : keys) {
    k.resize(4 + rng() % 40);
    for (char& c : k) c = "abcdef "[rng() % 7];
  }
  std::string text;
  for (int i = 0; i < 200; ++i) text += keys[rng() % keys.size()] + "|";
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  const std::vector<std::uint32_t> anchors(keys.size(), 1);
  const LiteralIndex copied(views, anchors);
  const LiteralIndex viewing = LiteralIndex::viewing(views, anchors);
  EXPECT_EQ(scan(viewing, text), scan(copied, text));
  EXPECT_EQ(scan(viewing, text), brute_force(keys, text));
  for (std::size_t k = 0; k < keys.size(); ++k) {
    EXPECT_EQ(viewing.key(k).data(), keys[k].data()) << k;
    EXPECT_NE(copied.key(k).data(), keys[k].data()) << k;
    EXPECT_EQ(copied.key(k), keys[k]) << k;
  }
}

TEST(LiteralIndex, KeysTooLongForAPostingsOffsetsAreStillFoundExactly) {
  // A posting holds an anchor offset below 64 KiB and checks bytes within
  // its key's first 4 KiB: longer keys are anchored or checked at their start.
  std::mt19937 rng(3);
  auto random_text = [&](std::size_t n) {
    std::string t(n, ' ');
    for (char& c : t) c = static_cast<char>('a' + rng() % 26);
    return t;
  };
  const std::vector<std::string> keys = {random_text(5000), random_text(70000), random_text(20)};
  const std::vector<std::uint32_t> anchors = {4500, 66000, 3};
  const std::string text = "x" + keys[0] + "y" + keys[1] + keys[2];
  const LiteralIndex index(std::vector<std::string_view>(keys.begin(), keys.end()), anchors);
  EXPECT_EQ(scan(index, text), brute_force(keys, text));
  EXPECT_EQ(scan(index, text).size(), 3u);
  // One byte off at either end of each long key: not reported.
  for (const std::size_t k : {0, 1})
    for (const std::size_t at : {std::size_t{0}, keys[k].size() - 1}) {
      std::string near = keys[k];
      near[at] = near[at] == 'A' ? 'B' : 'A';
      EXPECT_TRUE(scan(index, "x" + near + "y").empty()) << "key " << k << " changed at " << at;
    }
}

// -------------------------------------------------------------- analysis

struct Expect {
  std::string text;
  std::size_t max_offset;
  bool single_line;
};

void expect_runs(const std::string& regex, const std::vector<Expect>& want) {
  const RegexLiterals got = required_literals(regex);
  ASSERT_TRUE(got.understood) << regex;
  ASSERT_EQ(got.runs.size(), want.size()) << regex;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got.runs[i].text, want[i].text) << regex;
    EXPECT_EQ(got.runs[i].max_offset, want[i].max_offset) << regex << " run " << i;
    EXPECT_EQ(got.runs[i].single_line_prefix, want[i].single_line) << regex << " run " << i;
  }
}

TEST(RequiredLiterals, TemplateRegexes) {
  expect_runs(R"(kv_cache_enabled=true is not supported)", {{"kv_cache_enabled=true is not supported", 0, true}});
  expect_runs(
      R"(Meta SDPA does not support q head dim (?<q_head>[^\n]+?): q dims (?<q_dims>[^\n]+?)\.)",
      {{"Meta SDPA does not support q head dim ", 0, true}, {": q dims ", kUnbounded, true}, {".", kUnbounded, true}});
  // A multi-line placeholder: what follows may start on a later line.
  expect_runs(R"(a (?<x>[\s\S]+?) b)", {{"a ", 0, true}, {" b", kUnbounded, false}});
  // Escapes the template compiler writes.
  expect_runs(R"(x\{y\}\.\n\t\x{01}z)", {{"x{y}.\n\t\x01z", 0, true}});
  // Integer placeholders and padding.
  expect_runs(R"(got  *(?<n>-?\d+) heads)", {{"got ", 0, true}, {" heads", kUnbounded, true}});
  // A repeated name is a backreference: unbounded.
  expect_runs(R"((?<a>\d+) and \k<a>!)", {{" and ", kUnbounded, true}, {"!", kUnbounded, false}});
}

TEST(RequiredLiterals, BoundedPrefixes) {
  expect_runs(R"(\[(?<c>[A-Z]{2}\d{3})\] rejected)", {{"[", 0, true}, {"] rejected", 6, false}});
  expect_runs(R"(^\bab?c.d)", {{"a", 0, true}, {"c", 2, true}, {"d", 4, true}});
  expect_runs(R"((?:xy|z)+w)", {{"w", kUnbounded, true}});
  expect_runs(R"((?:xy|zz){2}w)", {{"w", 4, true}});
  expect_runs(R"((?=ab)(?<!c)abc)", {{"abc", 0, true}});
  expect_runs(R"(a(?#comment)b)", {{"a", 0, true}, {"b", 1, true}});
  // A required group's runs count; an optional group's do not.
  expect_runs(R"(x(?:abc)?y(?<g>def)z)", {{"x", 0, true}, {"y", 4, true}, {"def", 5, true}, {"z", 8, true}});
  // Classes: only a negated class naming \n is single-line.
  expect_runs(R"([^\n]a[^x]b[\\n]c)", {{"a", 1, true}, {"b", 3, false}, {"c", 5, false}});
  // Boost reads a lone ']' or '}' as itself, as the analysis assumes.
  expect_runs(R"(a]b}c)", {{"a]b}c", 0, true}});
  EXPECT_TRUE(boost::regex_search(std::string("x a]b}c"), boost::regex(R"(a]b}c)", boost::regex::perl)));
}

TEST(RequiredLiterals, TopLevelAlternationHasNoRuns) {
  const RegexLiterals r = required_literals("foo|bar");
  EXPECT_TRUE(r.understood);
  EXPECT_TRUE(r.runs.empty());
}

TEST(RequiredLiterals, UnknownSyntaxIsNotAnalysed) {
  for (const char* re :
       {"(?i)abc", "abc(?i:def)", R"(\Gabc)", R"(ab\Kcd)", R"(\Qa.b\E)", R"(\p{L}abc)", "(?(1)a|b)", "(*UTF8)abc", "a{",
        "*a", "(abc", "abc)", "[abc", R"(abc\)", R"(\x{100}a)", R"(\0abc)", "(?P>name)", "a{,3}"}) {
    EXPECT_FALSE(required_literals(re).understood) << re;
  }
}

// Builds a random regex in the analysed subset together with a string it
// matches, so the property below is tested on real matches.
class RegexGen {
 public:
  explicit RegexGen(unsigned seed) : rng_(seed) {}
  std::pair<std::string, std::string> make(int depth = 0) {
    std::string re, sample;
    for (int n = 1 + static_cast<int>(rng_() % 6); n > 0; --n) {
      auto [r, s] = atom(depth);
      re += r;
      sample += s;
    }
    return {re, sample};
  }

 private:
  std::pair<std::string, std::string> atom(int depth) {
    const char* const letters = "ab \n";
    switch (rng_() % (depth > 2 ? 8 : 11)) {
      case 0:
      case 1:
      case 2: {
        std::string t(1 + rng_() % 4, 'a');
        for (char& c : t) c = letters[rng_() % 3];
        return {t, t};
      }
      case 3: return {"\\n", "\n"};
      case 4: return {"[^\\n]+?", std::string(1 + rng_() % 3, "ab "[rng_() % 3])};
      case 5: return {"\\d{1,3}", std::to_string(rng_() % 999)};
      case 6: return {"b?", rng_() % 2 ? "b" : ""};
      case 7: return {"[\\s\\S]*?", rng_() % 2 ? "\n" : "a"};
      case 8: {
        auto [r, s] = make(depth + 1);
        return {"(?:" + r + ")", s};
      }
      case 9: {
        auto [r1, s1] = make(depth + 1);
        auto [r2, s2] = make(depth + 1);
        return {"(?:" + r1 + "|" + r2 + ")", rng_() % 2 ? s1 : s2};
      }
      default: {
        auto [r, s] = make(depth + 1);
        return {"(?:" + r + "){1,2}", s};
      }
    }
  }
  std::mt19937 rng_;
};

TEST(RequiredLiterals, EveryMatchHoldsEveryRunWhereClaimed) {
  RegexGen gen(3);
  std::mt19937 rng(5);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    const auto [re, sample] = gen.make();
    const RegexLiterals lit = required_literals(re);
    ASSERT_TRUE(lit.understood) << re;
    const boost::regex compiled(re, boost::regex::perl);
    // The sample inside some noise: Boost may well match elsewhere.
    std::string text;
    for (int j = rng() % 6; j > 0; --j) text += "ab \n"[rng() % 4];
    text += sample;
    for (int j = rng() % 6; j > 0; --j) text += "ab \n"[rng() % 4];
    boost::cmatch m;
    bool found_match = false;
    try {
      found_match = boost::regex_search(text.c_str(), text.c_str() + text.size(), m, compiled,
                                        boost::match_default | boost::match_not_dot_newline);
    } catch (const std::runtime_error&) {
      continue;  // nested lazy repeats can hit Boost's complexity limit: nothing to check
    }
    ASSERT_TRUE(found_match) << re;
    const std::string matched = m[0].str();
    for (const RequiredRun& run : lit.runs) {
      bool found = false;
      for (std::size_t at = matched.find(run.text); at != std::string::npos && !found;
           at = matched.find(run.text, at + 1)) {
        const bool offset_ok = run.max_offset == kUnbounded || at <= run.max_offset;
        const bool line_ok = !run.single_line_prefix || matched.substr(0, at).find('\n') == std::string::npos;
        found = offset_ok && line_ok;
      }
      ASSERT_TRUE(found) << "regex " << re << " matched '" << matched << "' without run '" << run.text << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

// ------------------------------------------------------------ key choice

TEST(ChooseKeys, PrefersTheRunWithTheRarestWords) {
  std::vector<RegexLiterals> p;
  for (const char* rare : {"LlamaAttention", "GemmaMlp", "PhiModel", "T5Encoder"}) {
    RegexLiterals r;
    r.understood = true;
    r.runs.push_back({" is not supported", kUnbounded, true});  // longest, but shared by all
    r.runs.push_back({std::string("in ") + rare, kUnbounded, true});
    p.push_back(r);
  }
  const KeyChoice c = choose_keys(p);
  EXPECT_EQ(c.keys[0].text, "in LlamaAttention");
  EXPECT_EQ(c.keys[3].text, "in T5Encoder");
}

TEST(ChooseKeys, TakesTheWholeRunAndItsPlacement) {
  RegexLiterals r = required_literals(R"(only (?<n>\d+) kv-repeat heads are supported here)");
  const KeyChoice c = choose_keys({r});
  EXPECT_EQ(c.keys[0].text, " kv-repeat heads are supported here");
  EXPECT_EQ(c.keys[0].max_offset, kUnbounded);
  EXPECT_TRUE(c.keys[0].single_line_prefix);
}

TEST(ChooseKeys, NothingUsableMeansNoKey) {
  const KeyChoice c = choose_keys(
      {required_literals("a|b"), required_literals("(?i)abc"), required_literals(R"((?<x>\d+): (?<y>\d+))")});
  for (const EntryKey& k : c.keys) EXPECT_TRUE(k.text.empty()) << k.text;
}

}  // namespace
}  // namespace errshim::detail
