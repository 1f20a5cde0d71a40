// The catalog cache (CatalogBuilder::cache_in): a YAML layer built once is
// read back from its snapshot while its bytes stay the same; changed bytes,
// a damaged, foreign or hostile entry, or a folder others can write fall
// back to parsing the YAML (with a warning), and a layer with problems is
// never cached.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errshim/catalog.hpp>

#include "matcher.hpp"
#include "snapshot.hpp"
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
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = c == '/' ? '_' : c;  // a TEST_P's name holds one
    root_ = fs::path(::testing::TempDir()) / ("errshim_cache_" + name);
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
  CatalogPtr build() const { return build_in(cache_dir()); }
  CatalogPtr build_in(const fs::path& cache) const {
    return CatalogBuilder().add_path(yaml_dir()).cache_in(cache).build();
  }

  // Builds t.one from its YAML once: its cache entry, read back.
  fs::path cache_t_one() const {
    write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}")));
    build();
    EXPECT_EQ(cached().size(), 1u);
    return cached().empty() ? fs::path() : cached()[0];
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static detail::Snapshot read_entry(const fs::path& p) {
    std::vector<Problem> problems;
    detail::Snapshot snap = detail::read_snapshot(read(p), p.string(), problems);
    EXPECT_TRUE(problems.empty()) << problems.front().to_string();
    return snap;
  }
  // The entry's snapshot with the first entry's cause changed to `cause`,
  // sealed with a valid checksum and the layer's own source hash: what only
  // someone who can write the folder can put there.
  static std::string doctored(const fs::path& entry, const std::string& cause) {
    detail::Snapshot snap = read_entry(entry);
    Entry e = *snap.entries.at(0);
    e.cause = cause;
    e.remediation.at(0).fix.emplace();
    e.remediation.at(0).fix->set.push_back({"trust_remote_code", Value{Value::Type::boolean, "true"}});
    e.remediation.at(0).fix->safety = Safety::safe;
    snap.entries[0] = std::make_shared<const Entry>(std::move(e));
    return detail::write_snapshot(snap.entries, snap.plan, snap.source);
  }
  // Whether a warning of `c` names `file` and says `fragment`.
  static ::testing::AssertionResult warned(const CatalogPtr& c, const fs::path& file, const std::string& fragment) {
    std::string all;
    for (const Problem& w : c->warnings()) {
      if (w.where.file == file.string() && w.message.find(fragment) != std::string::npos)
        return ::testing::AssertionSuccess();
      all += "\n  " + w.to_string();
    }
    return ::testing::AssertionFailure() << "no warning on " << file << " saying '" << fragment
                                         << "'; warnings:" << all;
  }
  // The entry holds t.one as the YAML gives it.
  static bool rewritten(const fs::path& entry) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(entry, ec))) return false;
    std::vector<Problem> problems;
    const detail::Snapshot snap = detail::read_snapshot(read(entry), entry.string(), problems);
    return problems.empty() && snap.entries.size() == 1 && snap.entries[0]->id == "t.one" &&
           snap.entries[0]->cause == "c";
  }

  fs::path root_;
};

TEST_F(CatalogCache, ASecondBuildOfTheSameBytesReadsTheCachedSnapshot) {
  const fs::path entry = cache_t_one();
  EXPECT_EQ(entry.extension(), ".snapshot");
  // Change what the entry holds: what the next build returns shows where it
  // came from.
  write(entry, doctored(entry, "from the cache"));
  const CatalogPtr second = build();
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ(second->entries()[0]->cause, "from the cache");
  EXPECT_TRUE(second->warnings().empty());
  // Without the cache, the YAML as it is.
  EXPECT_EQ(CatalogBuilder().add_path(yaml_dir()).build()->entries()[0]->cause, "c");
}

TEST_F(CatalogCache, ASnapshotOfOtherBytesAtTheEntrysNameIsNotUsed) {
  const fs::path entry = cache_t_one();
  // Another catalog's snapshot, checksum-valid: as `errshim snapshot` writes
  // it, and as the cache writes it for other YAML.
  const std::string yaml = file_yaml(entry_yaml("t.one", "first message {x}", "    tags: [planted]\n"));
  for (const std::string& planted :
       {CatalogBuilder().add_yaml(yaml, (yaml_dir() / "a.yaml").string()).build()->snapshot(), [&] {
          const fs::path other = root_ / "other";
          fs::create_directories(other);
          write(other / "a.yaml", yaml);
          CatalogBuilder().add_path(other).cache_in(root_ / "other-cache").build();
          return read(fs::directory_iterator(root_ / "other-cache")->path());
        }()}) {
    write(entry, planted);
    const CatalogPtr cat = build();
    ASSERT_EQ(cat->size(), 1u);
    EXPECT_TRUE(cat->entries()[0]->tags.empty());  // the YAML's, not the planted one
    EXPECT_TRUE(warned(cat, entry, "a snapshot of other bytes than this layer's"));
    EXPECT_TRUE(rewritten(entry));
  }
}

TEST_F(CatalogCache, TheCachedCatalogAnswersAsTheYamlDoes) {
  write(yaml_dir() / "a.yaml",
        file_yaml(entry_yaml("t.one", "first message {x}") + entry_yaml("t.two", "second {y} here")));
  write(yaml_dir() / "b.yaml", file_yaml(entry_yaml("t.three", "third {z} there")));
  const CatalogPtr parsed = build();
  const CatalogPtr cached_build = build();  // from the cache
  ASSERT_EQ(cached().size(), 1u);  // one entry for the folder's layer
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
  const fs::path entry = cache_t_one();
  const auto size = fs::file_size(entry);
  fs::resize_file(entry, size / 2);
  const CatalogPtr cat = build();
  EXPECT_EQ(cat->entries()[0]->id, "t.one");
  EXPECT_TRUE(warned(cat, entry, "checksum does not match"));
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
  EXPECT_TRUE(warned(cat, root_ / "not-a-folder", "cannot open the catalog cache folder"));
  EXPECT_TRUE(fs::is_regular_file(root_ / "not-a-folder"));
}

TEST_F(CatalogCache, AMissingFolderIsCreatedForThisUserOnly) {
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}")));
  const fs::path dir = root_ / "new" / "cache";
  EXPECT_EQ(build_in(dir)->entries()[0]->id, "t.one");
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // ... and used.
  EXPECT_TRUE(build_in(dir)->warnings().empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

// A folder someone else can write: they decide what the catalog holds (a
// catch-all entry whose `safe` fix sets trust_remote_code), and in a sticky
// folder its owner could never repair an entry they planted. Not used at all.
struct UntrustedFolder {
  const char* name;
  mode_t mode;
  bool foreign_owner;
};

class CatalogCacheUntrusted : public CatalogCache, public ::testing::WithParamInterface<UntrustedFolder> {};

TEST_P(CatalogCacheUntrusted, IsNotUsedAndNotWritten) {
  const fs::path good = cache_t_one();
  const fs::path shared = root_ / "shared";
  fs::create_directories(shared);
  const fs::path planted = shared / good.filename();
  write(planted, doctored(good, "planted"));
  ASSERT_EQ(::chmod(shared.c_str(), GetParam().mode), 0);
  if (GetParam().foreign_owner) {
    ASSERT_EQ(::chown(shared.c_str(), 65534, 65534), 0);  // nobody
  }
  const std::string before = read(planted);
  const CatalogPtr cat = build_in(shared);
  ASSERT_EQ(cat->size(), 1u);
  EXPECT_EQ(cat->entries()[0]->cause, "c");
  EXPECT_FALSE(cat->entries()[0]->remediation[0].fix.has_value());
  EXPECT_TRUE(warned(cat, shared, GetParam().foreign_owner ? "belongs to user 65534" : "others can write it"));
  EXPECT_EQ(read(planted), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(shared), fs::directory_iterator()), 1);  // nothing written
}

INSTANTIATE_TEST_SUITE_P(Folders, CatalogCacheUntrusted,
                         ::testing::Values(UntrustedFolder{"OwnedByAnotherUser", 0700, true},
                                           UntrustedFolder{"WritableByGroup", 0770, false},
                                           UntrustedFolder{"WritableByAll", 0777, false},
                                           UntrustedFolder{"WritableByAllSticky", 01777, false}),
                         [](const ::testing::TestParamInfo<UntrustedFolder>& i) { return std::string(i.param.name); });

TEST_F(CatalogCache, AFifoAtTheEntrysNameIsNeverOpenedAndIsReplaced) {
  const fs::path entry = cache_t_one();
  fs::remove(entry);
  ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0);
  // A second name for the FIFO lets this test release the writer below
  // after the entry's name is reused.
  const fs::path fifo = root_ / "fifo";
  ASSERT_EQ(::link(entry.c_str(), fifo.c_str()), 0);
  // Feeds and closes the FIFO once a reader opens it, so a build that does
  // open it (as the old reader did) reads garbage instead of blocking.
  std::atomic<bool> opened{false};
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // returns once a reader opens it
    opened = true;
    if (fd < 0) return;
    const char junk[] = "not a snapshot";
    EXPECT_GT(::write(fd, junk, sizeof junk), 0);
    ::close(fd);
  });
  const CatalogPtr cat = build();
  const bool opened_by_build = opened;
  // Release the writer: open the FIFO for reading without blocking.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  writer.join();
  if (reader >= 0) ::close(reader);
  EXPECT_FALSE(opened_by_build);
  EXPECT_EQ(cat->entries()[0]->id, "t.one");
  EXPECT_TRUE(warned(cat, entry, "it is a FIFO, not a regular file"));
  EXPECT_TRUE(rewritten(entry));
}

TEST_F(CatalogCache, ASymlinkAtTheEntrysNameIsNotFollowed) {
  const fs::path entry = cache_t_one();
  // To a sound entry elsewhere (a link could point anywhere the victim can
  // read), and to an endless device.
  const fs::path copy = root_ / "elsewhere.snapshot";
  fs::copy_file(entry, copy);
  for (const fs::path& target : {copy, fs::path("/dev/zero")}) {
    fs::remove(entry);
    fs::create_symlink(target, entry);
    const CatalogPtr cat = build();
    EXPECT_EQ(cat->entries()[0]->id, "t.one");
    EXPECT_TRUE(warned(cat, entry, "it is a symbolic link, not a regular file")) << target;
    EXPECT_TRUE(rewritten(entry)) << target;
  }
}

TEST_F(CatalogCache, AHugeEntryIsRefusedUnread) {
  const fs::path entry = cache_t_one();
  fs::resize_file(entry, std::uintmax_t{64} << 30);  // sparse: 64 GiB of zeros on no disk
  const CatalogPtr cat = build();
  EXPECT_EQ(cat->entries()[0]->id, "t.one");
  EXPECT_TRUE(warned(cat, entry, "more than a snapshot of this layer can"));
  EXPECT_TRUE(rewritten(entry));
}

// A checksum-valid entry whose entries a YAML build would refuse: the YAML
// is parsed around it (the build does not fail on a cache entry) and it is
// rewritten.
TEST_F(CatalogCache, AnEntryBreakingTheLoadersRulesIsParsedAroundAndRewritten) {
  const fs::path entry = cache_t_one();
  const detail::Snapshot good = read_entry(entry);
  struct Case {
    const char* what;
    std::vector<std::shared_ptr<const Entry>> entries;
  };
  Entry raw = *good.entries[0];
  raw.template_text.clear();
  raw.pattern = "first (message";  // a raw pattern that does not compile
  const std::vector<Case> cases = {
      {"duplicate id", {good.entries[0], good.entries[0]}},
      {"pattern does not compile", {std::make_shared<const Entry>(raw)}},
  };
  for (const Case& c : cases) {
    write(entry, detail::write_snapshot(c.entries, detail::plan_matching(c.entries), good.source));
    CatalogPtr cat;
    ASSERT_NO_THROW(cat = build()) << c.what;
    ASSERT_EQ(cat->size(), 1u) << c.what;
    EXPECT_EQ(cat->entries()[0]->template_text, "first message {x}") << c.what;
    EXPECT_TRUE(warned(cat, entry, c.what));
    EXPECT_TRUE(warned(cat, entry, "entry 't.one'")) << c.what;
    EXPECT_TRUE(rewritten(entry)) << c.what;
  }
}

TEST_F(CatalogCache, APatternThatDoesNotCompileInTheYamlIsNotCached) {
  write(yaml_dir() / "a.yaml",
        file_yaml("  - id: t.raw\n    pattern: 'first (message'\n    source: {path: src/x.rs, line: 10}\n"
                  "    error_class: E\n    kind: validation\n    cause: c\n    trigger: t\n"
                  "    remediation:\n      - text: r\n    examples:\n      match: ['first message']\n"));
  EXPECT_THROW(build(), catalog_error);
  EXPECT_TRUE(cached().empty());
}

TEST_F(CatalogCache, TheCliPrintsWhyTheCacheWasNotUsed) {
  write(yaml_dir() / "a.yaml", file_yaml(entry_yaml("t.one", "first message {x}")));
  const fs::path shared = root_ / "shared";
  fs::create_directories(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const std::string cmd = std::string(ERRSHIM_CLI) + " explain --catalog " + yaml_dir().string() + " --cache " +
                          shared.string() + " 'first message 42' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_NE(out.find("errshim: warning: " + shared.string() + ": catalog cache folder not used: others can write it"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("t.one"), std::string::npos) << out;
}

}  // namespace
}  // namespace errshim
