// CatalogBuilder::add_generated: finding a generated layer by library name,
// its snapshot before its YAML, and a clear problem when it is not there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <errshim/catalog.hpp>

#include "entry_table.hpp"
#include "matcher.hpp"
#include "snapshot.hpp"
#include "test_catalogs.hpp"

namespace errshim {
namespace {

namespace fs = std::filesystem;

// Points ERRSHIM_GENERATED_DIR at `dir` for the test's lifetime.
class ScopedGeneratedDir {
 public:
  explicit ScopedGeneratedDir(const fs::path& dir) {
    if (const char* old = std::getenv("ERRSHIM_GENERATED_DIR")) old_ = old;
    ::setenv("ERRSHIM_GENERATED_DIR", dir.c_str(), 1);
  }
  ~ScopedGeneratedDir() {
    if (old_)
      ::setenv("ERRSHIM_GENERATED_DIR", old_->c_str(), 1);
    else
      ::unsetenv("ERRSHIM_GENERATED_DIR");
  }

 private:
  std::optional<std::string> old_;
};

class GeneratedLayers : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("errshim-generated-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  static std::string layer(const std::string& id, const std::string& tmpl) {
    return testing::file_yaml(testing::entry_yaml(id, tmpl));
  }

  fs::path dir_;
};

TEST_F(GeneratedLayers, LoadsTheLayerNamedByLibrary) {
  write("mylib.yaml", layer("mylib.gen.full", "the cache of {n} entries is full"));
  ScopedGeneratedDir env(dir_);
  const CatalogPtr c = CatalogBuilder().add_embedded().add_generated("mylib").build();
  ASSERT_NE(c->find("mylib.gen.full"), nullptr);
  const auto d = c->diagnose("the cache of 9 entries is full");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "mylib.gen.full");
  EXPECT_EQ(CatalogBuilder::generated_layers(), std::vector<std::string>{"mylib"});
}

TEST_F(GeneratedLayers, PrefersTheSnapshotToTheYaml) {
  write("mylib.snapshot", testing::catalog_from(layer("mylib.from_snapshot", "snapshot text {x} here"))->snapshot());
  write("mylib.yaml", layer("mylib.from_yaml", "yaml text {x} here"));
  ScopedGeneratedDir env(dir_);
  const CatalogPtr c = CatalogBuilder().add_generated("mylib").build();
  EXPECT_NE(c->find("mylib.from_snapshot"), nullptr);
  EXPECT_EQ(c->find("mylib.from_yaml"), nullptr);
  EXPECT_TRUE(c->warnings().empty());
}

TEST_F(GeneratedLayers, ADamagedSnapshotFallsBackToItsYamlWithAWarning) {
  write("mylib.snapshot", "not a snapshot at all");
  write("mylib.yaml", layer("mylib.from_yaml", "yaml text {x} here"));
  ScopedGeneratedDir env(dir_);
  const CatalogPtr c = CatalogBuilder().add_generated("mylib").build();
  EXPECT_NE(c->find("mylib.from_yaml"), nullptr);
  ASSERT_EQ(c->warnings().size(), 1u);
  EXPECT_NE(c->warnings()[0].to_string().find("mylib.snapshot"), std::string::npos);
  EXPECT_NE(c->warnings()[0].to_string().find("parsing"), std::string::npos);
}

TEST_F(GeneratedLayers, ADamagedSnapshotAloneIsAProblem) {
  write("mylib.snapshot", "not a snapshot at all");
  ScopedGeneratedDir env(dir_);
  EXPECT_THROW(CatalogBuilder().add_generated("mylib").build(), catalog_error);
}

TEST_F(GeneratedLayers, AMissingLayerNamesTheFolderAndTheVariable) {
  ScopedGeneratedDir env(dir_);
  try {
    CatalogBuilder().add_embedded().add_generated("nosuchlib").build();
    FAIL() << "built without the layer";
  } catch (const catalog_error& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    const std::string text = e.problems()[0].to_string();
    EXPECT_NE(text.find("'nosuchlib'"), std::string::npos) << text;
    EXPECT_NE(text.find(dir_.string()), std::string::npos) << text;
    EXPECT_NE(text.find("ERRSHIM_GENERATED_DIR"), std::string::npos) << text;
  }
}

TEST_F(GeneratedLayers, ANameThatIsAPathIsNotLookedUp) {
  fs::create_directories(dir_ / "sub");
  write("sub/evil.yaml", layer("evil.entry", "evil text {x} here"));
  ScopedGeneratedDir env(dir_);
  for (const char* name : {"sub/evil", "../sub/evil", "", "Candle"})
    EXPECT_THROW(CatalogBuilder().add_generated(name).build(), catalog_error) << name;
}

// Layers put together keep the keys each chose for its own entries: an entry
// matched through another entry's key would miss its own message. A later
// layer still replaces an earlier entry of the same id.
TEST_F(GeneratedLayers, EveryLayerMatchesThroughItsOwnKeysWhenLayersArePutTogether) {
  using testing::entry_yaml;
  using testing::file_yaml;
  const CatalogPtr first = CatalogBuilder()
                               .add_yaml(file_yaml(entry_yaml("t.one", "alpha engine stalled at step {step}") +
                                                   entry_yaml("t.two", "bravo queue overflowed by {n} items") +
                                                   entry_yaml("t.three", "charlie socket closed unexpectedly")),
                                         "first.yaml")
                               .build();
  const CatalogPtr all = CatalogBuilder()
                             .add_embedded()
                             .add_snapshot(first->snapshot(), "first.snapshot")
                             .add_yaml(file_yaml(entry_yaml("t.two", "delta cache was evicted early") +
                                                 entry_yaml("t.four", "echo stream ended before the header")),
                                       "second.yaml")
                             .build();
  const std::pair<const char*, const char*> cases[] = {
      {"alpha engine stalled at step 12", "t.one"},
      {"delta cache was evicted early", "t.two"},
      {"charlie socket closed unexpectedly", "t.three"},
      {"echo stream ended before the header", "t.four"},
      {"kv_cache_enabled=true is not supported", "candle.metavoice.kv_cache_enabled"},
  };
  for (const auto& [message, id] : cases) {
    const auto d = all->diagnose(message);
    ASSERT_TRUE(d) << message;
    EXPECT_EQ(d->id(), id) << message;
  }
  EXPECT_FALSE(all->diagnose("bravo queue overflowed by 3 items"));
}

// A generated snapshot is read lazily: its index when the catalog is built,
// each entry's record when the entry is first met.
std::string two_entry_snapshot() {
  return testing::catalog_from(testing::file_yaml(testing::entry_yaml("mylib.first", "first lazy text {x} here") +
                                                  testing::entry_yaml("mylib.second", "second lazy text {y} there")))
      ->snapshot();
}

TEST_F(GeneratedLayers, ALazilyReadLayerDecodesEntriesAsTheFullReaderDoes) {
  const std::string bytes = Catalog::embedded()->snapshot();
  write("big.snapshot", bytes);
  std::vector<Problem> problems;
  const auto lazy = detail::LazySnapshot::open(dir_ / "big.snapshot", problems);
  const detail::Snapshot full = detail::read_snapshot(bytes, "big.snapshot", problems);
  ASSERT_TRUE(problems.empty()) << problems.front().to_string();
  ASSERT_TRUE(lazy);
  ASSERT_EQ(lazy->size(), full.entries.size());
  std::vector<std::shared_ptr<const Entry>> decoded;
  for (std::size_t i = 0; i < lazy->size(); ++i) {
    std::string problem;
    decoded.push_back(lazy->decode(i, problem));
    ASSERT_TRUE(decoded.back()) << problem;
    EXPECT_EQ(lazy->id(i), full.entries[i]->id);
  }
  // Every field of every entry and every plan item: the bytes they write.
  EXPECT_EQ(detail::write_snapshot(decoded, lazy->plan()), detail::write_snapshot(full.entries, full.plan));
}

TEST_F(GeneratedLayers, ALazilyReadLayerWritesBackItsOwnSnapshot) {
  const std::string bytes = two_entry_snapshot();
  write("mylib.snapshot", bytes);
  ScopedGeneratedDir env(dir_);
  const CatalogPtr c = CatalogBuilder().add_generated("mylib").build();
  EXPECT_EQ(c->size(), 2u);
  EXPECT_EQ(c->snapshot(), bytes);
}

// The index is whole, one record is damaged: the catalog builds, the other
// entry matches, and the damaged one never matches and says why.
TEST_F(GeneratedLayers, ADamagedRecordNeverMatchesAndSaysWhy) {
  std::string bytes = two_entry_snapshot();
  // The second record's template (the first occurrence is in the index's plan keys or the record).
  const std::size_t at = bytes.rfind("second lazy text");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'S';
  write("mylib.snapshot", bytes);
  ScopedGeneratedDir env(dir_);
  const CatalogPtr c = CatalogBuilder().add_generated("mylib").build();
  EXPECT_EQ(c->diagnose("first lazy text 1 here")->id(), "mylib.first");
  const MatchResult r = c->match("second lazy text 2 there");
  EXPECT_FALSE(r.diagnosis);
  ASSERT_FALSE(r.problems.empty());
  EXPECT_NE(r.problems[0].find("mylib.second"), std::string::npos) << r.problems[0];
  EXPECT_NE(r.problems[0].find("checksum does not match"), std::string::npos) << r.problems[0];
  ASSERT_NE(c->find("mylib.second"), nullptr);
  EXPECT_NE(c->find("mylib.second")->cause.find("rebuild the snapshot"), std::string::npos);
}

// Records are read when first needed, not mapped: a layer file cut short
// under a running process gives a problem, never a SIGBUS.
TEST_F(GeneratedLayers, ALayerFileCutShortAfterTheBuildGivesAProblemNotACrash) {
  const std::string bytes = two_entry_snapshot();
  write("mylib.snapshot", bytes);
  ScopedGeneratedDir env(dir_);
  const CatalogPtr c = CatalogBuilder().add_generated("mylib").build();
  fs::resize_file(dir_ / "mylib.snapshot", bytes.find("first lazy text") + 4);
  const MatchResult r = c->match("second lazy text 2 there");
  EXPECT_FALSE(r.diagnosis);
  ASSERT_FALSE(r.problems.empty());
  EXPECT_NE(r.problems[0].find("shorter"), std::string::npos) << r.problems[0];
}

TEST_F(GeneratedLayers, ADamagedIndexFallsBackToTheYamlWithAWarning) {
  std::string bytes = two_entry_snapshot();
  const std::size_t at = bytes.find("mylib.first");  // the index holds the ids first
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'M';
  write("mylib.snapshot", bytes);
  write("mylib.yaml", layer("mylib.from_yaml", "yaml text {x} here"));
  ScopedGeneratedDir env(dir_);
  const CatalogPtr c = CatalogBuilder().add_generated("mylib").build();
  EXPECT_NE(c->find("mylib.from_yaml"), nullptr);
  ASSERT_EQ(c->warnings().size(), 1u);
  EXPECT_NE(c->warnings()[0].to_string().find("index checksum"), std::string::npos) << c->warnings()[0].to_string();
}

// Threads meeting the same entries first at the same time decode each once:
// every thread gets the same entry object.
TEST(LazyEntries, ThreadsMeetingAnEntryAtOnceShareOneDecodedEntry) {
  std::vector<Problem> problems;
  const std::string bytes = Catalog::embedded()->snapshot();
  const auto lazy = detail::LazySnapshot::read(bytes, "embedded", problems);
  ASSERT_TRUE(lazy);
  std::shared_ptr<const detail::LazySnapshot> shared = lazy;
  detail::EntryTable table;
  for (std::size_t i = 0; i < lazy->size(); ++i) table.add(shared, i, false);
  std::vector<std::vector<const Entry*>> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = 0; i < table.size(); ++i) seen[t].push_back(table.get((i * 7 + t) % table.size()).get());
    });
  for (std::thread& th : threads) th.join();
  for (std::size_t t = 0; t < seen.size(); ++t)
    for (std::size_t i = 0; i < table.size(); ++i) {
      const std::size_t index = (i * 7 + t) % table.size();
      ASSERT_EQ(seen[t][i], table.get(index).get());
      EXPECT_EQ(seen[t][i]->id, table.id(index));
    }
}

// The embedded snapshot is written by a build step that fails on any
// problem, so its raw patterns and `unless` lists compiled then: a process
// loading it decodes and compiles no entry until a message meets it. Read
// either way, the same snapshot matches every example of the catalog alike,
// the `unless` vetoes included.
TEST(LazyEntries, ASnapshotCompiledWhenWrittenWaitsForFirstUseAndMatchesTheSame) {
  std::vector<Problem> problems;
  const CatalogPtr catalog = Catalog::embedded();
  const std::string bytes = catalog->snapshot();
  const auto unchecked = detail::LazySnapshot::read(bytes, "embedded", problems);
  const auto checked =
      detail::LazySnapshot::read(bytes, "embedded", problems, detail::LazySnapshot::Regexes::compiled_when_written);
  ASSERT_TRUE(unchecked && checked);
  const auto matcher = [&problems](const std::shared_ptr<detail::LazySnapshot>& lazy) {
    std::shared_ptr<const detail::LazySnapshot> shared = lazy;
    detail::EntryTable table;
    for (std::size_t i = 0; i < lazy->size(); ++i) table.add(shared, i, false);
    return std::make_unique<detail::Matcher>(std::move(table), problems, lazy->plan());
  };
  const auto eager = matcher(unchecked), deferred = matcher(checked);
  ASSERT_TRUE(problems.empty()) << problems.front().to_string();
  EXPECT_GT(eager->stats().compiled, 0u);  // the catalog has raw patterns and `unless` lists
  EXPECT_EQ(deferred->stats().compiled, 0u);
  std::size_t vetoes = 0;
  for (const auto& e : catalog->entries()) {
    std::vector<std::pair<std::string, Context>> texts;
    for (const MatchExample& x : e->match_examples) texts.emplace_back(x.text, x.context);
    for (const NoMatchExample& x : e->no_match_examples) texts.emplace_back(x.text, Context{});
    for (const auto& [text, context] : texts) {
      const MatchResult a = eager->match(text, context), b = deferred->match(text, context);
      ASSERT_EQ(a.diagnosis.has_value(), b.diagnosis.has_value()) << e->id << ": " << text;
      if (a.diagnosis) {
        EXPECT_EQ(a.diagnosis->entry->id, b.diagnosis->entry->id) << text;
      }
    }
    if (!e->unless.empty()) vetoes += e->no_match_examples.size();
  }
  EXPECT_GT(vetoes, 0u);  // some examples are there for an `unless`
  EXPECT_TRUE(deferred->compile_all().empty());
}

#ifdef ERRSHIM_GENERATED_LAYER_DIR
// The candle layer this build snapshotted: on top of the embedded catalog a
// generated entry explains what no curated one does, and a curated entry
// still wins its own message.
TEST(GeneratedCandleLayer, AddsGeneratedEntriesUnderTheCuratedOnes) {
  ScopedGeneratedDir env(ERRSHIM_GENERATED_LAYER_DIR);
  const CatalogPtr plain = CatalogBuilder().add_embedded().build();
  const CatalogPtr with = CatalogBuilder().add_embedded().add_generated("candle").build();
  EXPECT_GT(with->size(), plain->size() + 500);
  const std::string generated_only = "Metal contiguous elu F16 not implemented";
  EXPECT_FALSE(plain->diagnose(generated_only));
  const auto d = with->diagnose(generated_only);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "candle.gen.core.metal-contiguous-elu-not-implemented");
  const auto curated = with->diagnose("kv_cache_enabled=true is not supported");
  ASSERT_TRUE(curated);
  EXPECT_EQ(curated->id(), "candle.metavoice.kv_cache_enabled");
}

// The transformers layer: loaded by library name, an entry generated from
// logits_process.py (BarkEosPrioritizerLogitsProcessor, 4.35 on) explains its
// text only within the releases whose sources hold it, and a curated entry
// keeps its message.
TEST(GeneratedTransformersLayer, ExplainsAGeneratedTextWithinItsVersionRange) {
  ScopedGeneratedDir env(ERRSHIM_GENERATED_LAYER_DIR);
  const CatalogPtr plain = CatalogBuilder().add_embedded().build();
  const CatalogPtr with = CatalogBuilder().add_embedded().add_generated("transformers").build();
  EXPECT_GT(with->size(), plain->size() + 500);
  const std::string generated_only = "`min_eos_p` has to be a positive float, but is -0.5";
  EXPECT_FALSE(plain->diagnose(generated_only));
  const auto d = with->diagnose(generated_only);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "transformers.gen.generation-logits-process.min-eos-has-to-be-positive-float-but");
  EXPECT_EQ(d->entry->source.path, "src/transformers/generation/logits_process.py");
  Context newer, older;
  newer.values["transformers"] = "4.46.1";
  older.values["transformers"] = "4.30.2";
  EXPECT_TRUE(with->diagnose(generated_only, newer));
  EXPECT_FALSE(with->diagnose(generated_only, older));
  const auto curated = with->diagnose("AttributeError: 'DynamicCache' object has no attribute 'get_max_length'");
  ASSERT_TRUE(curated);
  EXPECT_EQ(curated->id(), "transformers.cache_api.get_max_length_removed");
}
#endif

}  // namespace
}  // namespace errshim
