// What every shipped entry must carry, checked on the embedded catalog so a
// new entry cannot quietly lower the bar.
#include <gtest/gtest.h>

#include <cctype>

#include <errshim/errshim.hpp>

namespace errshim {
namespace {

bool full_sha(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

TEST(ShippedCatalog, HasAtLeastTwoHundredEntries) { EXPECT_GE(Catalog::embedded()->size(), 200u); }

TEST(ShippedCatalog, EveryEntryMeetsTheCatalogStandard) {
  for (const auto& e : Catalog::embedded()->entries()) {
    SCOPED_TRACE(e->id + " (" + e->where.file + ":" + std::to_string(e->where.line) + ")");
    EXPECT_TRUE(full_sha(e->source.commit)) << "commit '" << e->source.commit << "' is not a full sha";
    EXPECT_FALSE(e->source.repo.empty());
    EXPECT_TRUE(e->source.line > 0 || !e->source.symbol.empty());
    EXPECT_GE(e->remediation.size(), 2u) << "at least two remediation steps, most likely first";
    EXPECT_GE(e->match_examples.size(), 2u);
    EXPECT_FALSE(e->no_match_examples.empty()) << "name the nearest neighbours it must not claim";
    // One example as users meet it: a wrapper that normalisation strips.
    bool wrapped = false;
    for (const MatchExample& ex : e->match_examples) {
      const Normalized n = normalize(ex.text);
      wrapped = wrapped || n.segments.empty() || n.segments.front().text != ex.text || n.segments.size() > 1;
    }
    EXPECT_TRUE(wrapped) << "no match example is wrapped (traceback, Error: chain, backtrace, log prefix)";
    for (const Remediation& r : e->remediation) {
      if (r.fix) {
        EXPECT_FALSE(r.fix->reason.empty()) << "fix of step '" << r.text.substr(0, 40) << "' gives no reason for its safety class";
      }
    }
  }
}

}  // namespace
}  // namespace errshim
