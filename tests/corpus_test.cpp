// The shared corpus of real messages against the embedded catalog: every
// message, as given and wrapped the ways users meet it, must be won by an
// entry pinned to the record's own source file; no near miss may be claimed
// by another error's entry. Prints the coverage figure.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <errshim/errshim.hpp>

namespace errshim {
namespace {

const std::string kCorpus = std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/corpus/";

bool pinned_to(const Entry& e, const std::string& path) {
  if (e.source.path == path) return true;
  for (const SourcePin& p : e.also_at)
    if (p.path == path) return true;
  return false;
}

// A Python exception class from the record, for the traceback wrapper.
std::string python_class(const YAML::Node& record) {
  const std::string c = record["exception_class"] ? record["exception_class"].as<std::string>() : "";
  const bool plain = !c.empty() && c.find_first_of(" :") == std::string::npos;
  return plain ? c : "RuntimeError";
}

std::vector<std::pair<std::string, std::string>> wrapped(const YAML::Node& record, const std::string& m) {
  return {
      {"plain", m},
      {"python", "Traceback (most recent call last):\n  File \"/srv/app/main.py\", line 12, in <module>\n    run()\n" +
                     python_class(record) + ": " + m + "\n"},
      {"rust",
       "Error: model step failed\n\nCaused by:\n    0: " + m + "\n\nStack backtrace:\n   0: anyhow::error::bt\n"},
      {"log", "2026-11-30 10:01:42,123 ERROR [worker-3] " + m},
  };
}

TEST(Corpus, EveryMessageIsWonByAnEntryPinnedToItsSource) {
  const YAML::Node records = YAML::LoadFile(kCorpus + "messages.yaml");
  ASSERT_TRUE(records.IsSequence());
  const auto catalog = Catalog::embedded();
  std::size_t forms = 0, forms_ok = 0, records_ok = 0;
  for (const auto& r : records) {
    const std::string id = r["id"].as<std::string>();
    const std::string path = r["path"].as<std::string>();
    bool all = true;
    for (const auto& [how, text] : wrapped(r, r["example"].as<std::string>())) {
      ++forms;
      const auto d = catalog->diagnose(text);
      const bool ok = d && pinned_to(*d->entry, path);
      EXPECT_TRUE(ok) << id << " (" << how
                      << "): " << (d ? "won by " + d->id() + " at " + d->entry->source.path : "unmatched")
                      << ", expected an entry pinned to " << path;
      forms_ok += ok;
      all = all && ok;
    }
    records_ok += all;
  }
  std::printf("corpus coverage: %zu/%zu records, %zu/%zu forms (plain, Python traceback, Rust chain, log prefix)\n",
              records_ok, records.size(), forms_ok, forms);
}

TEST(Corpus, NearMissesAreUnclaimedOrClaimedByTheirOwnEntry) {
  const YAML::Node records = YAML::LoadFile(kCorpus + "near-misses.yaml");
  const auto catalog = Catalog::embedded();
  std::size_t unclaimed = 0, own = 0;
  for (const auto& r : records) {
    const std::string message = r["message"].as<std::string>();
    const std::string path = r["path"].as<std::string>();
    const auto d = catalog->diagnose(message);
    if (!d) {
      ++unclaimed;
      continue;
    }
    EXPECT_TRUE(pinned_to(*d->entry, path)) << "near miss '" << message << "' (" << path << ") is claimed by "
                                            << d->id() << " (" << d->entry->source.path << ")";
    own += pinned_to(*d->entry, path);
  }
  std::printf("near misses: %zu unclaimed, %zu claimed by their own entry, of %zu\n", unclaimed, own, records.size());
}

}  // namespace
}  // namespace errshim
