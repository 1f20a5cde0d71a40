// Process-wide lookup observers (errshim/observer.hpp): every lookup guard,
// rethrow_translated, remediate and diagnose make reaches them once, with
// where it was made, and nothing an observer does changes what the host gets.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <errshim/errshim.hpp>
#include <errshim/fingerprint.hpp>
#include <errshim/observer.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

const Catalog& catalog() {
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(testing::kv_cache_entry_yaml("t.kv")));
  return *c;
}

constexpr const char* kKnown = "kv_cache_enabled=true is not supported";

struct Seen {
  std::string text;
  std::string id;  // empty: unrecognised
  LookupSite site;
};

// Records every lookup while it lives.
struct Recorder {
  std::mutex mutex;
  std::vector<Seen> seen;
  ObserverHandle handle = observe_lookups([this](const MatchEvent& e) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.push_back({std::string(e.text), e.diagnosis ? e.diagnosis->id() : std::string(), e.site});
  });
};

TEST(LookupObserver, GuardReportsAnUnrecognisedErrorOnceWithItsTextAndRethrowsTheSameType) {
  Recorder r;
  try {
    guard([]() -> int { throw std::out_of_range("no such tensor: lm_head on worker 3"); }, catalog());
    FAIL() << "guard returned";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "no such tensor: lm_head on worker 3");
  }
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].site, LookupSite::guard);
  EXPECT_EQ(r.seen[0].id, "");
  // The text as thrown: another worker's copy has the same fingerprint.
  EXPECT_EQ(fingerprint(r.seen[0].text).id, fingerprint("no such tensor: lm_head on worker 11").id);
}

TEST(LookupObserver, GuardReportsARecognisedErrorWithTheEntryThatMatched) {
  Recorder r;
  EXPECT_THROW(guard([]() -> int { throw std::runtime_error(kKnown); }, catalog(), Context{}), translated_error);
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].site, LookupSite::guard);
  EXPECT_EQ(r.seen[0].id, "t.kv");
  EXPECT_EQ(r.seen[0].text, kKnown);
}

// guard() and diagnose() return no MatchResult, so the observer is where a
// host hears that matching met a problem (here: the input cut to its cap).
TEST(LookupObserver, MatchingProblemsReachTheObserverFromEveryCallStyle) {
  std::vector<std::pair<LookupSite, std::vector<std::string>>> seen;
  std::mutex mutex;
  ObserverHandle h = observe_lookups([&](const MatchEvent& e) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.push_back({e.site, e.problems ? *e.problems : std::vector<std::string>{}});
  });
  const std::string huge = std::string(kKnown) + "\n" + std::string(2u << 20, 'x');
  EXPECT_THROW(guard([&]() -> int { throw std::runtime_error(huge); }, catalog()), translated_error);
  (void)diagnose(huge, catalog());
  (void)diagnose("short and unknown", catalog());
  h.reset();
  ASSERT_EQ(seen.size(), 3u);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_FALSE(seen[i].second.empty()) << to_string(seen[i].first);
    EXPECT_NE(seen[i].second.front().find("cut to its first and last"), std::string::npos) << seen[i].second.front();
  }
  EXPECT_EQ(seen[0].first, LookupSite::guard);
  EXPECT_EQ(seen[1].first, LookupSite::diagnose);
  EXPECT_TRUE(seen[2].second.empty());
}

TEST(LookupObserver, RethrowTranslatedReportsItsOwnSite) {
  Recorder r;
  try {
    try {
      throw std::invalid_argument("bad rope scaling");
    } catch (...) {
      rethrow_translated(catalog());
    }
  } catch (const std::invalid_argument&) {}
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].site, LookupSite::rethrow_translated);
  EXPECT_EQ(r.seen[0].text, "bad rope scaling");
}

TEST(LookupObserver, TranslatedErrorThroughTwoGuardsGivesOneLookup) {
  Recorder r;
  EXPECT_THROW(guard([] { return guard([]() -> int { throw std::runtime_error(kKnown); }, catalog()); }, catalog()),
               translated_error);
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].id, "t.kv");
}

TEST(LookupObserver, NonStdThrowGivesNoLookup) {
  Recorder r;
  EXPECT_THROW(guard([]() -> int { throw 42; }, catalog()), int);
  EXPECT_TRUE(r.seen.empty());
}

TEST(LookupObserver, ObserverThatThrowsDoesNotChangeTheErrorTheHostGets) {
  auto throwing = observe_lookups([](const MatchEvent&) { throw std::logic_error("observer bug"); });
  Recorder after;  // registered later: still called
  const auto original = std::make_exception_ptr(std::out_of_range("no such tensor: lm_head"));
  try {
    guard([&]() -> int { std::rethrow_exception(original); }, catalog());
  } catch (const std::out_of_range&) {
    EXPECT_EQ(std::current_exception(), original);  // the same object
  }
  try {
    guard([]() -> int { throw std::runtime_error(kKnown); }, catalog());
  } catch (const translated_error& e) {
    EXPECT_EQ(e.diagnosis().id(), "t.kv");
  }
  EXPECT_EQ(diagnose(kKnown, catalog())->id(), "t.kv");
  EXPECT_EQ(after.seen.size(), 3u);
}

TEST(LookupObserver, ResetAndDestructionUnregister) {
  std::atomic<int> calls{0};
  {
    ObserverHandle h = observe_lookups([&](const MatchEvent&) { ++calls; });
    ObserverHandle moved = std::move(h);  // the registration goes with the handle
    EXPECT_FALSE(h);
    (void)diagnose(kKnown, catalog());
    EXPECT_EQ(calls.load(), 1);
  }
  (void)diagnose(kKnown, catalog());
  EXPECT_EQ(calls.load(), 1);
  ObserverHandle h = observe_lookups([&](const MatchEvent&) { ++calls; });
  h.reset();
  EXPECT_FALSE(h);
  (void)diagnose(kKnown, catalog());
  EXPECT_EQ(calls.load(), 1);
}

TEST(LookupObserver, DiagnoseReportsItsLookup) {
  Recorder r;
  EXPECT_FALSE(diagnose("something else entirely", catalog()));
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].site, LookupSite::diagnose);
  EXPECT_EQ(r.seen[0].id, "");
}

TEST(LookupObserver, RemediateReportsToThePolicyAndToProcessWideObservers) {
  Recorder r;
  int per_call = 0;
  Policy policy;
  policy.on_match = [&](const MatchEvent& e) {
    ++per_call;
    EXPECT_EQ(e.site, LookupSite::remediate);
  };
  EXPECT_THROW(remediate(
                   ConfigTree::parse("a: 1\n"), [](const ConfigTree&) -> int { throw std::out_of_range("gone"); },
                   policy, catalog()),
               std::out_of_range);
  EXPECT_EQ(per_call, 1);
  ASSERT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(r.seen[0].site, LookupSite::remediate);
  EXPECT_EQ(r.seen[0].text, "gone");
}

TEST(LookupObserver, LookupsAnObserverMakesItselfAreNotReported) {
  std::atomic<int> calls{0};
  auto h = observe_lookups([&](const MatchEvent&) {
    ++calls;
    (void)diagnose(kKnown, catalog());  // would recurse without end if reported
  });
  (void)diagnose(kKnown, catalog());
  EXPECT_EQ(calls.load(), 1);
}

TEST(LookupObserver, ResetFromInsideTheObserverReturns) {
  ObserverHandle h;
  int calls = 0;
  h = observe_lookups([&](const MatchEvent&) {
    ++calls;
    h.reset();
  });
  (void)diagnose(kKnown, catalog());
  (void)diagnose(kKnown, catalog());
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(h);
}

TEST(LookupObserver, ResetWaitsForACallInFlightOnAnotherThread) {
  std::atomic<bool> in_call{false}, release{false}, reset_returned{false};
  auto h = observe_lookups([&](const MatchEvent&) {
    in_call = true;
    while (!release) std::this_thread::yield();
  });
  std::thread lookup([] { (void)diagnose(kKnown, catalog()); });
  while (!in_call) std::this_thread::yield();
  std::thread resetter([&] {
    h.reset();
    reset_returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(reset_returned.load());  // the observer is still running
  release = true;
  resetter.join();
  lookup.join();
  EXPECT_TRUE(reset_returned.load());
}

// Lookups on several threads while observers come and go: the permanent
// observer sees every lookup exactly once, and an observer is never called
// after its reset() returned. Run under the sanitizer build for races.
TEST(LookupObserver, ConcurrentLookupsWhileObserversRegisterAndUnregister) {
  constexpr int kThreads = 4, kLookups = 200;
  std::atomic<int> seen{0};
  auto permanent = observe_lookups([&](const MatchEvent& e) {
    if (e.site == LookupSite::guard || e.site == LookupSite::diagnose) ++seen;
  });
  std::atomic<bool> stop{false}, late_call{false};
  std::thread churn([&] {
    while (!stop) {
      auto closed = std::make_shared<std::atomic<bool>>(false);
      ObserverHandle h = observe_lookups([closed, &late_call](const MatchEvent&) {
        if (*closed) late_call = true;
      });
      std::this_thread::yield();
      h.reset();
      *closed = true;
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([t] {
      for (int i = 0; i < kLookups; ++i) {
        if (i % 2 == 0) {
          (void)diagnose("worker " + std::to_string(t) + " lost shard " + std::to_string(i), catalog());
        } else {
          try {
            guard([]() -> int { throw std::runtime_error(kKnown); }, catalog());
          } catch (const translated_error&) {}
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  stop = true;
  churn.join();
  EXPECT_EQ(seen.load(), kThreads * kLookups);
  EXPECT_FALSE(late_call.load());
}

TEST(LookupSite, NamesAreStable) {
  EXPECT_EQ(to_string(LookupSite::guard), "guard");
  EXPECT_EQ(to_string(LookupSite::rethrow_translated), "rethrow_translated");
  EXPECT_EQ(to_string(LookupSite::remediate), "remediate");
  EXPECT_EQ(to_string(LookupSite::diagnose), "diagnose");
  EXPECT_EQ(to_string(LookupSite::c_api_diagnose), "c_api_diagnose");
  EXPECT_EQ(to_string(LookupSite::c_api_fix_config), "c_api_fix_config");
}

}  // namespace
}  // namespace errshim
