// The generated transformers layer (patterns/generated/transformers.yaml) as
// this build snapshotted it, loaded by library name on top of the embedded
// catalog: its entries explain what no curated one does, within the versions
// whose sources hold the text, and curated entries keep their messages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include <errshim/catalog.hpp>
#include <errshim/context.hpp>

namespace errshim {
namespace {

#ifdef ERRSHIM_GENERATED_LAYER_DIR
class GeneratedTransformersLayer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* old = std::getenv("ERRSHIM_GENERATED_DIR")) old_ = old;
    ::setenv("ERRSHIM_GENERATED_DIR", ERRSHIM_GENERATED_LAYER_DIR, 1);
  }
  void TearDown() override {
    if (old_) ::setenv("ERRSHIM_GENERATED_DIR", old_->c_str(), 1);
    else ::unsetenv("ERRSHIM_GENERATED_DIR");
  }
  static Context version(const std::string& v) {
    Context c;
    c.values["transformers"] = v;
    return c;
  }

 private:
  std::optional<std::string> old_;
};

// BarkEosPrioritizerLogitsProcessor's check, in logits_process.py from 4.35 on
constexpr const char* kGeneratedOnly = "`min_eos_p` has to be a positive float, but is -0.5";

TEST_F(GeneratedTransformersLayer, LoadsByLibraryNameAndExplainsAGeneratedText) {
  const CatalogPtr plain = CatalogBuilder().add_embedded().build();
  const CatalogPtr with = CatalogBuilder().add_embedded().add_generated("transformers").build();
  EXPECT_GT(with->size(), plain->size() + 500);
  EXPECT_FALSE(plain->diagnose(kGeneratedOnly));
  const auto d = with->diagnose(kGeneratedOnly);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "transformers.gen.generation-logits-process.min-eos-has-to-be-positive-float-but");
  EXPECT_EQ(d->entry->source.path, "src/transformers/generation/logits_process.py");
}

TEST_F(GeneratedTransformersLayer, VersionRangeKeepsTheEntryToReleasesHoldingTheText) {
  const CatalogPtr with = CatalogBuilder().add_embedded().add_generated("transformers").build();
  EXPECT_TRUE(with->diagnose(kGeneratedOnly, version("4.46.1")));
  EXPECT_FALSE(with->diagnose(kGeneratedOnly, version("4.30.2")));
}

TEST_F(GeneratedTransformersLayer, CuratedEntryKeepsItsMessage) {
  const CatalogPtr with = CatalogBuilder().add_embedded().add_generated("transformers").build();
  const auto d = with->diagnose("AttributeError: 'DynamicCache' object has no attribute 'get_max_length'");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "transformers.cache_api.get_max_length_removed");
}
#endif

}  // namespace
}  // namespace errshim
