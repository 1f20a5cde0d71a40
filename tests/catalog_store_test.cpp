// Hot reload (CatalogStore): a new catalog is swapped in only when it builds
// and lints clean; a failed reload keeps the old one and says why; file
// changes are noticed; what readers hold stays valid across swaps.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <errshim/catalog_store.hpp>
#include <errshim/errshim.hpp>

#include "catalog_store_hooks.hpp"
#include "test_catalogs.hpp"

namespace errshim {
namespace {

namespace fs = std::filesystem;
using testing::file_yaml;
using Outcome = ReloadReport::Outcome;

// An entry whose one example states its captures, so lint has nothing to say.
std::string entry(const std::string& id, const std::string& tmpl, const std::string& example,
                  const std::string& captures = "", const std::string& cause = "c") {
  return "  - id: " + id + "\n    template: '" + tmpl + "'\n    source: {path: src/x.rs, line: 10}\n" +
         "    error_class: E\n    kind: validation\n    cause: " + cause + "\n    trigger: t\n" +
         "    remediation: [{text: r}]\n    examples:\n      match: [{text: '" + example + "'" +
         (captures.empty() ? "" : ", captures: {" + captures + "}") + "}]\n";
}

const std::string kAlpha =
    file_yaml(entry("t.alpha", "alpha failed at step {step}", "alpha failed at step 3", "step: 3") +
              entry("t.beta", "beta is not supported", "beta is not supported"));
// The same two answers, worded differently and in another order.
const std::string kAlphaAgain =
    file_yaml(entry("t.beta", "beta is not supported", "beta is not supported", "", "another cause") +
              entry("t.alpha", "alpha failed at step {step}", "alpha failed at step 3", "step: 3", "another cause"));

CatalogBuilder builder_of(const std::string& yaml, const std::string& name = "store.yaml") {
  CatalogBuilder b;
  b.add_yaml(yaml, name);
  return b;
}

bool mentions(const ReloadReport& r, const std::string& fragment) {
  for (const Problem& p : r.problems)
    if (p.to_string().find(fragment) != std::string::npos) return true;
  return false;
}

// A fresh folder per test, removed at the end.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("errshim-store-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

  // Writes `text` and moves the file's time forward, so a change is visible
  // even on a file system with coarse timestamps.
  void write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    const bool existed = fs::exists(p);
    const auto before = existed ? fs::last_write_time(p) : fs::file_time_type::min();
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    if (existed && fs::last_write_time(p) <= before) fs::last_write_time(p, before + std::chrono::seconds(1));
  }

 private:
  fs::path path_;
};

TEST(CatalogStore, StartsWithTheEmbeddedCatalogAsGenerationOne) {
  CatalogStore store;
  EXPECT_EQ(store.current(), Catalog::embedded());
  EXPECT_EQ(store.generation(), 1u);
  EXPECT_TRUE(store.diagnose("only kv-repeat = 1 is supported"));
}

TEST(CatalogStore, SwapsInACatalogThatBuildsAndLintsClean) {
  CatalogStore store(testing::catalog_from(kAlpha));
  const ReloadReport r = store.reload(builder_of(kAlphaAgain));
  EXPECT_EQ(r.outcome, Outcome::swapped) << r.to_string();
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.generation, 2u);
  EXPECT_EQ(store.generation(), 2u);
  EXPECT_EQ(r.entries, 2u);
  EXPECT_EQ(store.current()->entries().front()->id, "t.beta");  // the new catalog's order
  const auto d = store.diagnose("alpha failed at step 7");
  ASSERT_TRUE(d);
  EXPECT_EQ(*d->capture("step"), "7");
}

TEST(CatalogStore, KeepsTheOldCatalogWhenTheNewOneDoesNotBuild) {
  CatalogStore store(testing::catalog_from(kAlpha));
  const CatalogPtr before = store.current();
  const ReloadReport r = store.reload(builder_of("schema: 1\nentries:\n  - id: [broken\n", "broken.yaml"));
  EXPECT_EQ(r.outcome, Outcome::refused);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "broken.yaml:")) << r.to_string();
  EXPECT_EQ(store.current(), before);
  EXPECT_EQ(store.generation(), 1u);
  EXPECT_EQ(r.generation, 1u);
  EXPECT_TRUE(store.diagnose("beta is not supported"));
}

TEST(CatalogStore, RefusesACatalogWithLintProblemsUnlessTheyAreAccepted) {
  // The example does not match its own template: the catalog builds, lint objects.
  const std::string yaml = file_yaml(entry("t.gamma", "gamma exploded", "gamma exploded") +
                                     "  - id: t.delta\n    template: delta exploded\n"
                                     "    source: {path: d.rs, line: 1}\n    error_class: E\n    kind: validation\n"
                                     "    cause: c\n    trigger: t\n    remediation: [{text: r}]\n"
                                     "    examples: {match: ['delta imploded']}\n");
  CatalogStore store(testing::catalog_from(kAlpha));
  ReloadReport r = store.reload(builder_of(yaml));
  EXPECT_EQ(r.outcome, Outcome::refused);
  EXPECT_TRUE(mentions(r, "entry 't.delta': match example is not matched")) << r.to_string();
  EXPECT_EQ(store.generation(), 1u);

  ReloadOptions accept;
  accept.accept_lint_problems = true;
  r = store.reload(builder_of(yaml), accept);
  EXPECT_EQ(r.outcome, Outcome::swapped);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(mentions(r, "t.delta")) << "accepted problems are still reported";
  EXPECT_EQ(store.generation(), 2u);
  EXPECT_TRUE(store.diagnose("gamma exploded"));
}

TEST(CatalogStore, RefusesAPatternThatMayBacktrackCatastrophically) {
  const std::string yaml = file_yaml(
      "  - id: t.slow\n    pattern: 'slow: (\\w+\\s?)+$'\n    source: {path: s.rs, line: 1}\n    error_class: E\n"
      "    kind: validation\n    cause: c\n    trigger: t\n    remediation: [{text: r}]\n"
      "    examples: {match: ['slow: a b']}\n");
  CatalogStore store(testing::catalog_from(kAlpha));
  const ReloadReport r = store.reload(builder_of(yaml));
  EXPECT_EQ(r.outcome, Outcome::refused);
  EXPECT_TRUE(mentions(r, "pattern may backtrack catastrophically")) << r.to_string();
}

TEST(CatalogStore, ADiagnosisAndACatalogHeldByAReaderOutliveTheSwap) {
  CatalogStore store(testing::catalog_from(kAlpha));
  const CatalogPtr held = store.current();
  const auto d = store.diagnose("beta is not supported");
  ASSERT_TRUE(d);
  ASSERT_EQ(store.reload(builder_of(kAlphaAgain)).outcome, Outcome::swapped);
  EXPECT_NE(store.current(), held);
  EXPECT_EQ(d->entry->id, "t.beta");
  EXPECT_TRUE(held->diagnose("alpha failed at step 1"));
}

TEST(CatalogStore, ReloadPathsLayersUserFilesOverTheEmbeddedCatalog) {
  TempDir dir;
  dir.write("mine.yaml", file_yaml(entry("t.custom", "errshim store test failure number {n}",
                                         "errshim store test failure number 3", "n: 3")));
  CatalogStore store;
  const ReloadReport r = store.reload_paths({dir.path()});
  ASSERT_EQ(r.outcome, Outcome::swapped) << r.to_string();
  EXPECT_EQ(r.entries, Catalog::embedded()->size() + 1);
  EXPECT_TRUE(store.diagnose("only kv-repeat = 1 is supported"));
  EXPECT_EQ(store.diagnose("errshim store test failure number 3")->id(), "t.custom");
}

TEST(CatalogStore, ReloadIfChangedLoadsOnlyAfterAWatchedFileChanges) {
  TempDir dir;
  dir.write("a.yaml", kAlpha);
  CatalogStore store;
  ASSERT_EQ(store.reload_paths({dir.path() / "a.yaml"}, false).outcome, Outcome::swapped);
  EXPECT_EQ(store.reload_if_changed().outcome, Outcome::unchanged);
  EXPECT_EQ(store.generation(), 2u);

  dir.write("a.yaml", kAlphaAgain);
  const ReloadReport r = store.reload_if_changed();
  EXPECT_EQ(r.outcome, Outcome::swapped) << r.to_string();
  EXPECT_EQ(store.generation(), 3u);
  EXPECT_EQ(store.current()->entries().front()->id, "t.beta");
}

TEST(CatalogStore, ABrokenFileIsReportedOnceAndRetriedAfterTheNextChange) {
  TempDir dir;
  dir.write("a.yaml", kAlpha);
  CatalogStore store;
  ASSERT_EQ(store.reload_paths({dir.path()}, false).outcome, Outcome::swapped);
  const CatalogPtr good = store.current();

  dir.write("a.yaml", "schema: 1\nentries: [\n");  // a half-written file
  const ReloadReport broken = store.reload_if_changed();
  EXPECT_EQ(broken.outcome, Outcome::refused);
  EXPECT_TRUE(mentions(broken, "a.yaml:")) << broken.to_string();
  EXPECT_EQ(store.current(), good);
  EXPECT_EQ(store.reload_if_changed().outcome, Outcome::unchanged);  // not re-read on every poll

  dir.write("a.yaml", kAlphaAgain);
  EXPECT_EQ(store.reload_if_changed().outcome, Outcome::swapped);
  EXPECT_EQ(store.generation(), 3u);
}

TEST(CatalogStore, ReloadIfChangedNoticesAFileAddedToAWatchedFolder) {
  TempDir dir;
  dir.write("a.yaml", kAlpha);
  CatalogStore store;
  ASSERT_EQ(store.reload_paths({dir.path()}, false).outcome, Outcome::swapped);
  dir.write("b.yaml", file_yaml(entry("t.epsilon", "epsilon ran out", "epsilon ran out")));
  const ReloadReport r = store.reload_if_changed();
  EXPECT_EQ(r.outcome, Outcome::swapped) << r.to_string();
  EXPECT_EQ(r.entries, 3u);
  EXPECT_TRUE(store.diagnose("epsilon ran out"));
}

// Runs `second` on another thread at the moment reload_if_changed() has
// decided to reload, and lets that reload go on only once `second` has either
// finished or is waiting for the reload lock. No timing: each step waits for
// an event the store reports through its test hook.
class WhenReloadDecided {
 public:
  explicit WhenReloadDecided(std::function<void()> second) : second_(std::move(second)) {
    instance_ = this;
    detail::catalog_store_hook.store(&WhenReloadDecided::on_hook);
  }
  ~WhenReloadDecided() {
    detail::catalog_store_hook.store(nullptr);
    if (thread_.joinable()) thread_.join();
    instance_ = nullptr;
  }
  WhenReloadDecided(const WhenReloadDecided&) = delete;
  WhenReloadDecided& operator=(const WhenReloadDecided&) = delete;
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  bool second_ran() const { return started_; }

 private:
  static void on_hook(detail::StoreHookPoint point) {
    WhenReloadDecided& self = *instance_;
    if (point == detail::StoreHookPoint::lock_contended) return self.signal();
    if (self.started_) return;
    self.started_ = true;
    self.thread_ = std::thread([&self] {
      self.second_();
      self.signal();
    });
    std::unique_lock<std::mutex> lock(self.mutex_);
    self.cv_.wait(lock, [&self] { return self.signalled_; });
  }
  void signal() {
    const std::lock_guard<std::mutex> lock(mutex_);
    signalled_ = true;
    cv_.notify_all();
  }

  static inline WhenReloadDecided* instance_ = nullptr;
  std::function<void()> second_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool signalled_ = false;
  bool started_ = false;
};

// A reload_paths(B) that runs while reload_if_changed() is reloading the
// paths it watched (A) must win: it was asked for last. The check and the
// reload are one critical section, so B waits for A and then replaces it.
TEST(CatalogStore, ReloadPathsDuringReloadIfChangedIsNotUndone) {
  TempDir dir;
  dir.write("a.yaml", kAlpha);
  dir.write("b.yaml", file_yaml(entry("t.epsilon", "epsilon ran out", "epsilon ran out")));
  CatalogStore store;
  ASSERT_EQ(store.reload_paths({dir.path() / "a.yaml"}, false).outcome, Outcome::swapped);
  dir.write("a.yaml", kAlphaAgain);

  ReloadReport second;
  {
    WhenReloadDecided during([&] { second = store.reload_paths({dir.path() / "b.yaml"}, false); });
    const ReloadReport first = store.reload_if_changed();
    during.join();
    ASSERT_TRUE(during.second_ran());
    EXPECT_EQ(first.outcome, Outcome::swapped) << first.to_string();
  }
  EXPECT_EQ(second.outcome, Outcome::swapped) << second.to_string();
  EXPECT_EQ(store.generation(), 4u);
  EXPECT_TRUE(store.diagnose("epsilon ran out")) << "the reload of b.yaml was undone";
  EXPECT_FALSE(store.diagnose("beta is not supported"));
  // And b.yaml is what is watched now.
  EXPECT_EQ(store.reload_if_changed().outcome, Outcome::unchanged);
  dir.write("a.yaml", kAlpha);
  EXPECT_EQ(store.reload_if_changed().outcome, Outcome::unchanged);
}

TEST(CatalogStore, ReloadIfChangedWithNothingWatchedChangesNothing) {
  CatalogStore store;
  const ReloadReport r = store.reload_if_changed();
  EXPECT_EQ(r.outcome, Outcome::unchanged);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.generation, 1u);
}

TEST(CatalogStore, ReportSaysWhatHappenedAndWhy) {
  CatalogStore store(testing::catalog_from(kAlpha));
  EXPECT_EQ(store.reload(builder_of(kAlphaAgain)).to_string(), "catalog reloaded: generation 2, 2 entries");
  const std::string refused = store.reload(builder_of("schema: 2\n", "v2.yaml")).to_string();
  EXPECT_EQ(refused.rfind("catalog reload refused (1 problem(s)); generation 2 stays current\n  v2.yaml:1:9: ", 0), 0u)
      << refused;
}

}  // namespace
}  // namespace errshim
