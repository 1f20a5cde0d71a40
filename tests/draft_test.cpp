// errshim::draft_entry and draft_entries: skeleton entries for unknown errors.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "errshim/draft.hpp"
#include "errshim/errshim.hpp"
#include "errshim/lint.hpp"

namespace {

using errshim::CatalogBuilder;

// The first line of `yaml` that starts (after blanks) with `key`, without the key.
std::string value_of(const std::string& yaml, const std::string& key, std::size_t from = 0) {
  for (std::size_t at = yaml.find(key, from); at != std::string::npos; at = yaml.find(key, at + 1)) {
    const std::size_t bol = yaml.rfind('\n', at) + 1;
    if (yaml.find_first_not_of(" -", bol) != at) continue;
    const std::size_t eol = yaml.find('\n', at);
    return yaml.substr(at + key.size(), eol - at - key.size());
  }
  return "";
}

std::vector<std::string> problems_of(const std::string& yaml) {
  std::vector<std::string> out;
  for (const errshim::Problem& p : errshim::lint(*CatalogBuilder().add_embedded().add_yaml(yaml, "draft.yaml").build()))
    out.push_back(p.to_string());
  return out;
}

struct MaskCase {
  const char* name;
  const char* message;
  const char* tmpl;  // the template, as written in the YAML
  const char* other;  // the same error with other values
};

class DraftTemplate : public testing::TestWithParam<MaskCase> {};

TEST_P(DraftTemplate, PutsPlaceholdersWhereValuesWereAndMatchesOtherValues) {
  const MaskCase& c = GetParam();
  const std::string yaml = errshim::draft_entry(c.message);
  EXPECT_EQ(value_of(yaml, "template: "), c.tmpl) << yaml;
  const auto catalog = CatalogBuilder().add_yaml(yaml, "draft.yaml").build();
  ASSERT_EQ(catalog->entries().size(), 1u);
  const auto own = catalog->diagnose(c.message);
  ASSERT_TRUE(own) << yaml;
  EXPECT_EQ(own->entry->id, catalog->entries()[0]->id);
  EXPECT_TRUE(catalog->diagnose(c.other)) << c.other << "\n" << yaml;
}

INSTANTIATE_TEST_SUITE_P(
    Messages, DraftTemplate,
    testing::Values(MaskCase{"numbers_and_hex", "RuntimeError: shard 3 lost its KV block at 0x7f3a0010 after 12.5 s",
                             "\"shard {num1} lost its KV block at {hex1} after {num2} s\"",
                             "RuntimeError: shard 17 lost its KV block at 0xdeadbeef after 0.25 s"},
                    MaskCase{"shape", "ValueError: expected input of shape [2, 8, 64] for the rotary cache",
                             "\"expected input of shape {shape1} for the rotary cache\"",
                             "ValueError: expected input of shape [1, 32, 128] for the rotary cache"},
                    MaskCase{"braces_and_percent", "ValueError: bad config {quant: 4} at 95% of memory",
                             "\"bad config {{quant: {num1}}} at {num2}%% of memory\"",
                             "ValueError: bad config {quant: 8} at 50% of memory"}),
    [](const testing::TestParamInfo<MaskCase>& i) { return std::string(i.param.name); });

TEST(Draft, NamesTheClassIdAndExampleFromTheMessage) {
  const std::string message = "ValueError: unsupported sampler 'beam' for 4 beams";
  const std::string yaml = errshim::draft_entry(message);
  EXPECT_EQ(value_of(yaml, "id: "), "draft.unknown.unsupported_sampler_beam_for_beams") << yaml;
  EXPECT_EQ(value_of(yaml, "error_class: "), "\"ValueError\"");
  EXPECT_EQ(value_of(yaml, "path: "), "\"TODO\"");
  const auto catalog = CatalogBuilder().add_yaml(yaml).build();
  ASSERT_EQ(catalog->entries()[0]->match_examples.size(), 1u);
  EXPECT_EQ(catalog->entries()[0]->match_examples[0].text, message);
}

TEST(Draft, KeepsAMessageOfValuesAloneLiteral) {
  // Placeholders alone would match any line: the catalog refuses such a template.
  const std::string yaml = errshim::draft_entry("42");
  EXPECT_EQ(value_of(yaml, "template: "), "\"42\"") << yaml;
  EXPECT_TRUE(CatalogBuilder().add_yaml(yaml).build()->diagnose("42"));
  EXPECT_THROW(errshim::draft_entry(" \n"), std::invalid_argument);
}

TEST(Draft, LintReportsOnlyTheTodoMarkers) {
  const std::string yaml = errshim::draft_entry("RuntimeError: shard 3 lost its KV block at 0x7f3a0010");
  const std::vector<std::string> problems = problems_of(yaml);
  ASSERT_EQ(problems.size(), 3u) << testing::PrintToString(problems);
  for (const std::string& p : problems) EXPECT_NE(p.find("authoring note ('TODO')"), std::string::npos) << p;
  // Written, the entry is clean: nothing else was left for the author.
  std::string done = yaml;
  for (std::size_t at; (at = done.find("TODO: ")) != std::string::npos;) done.replace(at, 6, "Written: ");
  EXPECT_TRUE(problems_of(done).empty()) << testing::PrintToString(problems_of(done));
}

TEST(Draft, TakesTheSourceFromAStatedC10Site) {
  const std::string message =
      "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the "
      "list.\nException raised from check_cat_shape_except_dim at ../aten/src/ATen/native/TensorShape.cpp:89 (most "
      "recent call first):\nframe #0: c10::Error::Error";
  const std::string yaml = errshim::draft_entry(message);
  EXPECT_EQ(value_of(yaml, "library: "), "libtorch") << yaml;
  EXPECT_EQ(value_of(yaml, "path: "), "\"../aten/src/ATen/native/TensorShape.cpp\"");
  EXPECT_EQ(value_of(yaml, "line: "), "89");
  EXPECT_EQ(value_of(yaml, "symbol: "), "\"check_cat_shape_except_dim\"");
  EXPECT_EQ(value_of(yaml, "id: ").rfind("draft.libtorch.sizes_of_tensors_must_match", 0), 0u) << yaml;
}

TEST(Draft, FromScanDraftsOnePerFingerprintWithCounts) {
  const std::string log = std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/scan/workers.log";
  const auto embedded = errshim::Catalog::embedded();
  const std::vector<errshim::DraftGroup> groups = errshim::unrecognised_groups(log, *embedded, 10);
  std::vector<std::uint64_t> counts;
  for (const auto& g : groups) counts.push_back(g.count);
  // Four ranks' NCCL timeouts, three workers' full disks, two double frees,
  // then 'beam' twice and 'greedy' once (quoted names stay apart).
  EXPECT_EQ(counts, (std::vector<std::uint64_t>{4, 3, 2, 2, 1})) << testing::PrintToString(counts);
  const std::string yaml = errshim::draft_entries(groups);
  const auto catalog = CatalogBuilder().add_yaml(yaml, "drafts.yaml").build();
  ASSERT_EQ(catalog->entries().size(), groups.size()) << yaml;
  // Each count is a comment line of its own, above its entry.
  EXPECT_NE(
      yaml.find("\n  # seen 4 times, fingerprint " + groups[0].fingerprint + ", first at " + log + ":3\n  - id: "),
      std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("\n  # seen 1 time, fingerprint " + groups[4].fingerprint), std::string::npos) << yaml;
  // A log prefix before the class ("cache - OSError: ") is not in the template.
  EXPECT_EQ(catalog->entries()[1]->error_class, "OSError");
  EXPECT_NE(yaml.find("template: \"[Errno {num1}] No space left on device: '{path1}'\""), std::string::npos) << yaml;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto d = catalog->diagnose(groups[i].message);
    ASSERT_TRUE(d) << groups[i].message << "\n" << yaml;
    EXPECT_EQ(d->entry->id, catalog->entries()[i]->id) << groups[i].message;
  }
  EXPECT_EQ(errshim::unrecognised_groups(log, *embedded, 2).size(), 2u);
}

}  // namespace
