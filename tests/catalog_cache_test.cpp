// The catalog cache (CatalogBuilder::cache_in): a YAML layer built once is
// read back from its snapshot while its bytes stay the same; changed bytes,
// a damaged entry or an unwritable folder fall back to parsing the YAML, and
// a layer with problems is never cached.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <errshim/catalog.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

namespace fs = std::filesystem;
using testing::entry_yaml;
using testing::file_yaml;

// A fresh folder per test, removed afterwards.
class CatalogCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("errshim_cache_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "yaml");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path yaml_dir() const { return root_ / "yaml"; }
  fs::path cache_dir() const { return root_ / "cache"; }
  void write(const fs::path& p, const std::string& text) const { std::ofstream(p, std::ios::binary) << text; }
  std::vector<fs::path> cached() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cache_dir(), ec)) out.push_back(e.path());
    return out;
  }
  CatalogPtr build() const { return CatalogBuilder().add_path(yaml_dir()).cache_in(cache_dir()).build(); }

  fs::path root_;
};

TEST_F(CatalogCache, ASecondBuildOfTheSameBytesReadsTheCachedSnapshot) {
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}")));
  const CatalogPtr first = build();
  ASSERT_EQ(cached().size(), 1u);
  EXPECT_EQ(cached()[0].extension(), ".snapshot");
  // Put another catalog's snapshot under that entry's name: what the next
  // build returns shows where it came from.
  const std::string other =
      CatalogBuilder().add_yaml(file_yaml(entry_yaml("t.other", "other message")), "other.yaml").build()->snapshot();
  write(cached()[0], other);
  const CatalogPtr second = build();
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ(second->entries()[0]->id, "t.other");
  // Without the cache, the YAML as it is.
  EXPECT_EQ(CatalogBuilder().add_path(yaml_dir()).build()->entries()[0]->id, "t.one");
}

TEST_F(CatalogCache, TheCachedCatalogAnswersAsTheYamlDoes) {
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}") + entry_yaml("t.two", "second {y} here")));
  write(yaml_dir() / "b.yaml", file_yaml(entry_yaml("t.three", "third {z} there")));
  const CatalogPtr parsed = build();
  const CatalogPtr cached_build = build();  // from the cache
  ASSERT_EQ(cached().size(), 1u);           // one entry for the folder's layer
  ASSERT_EQ(cached_build->size(), parsed->size());
  for (std::size_t i = 0; i < parsed->size(); ++i) {
    EXPECT_EQ(cached_build->entries()[i]->id, parsed->entries()[i]->id);
    EXPECT_EQ(cached_build->entries()[i]->where.file, parsed->entries()[i]->where.file);
    EXPECT_EQ(cached_build->entries()[i]->where.line, parsed->entries()[i]->where.line);
  }
  const auto d = cached_build->diagnose("oops: second 42 here");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "t.two");
  EXPECT_EQ(*d->capture("y"), "42");
  // As one layer of several (the plan is then worked out again).
  const CatalogPtr layered = CatalogBuilder().add_embedded().add_path(yaml_dir()).cache_in(cache_dir()).build();
  EXPECT_EQ(layered->size(), Catalog::embedded()->size() + 3);
  EXPECT_EQ(layered->diagnose("third 7 there")->id(), "t.three");
}

TEST_F(CatalogCache, ChangedBytesAreParsedAndCachedAnew) {
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}")));
  build();
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "changed message {x}")));
  const CatalogPtr changed = build();
  EXPECT_EQ(changed->entries()[0]->template_text, "changed message {x}");
  EXPECT_EQ(cached().size(), 2u);
  // A renamed file is another layer too (names are in every position).
  fs::rename(yaml_dir() / "a.yaml", yaml_dir() / "renamed.yaml");
  EXPECT_NE(build()->entries()[0]->where.file.find("renamed.yaml"), std::string::npos);
  EXPECT_EQ(cached().size(), 3u);
}

TEST_F(CatalogCache, ADamagedEntryFallsBackToTheYamlAndIsRewritten) {
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}")));
  build();
  ASSERT_EQ(cached().size(), 1u);
  const fs::path entry = cached()[0];
  const auto size = fs::file_size(entry);
  fs::resize_file(entry, size / 2);
  const CatalogPtr cat = build();
  EXPECT_EQ(cat->entries()[0]->id, "t.one");
  EXPECT_EQ(fs::file_size(entry), size);
  EXPECT_EQ(cached().size(), 1u);  // no temporary file left behind
}

TEST_F(CatalogCache, ALayerWithProblemsIsNeverCached) {
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}", "    cuase: typo\n")));
  EXPECT_THROW(build(), catalog_error);
  EXPECT_TRUE(cached().empty());
  // Duplicate ids are a problem of the layer as a whole.
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}") + entry_yaml("t.one", "again {x}")));
  EXPECT_THROW(build(), catalog_error);
  EXPECT_TRUE(cached().empty());
}

TEST_F(CatalogCache, AFolderThatCannotBeWrittenIsNoError) {
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}")));
  write(root_ / "not-a-folder", "x");
  const CatalogPtr cat = CatalogBuilder().add_path(yaml_dir()).cache_in(root_ / "not-a-folder").build();
  EXPECT_EQ(cat->entries()[0]->id, "t.one");
  EXPECT_TRUE(fs::is_regular_file(root_ / "not-a-folder"));
}

}  // namespace
}  // namespace errshim
