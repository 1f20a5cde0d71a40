// CatalogBuilder::add_generated: finding a generated layer by library name,
// its snapshot before its YAML, and a clear problem when it is not there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <errshim/catalog.hpp>

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
    if (old_) ::setenv("ERRSHIM_GENERATED_DIR", old_->c_str(), 1);
    else ::unsetenv("ERRSHIM_GENERATED_DIR");
  }

 private:
  std::optional<std::string> old_;
};

class GeneratedLayers : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("errshim-generated-" + std::to_string(::getpid()) + "-" +
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
  write("mylib.snapshot",
        testing::catalog_from(layer("mylib.from_snapshot", "snapshot text {x} here"))->snapshot());
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
  const CatalogPtr all =
      CatalogBuilder()
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
