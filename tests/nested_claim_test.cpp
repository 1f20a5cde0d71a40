// The nested-claim rule (patterns/README.md, "Which entry wins"): when the
// winning entry's free-text placeholder holds text another entry claims on
// its own, that inner entry wins, whatever the two entries' lengths, unless
// its priority is lower. The outer text only wraps the error the inner site
// raised; a typed capture (capture_patterns) holds a value, never an error.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include <errshim/catalog.hpp>

#include "matcher.hpp"
#include "test_catalogs.hpp"

namespace errshim {
namespace {

using testing::catalog_from;
using testing::entry_yaml;
using testing::file_yaml;

// Two wrappers of other errors, both longer in literal text than the
// shortest inner entry, so the length rule alone would pick the wrapper.
const std::string kCatalog = file_yaml(
    entry_yaml("t.outer-weights", "failed to load the weights of the model: {reason}") +
    entry_yaml("t.outer-step", "while running generation step {step}: {msg}") +
    entry_yaml("t.outer-typed", "could not build the attention layer named {layer} here",
               "    capture_patterns: {layer: '[a-z ]+'}\n") +
    entry_yaml("t.outer-low", "the tokenizer backend reported: {detail}", "    priority: 1\n") +
    entry_yaml("t.inner-short", "lstm is not supported") +
    entry_yaml("t.inner-long", "seanet convolution with causal padding and a stride of {n} is not supported") +
    entry_yaml("t.other", "unrelated error about the sampler") +
    entry_yaml("t.outer-pair", "inconsistent operands given to the kernel: {lhs} {rhs}") +
    // A wrapper whose inner error ends in a placeholder: read alone, that
    // placeholder swallows the wrapper's own tail, which a generic entry
    // claims; the reading whose chain accounts for more literal text wins.
    entry_yaml("t.rival-outer", "while quantizing: {n} is not divisible by {qk}") +
    entry_yaml("t.inner-trailing", "unsupported attention mask length given to the sdpa kernel: {len}") +
    entry_yaml("t.generic", "{k} is not divisible by {qk}"));

struct NestedCase {
  const char* name;
  std::string message;
  std::string winner;
  std::string matched;  // the winner's matched text
};

void PrintTo(const NestedCase& c, std::ostream* os) { *os << c.name; }

class NestedClaim : public ::testing::TestWithParam<NestedCase> {};

TEST_P(NestedClaim, WinnerIsTheInnermostClaimedError) {
  const CatalogPtr cat = catalog_from(kCatalog);
  const NestedCase& c = GetParam();
  const MatchResult r = cat->match(c.message);
  ASSERT_TRUE(r.diagnosis) << c.message;
  EXPECT_EQ(r.diagnosis->id(), c.winner) << c.message;
  EXPECT_EQ(r.diagnosis->matched, c.matched);
  // The offset still points at the winner's text in the segment.
  EXPECT_EQ(r.diagnosis->segment.substr(r.diagnosis->offset, r.diagnosis->matched.size()), r.diagnosis->matched);
  // The reference loop agrees (the rule is part of the winner rule, not of the prefilter).
  std::vector<Problem> problems;
  const detail::Matcher m(cat->entries(), problems);
  const MatchResult naive = m.match_naive(c.message, {});
  ASSERT_TRUE(naive.diagnosis);
  EXPECT_EQ(naive.diagnosis->id(), c.winner);
  EXPECT_EQ(naive.diagnosis->captures, r.diagnosis->captures);
}

INSTANTIATE_TEST_SUITE_P(
    Rule, NestedClaim,
    ::testing::Values(
        NestedCase{"ShorterInnerInWrapperWins", "failed to load the weights of the model: lstm is not supported",
                   "t.inner-short", "lstm is not supported"},
        NestedCase{"LongerInnerInWrapperWins",
                   "failed to load the weights of the model: seanet convolution with causal padding and a stride of 2 "
                   "is not supported",
                   "t.inner-long", "seanet convolution with causal padding and a stride of 2 is not supported"},
        NestedCase{"InnerInsideMoreCaptureTextWins",
                   "failed to load the weights of the model: layer 3: lstm is not supported (see above)",
                   "t.inner-short", "lstm is not supported"},
        NestedCase{"TwoWrappersDeepInnermostWins",
                   "while running generation step 4: failed to load the weights of the model: lstm is not supported",
                   "t.inner-short", "lstm is not supported"},
        NestedCase{"InnerSplitOverAdjacentCapturesWins",
                   "inconsistent operands given to the kernel: lstm is not supported", "t.inner-short",
                   "lstm is not supported"},
        NestedCase{"TrailingPlaceholderDoesNotSwallowTheWrapper",
                   "while quantizing: unsupported attention mask length given to the sdpa kernel: 7 is not divisible "
                   "by 4",
                   "t.inner-trailing", "unsupported attention mask length given to the sdpa kernel: 7"},
        NestedCase{"WrapperOfUnclaimedTextStays", "failed to load the weights of the model: disk quota exceeded",
                   "t.outer-weights", "failed to load the weights of the model: disk quota exceeded"},
        NestedCase{"TypedCaptureIsNotAWrapper", "could not build the attention layer named lstm is not supported here",
                   "t.outer-typed", "could not build the attention layer named lstm is not supported here"},
        NestedCase{"LowerPriorityInnerDoesNotTakeOver", "the tokenizer backend reported: lstm is not supported",
                   "t.outer-low", "the tokenizer backend reported: lstm is not supported"},
        NestedCase{"OnlyTheCapturesClaimCounts",
                   "lstm is not supported; failed to load the weights of the model: unrelated error about the sampler",
                   "t.other", "unrelated error about the sampler"}),
    [](const ::testing::TestParamInfo<NestedCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace errshim
