// Catalog snapshots: a catalog loaded from its snapshot is the same catalog
// (every field, every answer, the same match plan), layers work as for YAML,
// and a damaged or foreign snapshot is refused with a problem instead of
// being misread.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <errshim/catalog.hpp>
#include <errshim/version.hpp>

#include "matcher.hpp"
#include "snapshot.hpp"
#include "test_catalogs.hpp"

namespace errshim {
namespace {

using testing::catalog_from;
using testing::entry_yaml;
using testing::file_yaml;

// Uses every field a catalog entry can carry.
std::string rich_yaml() {
  return file_yaml(entry_yaml("t.rich", "head dim {} is not supported for {dtype}",
                              "    captures: [head]\n"
                              "    capture_patterns: {head: '\\d+'}\n"
                              "    also_at:\n"
                              "      - {path: src/y.rs, line: 20, symbol: Y::check}\n"
                              "    severity: fatal\n"
                              "    priority: -2\n"
                              "    unless: ['cuda:\\d']\n"
                              "    tags: [a, b]\n"
                              "    applies_to: {candle: '>=0.5.1,<0.9.0', device: [metal, cuda]}\n"
                              "    preflight:\n"
                              "      - {kv_cache_enabled: true, model: 'mimi'}\n"
                              "      - {dtype: [f16, bf16], layers: 12}\n"
                              "    imported: true\n") +
                   "  - id: t.fixes\n"
                   "    pattern: '^(?<what>\\w+) overflowed'\n"
                   "    source: {path: src/z.rs, line: 30}\n"
                   "    library: other\n"
                   "    error_class: ValueError\n"
                   "    kind: resource\n"
                   "    cause: c\n"
                   "    trigger: t\n"
                   "    remediation:\n"
                   "      - text: set it\n"
                   "        fix: {set: {kv_repeat: 1, name: '{what}', ratio: 0.5, off: false, quoted: 'false'},\n"
                   "              remove: [x], safety: changes-output, reason: because,\n"
                   "              requires: {kv_cache_enabled: false}, conflicts: {dtype: f32}}\n"
                   "      - text: by hand\n"
                   "        fix: {safety: manual}\n"
                   "      - text: an action\n"
                   "        fix: {action: fallback-manual-attention, safety: safe}\n"
                   "    examples:\n"
                   "      match:\n"
                   "        - text: cache overflowed\n"
                   "          captures: {what: cache}\n"
                   "          context: {device: metal}\n"
                   "      no_match: ['cache did not overflow']\n");
}

// Every field of an entry, spelled out, so two entries compare whole.
std::string describe(const Entry& e) {
  auto loc = [](const Location& l) { return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.column); };
  auto pin = [](const SourcePin& p) {
    return p.repo + "|" + p.path + "|" + std::to_string(p.line) + "|" + p.commit + "|" + p.symbol;
  };
  auto val = [](const Value& v) { return std::to_string(static_cast<int>(v.type)) + "=" + v.text; };
  auto assigns = [&](const std::vector<std::pair<std::string, Value>>& a) {
    std::string s;
    for (const auto& [k, v] : a) s += k + ":" + val(v) + ",";
    return s;
  };
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += x + ",";
    return s;
  };
  std::string o = e.id + "\n" + e.template_text + "\n" + e.pattern + "\n" + list(e.capture_names) + "\n" +
                  pin(e.source) + "\n" + e.library + "|" + e.error_class + "|" + e.kind + "|" + e.severity + "\n" +
                  e.cause + "\n" + e.trigger + "\n" + list(e.tags) + "\n" + list(e.unless) + "\n" +
                  std::to_string(e.priority) + " " + std::to_string(e.imported) + " " + loc(e.where) + "\n";
  for (const SourcePin& p : e.also_at) o += "also " + pin(p) + "\n";
  for (const Remediation& r : e.remediation) {
    o += "rem " + r.text + "\n";
    if (r.fix)
      o += "fix " + assigns(r.fix->set) + " " + list(r.fix->remove) + " " + r.fix->action + " " +
           std::string(to_string(r.fix->safety)) + " " + r.fix->reason + " " + assigns(r.fix->requires_set) + " " +
           assigns(r.fix->conflicts) + "\n";
  }
  for (const MatchExample& m : e.match_examples) {
    o += "match " + m.text + " @" + loc(m.where);
    for (const Capture& c : m.captures) o += " " + c.name + "=" + c.value;
    for (const auto& [k, v] : m.context.values) o += " ctx " + k + "=" + v;
    o += "\n";
  }
  for (const NoMatchExample& m : e.no_match_examples) o += "no_match " + m.text + " @" + loc(m.where) + "\n";
  for (const ScopeCondition& c : e.applies_to) o += "scope " + c.key + " " + c.range + " " + list(c.any_of) + "\n";
  for (const PreflightCondition& c : e.preflight) {
    o += "preflight " + c.model;
    for (const auto& [k, vs] : c.keys) {
      o += " " + k + ":";
      for (const Value& v : vs) o += val(v) + ",";
    }
    o += "\n";
  }
  return o;
}

std::vector<Problem> problems_of(const CatalogBuilder& b) {
  try {
    b.build();
  } catch (const catalog_error& e) {
    return e.problems();
  }
  return {};
}

TEST(Snapshot, HoldsEveryFieldOfEveryEntry) {
  const CatalogPtr yaml = catalog_from(rich_yaml(), "rich.yaml");
  const std::string bytes = yaml->snapshot();
  const CatalogPtr snap = CatalogBuilder().add_snapshot(bytes).build();
  ASSERT_EQ(snap->size(), yaml->size());
  for (std::size_t i = 0; i < yaml->size(); ++i)
    EXPECT_EQ(describe(*snap->entries()[i]), describe(*yaml->entries()[i]));
  // What the reader reads, the writer writes back byte for byte.
  EXPECT_EQ(snap->snapshot(), bytes);
  // The fields the rich catalog sets are really there (not both empty).
  const Entry* rich = snap->find("t.rich");
  ASSERT_NE(rich, nullptr);
  EXPECT_EQ(rich->preflight.size(), 2u);
  EXPECT_EQ(rich->applies_to.size(), 2u);
  EXPECT_TRUE(rich->imported);
  EXPECT_EQ(rich->priority, -2);
  EXPECT_EQ(snap->find("t.fixes")->remediation.front().fix->set.size(), 5u);
}

TEST(Snapshot, TheEmbeddedCatalogGivesTheSameAnswers) {
  const CatalogPtr yaml = Catalog::embedded();
  const CatalogPtr snap = CatalogBuilder().add_snapshot(yaml->snapshot(), "embedded.snapshot").build();
  ASSERT_EQ(snap->size(), yaml->size());
  std::size_t checked = 0;
  for (const auto& e : yaml->entries()) {
    EXPECT_EQ(describe(*snap->find(e->id)), describe(*e));
    for (const MatchExample& ex : e->match_examples) {
      const MatchResult a = yaml->match(ex.text, ex.context), b = snap->match(ex.text, ex.context);
      ASSERT_EQ(a.diagnosis.has_value(), b.diagnosis.has_value()) << ex.text;
      if (!a.diagnosis) continue;
      EXPECT_EQ(a.diagnosis->id(), b.diagnosis->id()) << ex.text;
      EXPECT_EQ(a.diagnosis->captures, b.diagnosis->captures) << ex.text;
      ++checked;
    }
  }
  EXPECT_GT(checked, 500u);
  EXPECT_TRUE(snap->compile_all().empty());
}

TEST(Snapshot, TheEmbeddedCatalogIsTheOneInPatterns) {
  // The library embeds a snapshot written at build time: it must hold what
  // patterns/ holds now, entry for entry (a stale one would answer from an
  // old catalog). File names differ only in their directories.
  auto relative = [](Entry e) {
    auto strip = [](Location& l) { l.file = std::filesystem::path(l.file).filename().string(); };
    strip(e.where);
    for (MatchExample& m : e.match_examples) strip(m.where);
    for (NoMatchExample& m : e.no_match_examples) strip(m.where);
    return describe(e);
  };
  const CatalogPtr embedded = Catalog::embedded();
  const CatalogPtr yaml = CatalogBuilder().add_path(ERRSHIM_SOURCE_DIR "/patterns").build();
  ASSERT_EQ(embedded->size(), yaml->size());
  for (std::size_t i = 0; i < yaml->size(); ++i)
    EXPECT_EQ(relative(*embedded->entries()[i]), relative(*yaml->entries()[i]));
  EXPECT_EQ(embedded->entries().front()->where.file.rfind("patterns/", 0), 0u)
      << embedded->entries().front()->where.file;
}

TEST(Snapshot, IsALayerLikeAnyOther) {
  const std::string bytes =
      catalog_from(file_yaml(entry_yaml("t.one", "first message") + entry_yaml("t.two", "second message")))->snapshot();
  const CatalogPtr cat = CatalogBuilder()
                             .add_snapshot(bytes)
                             .add_yaml(file_yaml(entry_yaml("t.two", "second message, overridden")), "user.yaml")
                             .build();
  ASSERT_EQ(cat->size(), 2u);
  EXPECT_EQ(cat->entries()[1]->template_text, "second message, overridden");
  EXPECT_EQ(cat->diagnose("first message")->id(), "t.one");
}

TEST(Snapshot, ADamagedSnapshotIsRefusedWithOneProblem) {
  const std::string bytes = catalog_from(rich_yaml())->snapshot();
  auto refused = [](const std::string& b, const std::string& fragment) -> ::testing::AssertionResult {
    const std::vector<Problem> ps = problems_of(CatalogBuilder().add_snapshot(b, "cat.snapshot"));
    if (ps.size() != 1) return ::testing::AssertionFailure() << ps.size() << " problems";
    if (ps[0].where.file != "cat.snapshot" || ps[0].message.find(fragment) == std::string::npos)
      return ::testing::AssertionFailure() << ps[0].to_string();
    return ::testing::AssertionSuccess();
  };
  // Cut short anywhere: refused, never misread.
  for (std::size_t n = 0; n < bytes.size(); ++n) ASSERT_TRUE(refused(bytes.substr(0, n), "snapshot")) << "cut at " << n;
  EXPECT_TRUE(refused(bytes + "x", "checksum does not match"));
  EXPECT_TRUE(refused("schema: 1\nentries: []\n", "not a catalog snapshot"));
  std::string other_version = bytes;
  const std::size_t at = other_version.find(version());
  ASSERT_NE(at, std::string::npos);
  other_version[at] = '9';
  EXPECT_TRUE(refused(other_version, "rebuild the snapshot"));
  // Any damaged byte is refused (the checksum), never read as a catalog
  // that differs from the one written: a changed key in the match plan
  // would silently miss matches.
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x5a);
    ASSERT_TRUE(refused(b, "snapshot")) << "byte " << i;
  }
}

TEST(Snapshot, StoresTheMatchPlanTheCatalogWouldWorkOut) {
  // What a loaded snapshot uses instead of analysing every regex again must
  // be what that analysis gives, field for field.
  const CatalogPtr cat = Catalog::embedded();
  std::vector<Problem> problems;
  const detail::Snapshot snap = detail::read_snapshot(cat->snapshot(), "embedded.snapshot", problems);
  ASSERT_TRUE(problems.empty()) << problems.front().to_string();
  const detail::MatchPlan fresh = detail::plan_matching(cat->entries());
  ASSERT_EQ(snap.plan.items.size(), cat->size());
  ASSERT_EQ(fresh.items.size(), cat->size());
  std::size_t keyed = 0, bounded = 0, anchored = 0;
  for (std::size_t i = 0; i < cat->size(); ++i) {
    const detail::MatchPlan::Item& a = snap.plan.items[i];
    const detail::MatchPlan::Item& b = fresh.items[i];
    const std::string& id = cat->entries()[i]->id;
    EXPECT_EQ(a.key.text, b.key.text) << id;
    EXPECT_EQ(a.key.max_offset, b.key.max_offset) << id;
    EXPECT_EQ(a.key.single_line_prefix, b.key.single_line_prefix) << id;
    EXPECT_EQ(a.key.line_local, b.key.line_local) << id;
    EXPECT_EQ(a.key.also, b.key.also) << id;
    EXPECT_EQ(a.anchor, b.anchor) << id;
    EXPECT_EQ(a.also_anchor, b.also_anchor) << id;
    EXPECT_EQ(a.specificity, b.specificity) << id;
    keyed += !a.key.text.empty();
    bounded += a.key.max_offset != detail::kUnbounded;
    anchored += a.anchor != 0;
  }
  // The fields compared are really set (a plan of empty items compares equal too).
  EXPECT_GT(keyed, cat->size() * 9 / 10);
  EXPECT_GT(bounded, 0u);
  EXPECT_GT(anchored, 0u);
}

TEST(Snapshot, ASpecificityLongerThanItsPatternIsRefused) {
  // Checksum-valid, so only a range check stops it: the winner rule negates
  // a specificity as a signed number (2^63 overflows).
  const CatalogPtr cat = catalog_from(file_yaml(entry_yaml("t.one", "first message") + entry_yaml("t.two", "second")));
  for (const std::size_t bad : {std::size_t{1} << 63, std::numeric_limits<std::size_t>::max(), std::size_t{14}}) {
    detail::MatchPlan plan = detail::plan_matching(cat->entries());
    plan.items[1].specificity = bad;  // "second" is 6 characters
    const std::vector<Problem> ps =
        problems_of(CatalogBuilder().add_snapshot(detail::write_snapshot(cat->entries(), plan), "cat.snapshot"));
    ASSERT_EQ(ps.size(), 1u) << bad;
    EXPECT_EQ(ps[0].where.file, "cat.snapshot");
    EXPECT_NE(ps[0].message.find("gives entry 't.two' a specificity of " + std::to_string(bad)), std::string::npos)
        << ps[0].message;
  }
  // Its own length is fine.
  detail::MatchPlan plan = detail::plan_matching(cat->entries());
  plan.items[1].specificity = cat->entries()[1]->pattern.size();
  EXPECT_TRUE(problems_of(CatalogBuilder().add_snapshot(detail::write_snapshot(cat->entries(), plan))).empty());
}

// Catalog::content_hash names a catalog's version (CLI, JSON): the same
// entries give the same hash however they were read, a lazily read one
// without decoding its entries; any change to an entry changes it.
TEST(Snapshot, TheContentHashIsTheSameHoweverTheCatalogIsRead) {
  const CatalogPtr lazy = Catalog::embedded();  // its snapshot, read lazily
  const CatalogPtr yaml = CatalogBuilder().add_path(ERRSHIM_SOURCE_DIR "/patterns").build();
  const CatalogPtr whole = CatalogBuilder().add_snapshot(lazy->snapshot(), "embedded.snapshot").build();
  EXPECT_EQ(lazy->content_hash(), whole->content_hash());
  // The YAML's entries name their files by another path; otherwise equal.
  const CatalogPtr a = catalog_from(rich_yaml(), "rich.yaml");
  const CatalogPtr b = CatalogBuilder().add_snapshot(a->snapshot(), "rich.snapshot").build();
  EXPECT_EQ(a->content_hash(), b->content_hash());
  std::string changed = rich_yaml();
  changed.replace(changed.find("set it"), 6, "set It");
  EXPECT_NE(catalog_from(changed, "rich.yaml")->content_hash(), a->content_hash());
  EXPECT_NE(yaml->content_hash(), 0u);
}

TEST(Snapshot, RecordsTheHashOfItsSource) {
  const CatalogPtr cat = catalog_from(file_yaml(entry_yaml("t.one", "first message")));
  std::vector<Problem> problems;
  const auto plan = detail::plan_matching(cat->entries());
  EXPECT_EQ(
      detail::read_snapshot(detail::write_snapshot(cat->entries(), plan, 0x0123456789abcdefull), "s", problems).source,
      0x0123456789abcdefull);
  EXPECT_EQ(detail::read_snapshot(cat->snapshot(), "s", problems).source, 0u);  // none given
  EXPECT_TRUE(problems.empty());
}

// `errshim snapshot OUT` writes a fresh temporary file beside OUT (never
// one a name already points to) and renames it: run as root, a link planted
// at the temporary name the tool used to write made it overwrite any file.
TEST(Snapshot, TheCliWritesNoFileAPlantedLinkPointsTo) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "errshim_snapshot_cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path victim = dir / "shadow", out = dir / "out.snapshot";
  std::ofstream(victim) << "root:secret\n";
  ASSERT_EQ(::chmod(victim.c_str(), 0600), 0);
  fs::create_symlink(victim, dir / "out.snapshot.tmp");
  const std::string cmd = std::string(ERRSHIM_CLI) + " snapshot " + out.string() + " 2>/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(victim);
  EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(in), {}) == "root:secret\n");  // not the snapshot
  EXPECT_FALSE(fs::is_symlink(out));
  const CatalogPtr loaded = CatalogBuilder().add_path(out).build();
  EXPECT_EQ(loaded->size(), Catalog::embedded()->size());
  // No temporary file is left; the planted link is left alone.
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += (void(e), 1);
  EXPECT_EQ(files, 3u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace errshim
