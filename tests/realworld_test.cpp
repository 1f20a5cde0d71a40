// The corpus of real reports (tests/data/realworld/: error output as users
// pasted it in public issues, with the raise site located upstream) against
// the embedded catalog. A ratchet: no case may be claimed by an entry pinned
// to another file; the cases recorded as claimed must stay claimed at their
// raise file; the share claimed at the raise file must not drop below the
// floor each data file records. Unclaimed cases are the work list for new
// entries: reported, not failed.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdio>
#include <ostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <errshim/errshim.hpp>

namespace errshim {
namespace {

const std::string kDir = std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/realworld/";
const char* const kFiles[] = {"candle.yaml", "transformers.yaml", "pytorch.yaml"};

struct Case {
  std::string file;
  std::string library;  // the data file's `library`
  std::string id;
  std::string url;
  std::string version;  // empty when the reporter gave none
  std::string text;
  std::string repo;
  std::vector<std::string> paths;  // raise.path first, then alt_paths
  bool expect_claim = true;  // `expect: claim`; false for `expect: none`
  bool claimed = false;  // recorded as claimed at the raise file today
  std::string known_wrong;  // reason, when a wrong-file claim is a known catalog bug
  std::vector<std::string> wrappers;
};

// gtest prints a parameter on failure: the id is enough.
void PrintTo(const Case& k, std::ostream* os) { *os << k.id; }

std::string str(const YAML::Node& n) { return n && n.IsScalar() ? n.as<std::string>() : std::string(); }

// Loads every case; problems with the data are collected rather than thrown,
// so the well-formedness test can name each one and the table still builds.
struct Corpus {
  std::vector<Case> cases;
  std::vector<std::string> problems;
  std::map<std::string, double> floors;  // library -> claimed_share_floor
};

const Corpus& corpus() {
  static const Corpus c = [] {
    Corpus out;
    for (const char* f : kFiles) {
      YAML::Node doc;
      try {
        doc = YAML::LoadFile(kDir + f);
      } catch (const YAML::Exception& e) {
        out.problems.push_back(std::string(f) + ": " + e.what());
        continue;
      }
      const std::string library = str(doc["library"]);
      if (library.empty()) out.problems.push_back(std::string(f) + ": no `library`");
      if (doc["claimed_share_floor"])
        out.floors[library] = doc["claimed_share_floor"].as<double>();
      else
        out.problems.push_back(std::string(f) + ": no `claimed_share_floor`");
      if (!doc["cases"] || !doc["cases"].IsSequence()) {
        out.problems.push_back(std::string(f) + ": no `cases` list");
        continue;
      }
      for (const auto& n : doc["cases"]) {
        Case k;
        k.file = f;
        k.library = library;
        k.id = str(n["id"]);
        const std::string where = std::string(f) + ":" + std::to_string(n.Mark().line + 1) + ": case '" + k.id + "'";
        k.url = str(n["url"]);
        k.version = str(n["version"]);
        if (k.version == "null") k.version.clear();
        k.text = str(n["text"]);
        const YAML::Node raise = n["raise"];
        k.repo = str(raise["repo"]);
        if (!str(raise["path"]).empty()) k.paths.push_back(str(raise["path"]));
        if (n["alt_paths"])
          for (const auto& p : n["alt_paths"]) k.paths.push_back(p.as<std::string>());
        const std::string expect = str(n["expect"]);
        k.expect_claim = expect == "claim";
        k.claimed = n["claimed"] && n["claimed"].as<bool>();
        k.known_wrong = str(n["known_wrong"]);
        if (n["wrappers"])
          for (const auto& w : n["wrappers"]) k.wrappers.push_back(w.as<std::string>());
        if (k.id.empty()) out.problems.push_back(where + ": no `id`");
        if (k.url.rfind("https://github.com/", 0) != 0)
          out.problems.push_back(where + ": `url` is not a GitHub URL: '" + k.url + "'");
        if (k.text.empty()) out.problems.push_back(where + ": empty `text`");
        if (k.repo.empty() || k.paths.empty()) out.problems.push_back(where + ": `raise` needs `repo` and `path`");
        if (expect != "claim" && expect != "none")
          out.problems.push_back(where + ": `expect` must be `claim` or `none`, got '" + expect + "'");
        if (!k.expect_claim && str(n["reason"]).empty())
          out.problems.push_back(where + ": `expect: none` needs a `reason`");
        if (!k.expect_claim && k.claimed) out.problems.push_back(where + ": `claimed: true` on an `expect: none` case");
        if (k.wrappers.empty()) out.problems.push_back(where + ": no `wrappers`");
        out.cases.push_back(std::move(k));
      }
    }
    return out;
  }();
  return c;
}

// What the catalog makes of one case.
enum class Outcome { unclaimed, at_raise_file, wrong_file };

struct Verdict {
  Outcome outcome = Outcome::unclaimed;
  std::string entry_id;
  std::string entry_path;
};

bool pinned_to(const Entry& e, const Case& k) {
  auto same = [&](const SourcePin& p) {
    if (!p.repo.empty() && p.repo != k.repo) return false;
    for (const auto& path : k.paths)
      if (p.path == path) return true;
    return false;
  };
  if (same(e.source)) return true;
  for (const SourcePin& p : e.also_at)
    if (same(p)) return true;
  return false;
}

// The reporter's library version, as the host would pass it. Only plain dotted
// versions: a commit or a tag of another project says nothing to a scope.
Context context_of(const Case& k) {
  Context c;
  const bool dotted = !k.version.empty() && k.version.find_first_not_of("0123456789.") == std::string::npos;
  if (dotted && k.library != "pytorch") c.values[k.library] = k.version;
  return c;
}

Verdict judge(const Case& k) {
  Verdict v;
  const auto d = Catalog::embedded()->diagnose(k.text, context_of(k));
  if (!d) return v;
  v.entry_id = d->id();
  v.entry_path = d->entry->source.path;
  v.outcome = pinned_to(*d->entry, k) ? Outcome::at_raise_file : Outcome::wrong_file;
  return v;
}

std::string gtest_name(const std::string& id) {
  std::string s;
  for (char c : id) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s.empty() ? std::string("unnamed") : s;
}

TEST(RealWorldCorpus, EveryCaseIsWellFormed) {
  const Corpus& c = corpus();
  for (const auto& p : c.problems) ADD_FAILURE() << p;
  std::set<std::string> seen;
  for (const auto& k : c.cases)
    EXPECT_TRUE(seen.insert(gtest_name(k.id)).second) << k.file << ": duplicate case id '" << k.id << "'";
  EXPECT_FALSE(c.cases.empty());
}

class RealWorld : public ::testing::TestWithParam<Case> {};

TEST_P(RealWorld, ClaimedOnlyAtItsRaiseFile) {
  const Case& k = GetParam();
  const Verdict v = judge(k);
  const std::string raise = k.repo + "/" + k.paths.front();
  if (!k.expect_claim) {
    EXPECT_EQ(v.outcome, Outcome::unclaimed)
        << k.id << " (" << k.url << ") is raised at " << raise << ", which no entry covers, but " << v.entry_id << " ("
        << v.entry_path << ") claims it";
    return;
  }
  if (!k.known_wrong.empty()) {
    // A known catalog bug is listed so the suite stays green while it is
    // open; once fixed, the listing must go.
    EXPECT_EQ(v.outcome, Outcome::wrong_file) << k.id << " is listed as known_wrong (" << k.known_wrong
                                              << ") but is no longer claimed at a wrong file: remove `known_wrong`";
    return;
  }
  EXPECT_NE(v.outcome, Outcome::wrong_file) << k.id << " (" << k.url << ") is raised at " << raise << " but "
                                            << v.entry_id << " (pinned to " << v.entry_path << ") claims it";
  if (k.claimed) {
    EXPECT_EQ(v.outcome, Outcome::at_raise_file)
        << k.id << " is recorded as claimed at " << raise << " but is now "
        << (v.outcome == Outcome::unclaimed ? std::string("unclaimed") : "won by " + v.entry_id);
  }
}

INSTANTIATE_TEST_SUITE_P(Reports, RealWorld, ::testing::ValuesIn(corpus().cases),
                         [](const ::testing::TestParamInfo<Case>& info) { return gtest_name(info.param.id); });

TEST(RealWorldCorpus, ShareClaimedAtRaiseFileStaysAtOrAboveTheRecordedFloor) {
  const Corpus& c = corpus();
  struct Tally {
    std::size_t cases = 0, expected = 0, at_file = 0, wrong = 0, none_ok = 0, none = 0, newly = 0;
  };
  std::map<std::string, Tally> by_lib;
  Tally all;
  for (const auto& k : c.cases) {
    const Verdict v = judge(k);
    for (Tally* t : {&by_lib[k.library], &all}) {
      ++t->cases;
      if (!k.expect_claim) {
        ++t->none;
        t->none_ok += v.outcome == Outcome::unclaimed;
        continue;
      }
      ++t->expected;
      t->at_file += v.outcome == Outcome::at_raise_file;
      t->wrong += v.outcome == Outcome::wrong_file;
      t->newly += v.outcome == Outcome::at_raise_file && !k.claimed;
    }
  }
  auto share = [](const Tally& t) { return t.expected ? double(t.at_file) / double(t.expected) : 0.0; };
  for (const auto& [lib, t] : by_lib) {
    std::printf(
        "realworld %-12s %4zu cases: %4zu/%-4zu claimed at the raise file (%.3f), %zu at a wrong file, "
        "%zu/%zu no-claim cases unclaimed; %zu claimed but not yet marked `claimed: true`\n",
        lib.c_str(), t.cases, t.at_file, t.expected, share(t), t.wrong, t.none_ok, t.none, t.newly);
    const auto floor = c.floors.find(lib);
    ASSERT_NE(floor, c.floors.end()) << lib;
    // The floor is written with three decimals; compare at that precision.
    EXPECT_GE(share(t) + 5e-4, floor->second) << lib << ": share claimed at the raise file " << share(t)
                                              << " dropped below the recorded floor " << floor->second;
  }
  std::printf("realworld total        %4zu cases: %4zu/%-4zu claimed at the raise file (%.3f), %zu at a wrong file\n",
              all.cases, all.at_file, all.expected, share(all), all.wrong);
}

}  // namespace
}  // namespace errshim
