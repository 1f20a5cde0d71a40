// errshim::fingerprint: the same unknown error from several workers, at
// several times, is one fingerprint; different errors are not. And scan's
// grouping of unrecognised blocks by it (tests/data/scan/workers.log).

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <errshim/catalog.hpp>
#include <errshim/fingerprint.hpp>
#include <errshim/scan.hpp>

#include "utf8.hpp"

namespace {

using errshim::fingerprint;
using errshim::mask_variables;

struct Masked {
  const char* name;
  const char* message;
  const char* masked;
};
void PrintTo(const Masked& m, std::ostream* os) { *os << m.name; }

class MaskVariables : public ::testing::TestWithParam<Masked> {};

TEST_P(MaskVariables, ReplacesTheValueByItsKind) { EXPECT_EQ(mask_variables(GetParam().message), GetParam().masked); }

INSTANTIATE_TEST_SUITE_P(
    Kinds, MaskVariables,
    ::testing::Values(
        Masked{"timestamps", "at 2026-11-30T10:01:42.123456Z and 10:01:42,5 or 2026/11/30", "at <ts> and <ts> or <ts>"},
        Masked{"timestamp_with_offset", "since 2026-11-30 10:01:42+01:00 ok", "since <ts> ok"},
        Masked{"uuid", "job 3f1c2a9e-0b7d-4c1e-9a2b-5d6e7f809a1b failed", "job <uuid> failed"},
        Masked{"hex_address_and_hash", "block 0x7f3a0010 of 9d00b7a1c4f2 freed", "block <hex> of <hex> freed"},
        Masked{"ip_and_port", "connect to 10.0.0.3:29500 refused", "connect to <ip> refused"},
        Masked{"paths", "cannot open '/models/llama/config.json' nor ./out/x.bin nor C:\\models\\x",
               "cannot open '<path>' nor <path> nor <path>"},
        Masked{"url", "GET https://huggingface.co/api/models/x?rev=2 failed", "GET <url> failed"},
        Masked{"shapes", "q dims [1, 32, 7, 48], k (4096,) and 1x32x7", "q dims <shape>, k <shape> and <shape>"},
        Masked{"ids", "request req-8f3a9c1e2b and chatcmpl-9xY2z7Q1", "request <id> and <id>"},
        Masked{"worker_rank_device_tags", "worker-12 [rank3] cuda:1 pid=4121",
               "worker-<num> [rank<num>] cuda:<num> pid=<num>"},
        Masked{"numbers", "after 600000 ms, lr 3.5e-4, version 4.57.1", "after <num> ms, lr <num>, version <num>"},
        Masked{"names_with_numbers_keep_their_words", "llama3-8b in fp16 not bf16",
               "llama<num>-<num>b in fp<num> not bf<num>"},
        Masked{"blanks_and_lines_made_one_space", "a  b\n\tc  ", "a b c"},
        Masked{"a_ratio_is_not_a_path_nor_a_time", "3/4 done at 3:45", "<num>/<num> done at <num>:<num>"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Fingerprint, TheSameErrorFromTwoWorkersIsOneFingerprint) {
  const auto a = fingerprint(
      "[rank0]: Traceback (most recent call last):\n"
      "[rank0]:   File \"/srv/app/dist.py\", line 41, in all_gather\n"
      "[rank0]: RuntimeError: NCCL communicator for rank 0 timed out after 600000 ms on 10.0.0.1:29500");
  const auto b = fingerprint(
      "worker-3   | 2026-11-30 10:00:02 ERROR dist - RuntimeError: NCCL communicator for rank 3 timed out after "
      "600001 ms on 10.0.0.4:29501");
  EXPECT_EQ(a.id, b.id) << a.text << "\n" << b.text;
  EXPECT_EQ(a.text, "RuntimeError: NCCL communicator for rank <num> timed out after <num> ms on <ip>");
  EXPECT_EQ(a.id.size(), 16u);
}

TEST(Fingerprint, DifferentErrorsStayApart) {
  const std::vector<std::string> messages = {
      "ValueError: unsupported sampler 'beam'",
      "ValueError: unsupported sampler 'greedy'",  // a quoted name is kept
      "KeyError: unsupported sampler 'beam'",  // another class
      "ValueError: unsupported scheduler 'beam'",  // another word
  };
  std::set<std::string> ids;
  for (const auto& m : messages) ids.insert(fingerprint(m).id);
  EXPECT_EQ(ids.size(), messages.size());
}

TEST(Fingerprint, AChainIsFingerprintedByItsRootCause) {
  const auto chained = fingerprint(
      "Traceback (most recent call last):\n"
      "  File \"/app/x.py\", line 3, in <module>\n"
      "OSError: disk 7 is full\n"
      "\n"
      "The above exception was the direct cause of the following exception:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/x.py\", line 5, in <module>\n"
      "RuntimeError: request 12 failed\n");
  EXPECT_EQ(chained.id, fingerprint("OSError: disk 3 is full").id) << chained.text;
}

TEST(Fingerprint, TextIsBoundedAndValidUtf8) {
  std::string big = "RuntimeError: ";
  for (int i = 0; i < 5000; ++i) big += "é";
  const auto f = fingerprint(big);
  EXPECT_LE(f.text.size(), 512u);
  EXPECT_TRUE(errshim::detail::valid_utf8(f.text)) << "not cut inside a character";
  EXPECT_EQ(mask_variables(std::string(100000, '1')), "<num>");
}

// ------------------------------------------------------------ scan's grouping

std::vector<errshim::ScanBlock> workers_log() {
  const std::string path = std::string(ERRSHIM_SOURCE_DIR) + "/tests/data/scan/workers.log";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::vector<errshim::ScanBlock> blocks;
  errshim::scan(in, "workers.log", *errshim::Catalog::embedded(),
                [&](const errshim::ScanBlock& b) { blocks.push_back(b); });
  return blocks;
}

TEST(ScanFingerprint, UnrecognisedBlocksAreGroupedByFingerprintWithCounts) {
  errshim::ScanSummary summary;
  for (const auto& b : workers_log()) summary.add(b);
  EXPECT_EQ(summary.matched(), 1u);
  const auto& groups = summary.unrecognised();
  ASSERT_EQ(groups.size(), 5u);
  std::map<std::uint64_t, std::uint64_t> first_line_to_count;
  for (const auto& g : groups) first_line_to_count[g.first.line] = g.count;
  // The four ranks' NCCL timeouts, three workers' full disks, two workers'
  // double frees, the 'beam' sampler twice and the 'greedy' one once.
  EXPECT_EQ(first_line_to_count, (std::map<std::uint64_t, std::uint64_t>{{3, 4}, {21, 3}, {25, 2}, {27, 2}, {28, 1}}));
  EXPECT_NE(summary.to_text().find("      4x  workers.log:3 (python-traceback)"), std::string::npos)
      << summary.to_text();
}

TEST(ScanFingerprint, JsonOfAnUnrecognisedBlockGivesItsFingerprint) {
  std::map<std::string, int> by_fingerprint;
  for (const auto& b : workers_log()) {
    const std::string json = errshim::to_json(b);
    const auto at = json.find("\"fingerprint\": \"");
    if (b.diagnosis) {
      EXPECT_EQ(at, std::string::npos) << "a recognised block is grouped by its id";
      continue;
    }
    ASSERT_NE(at, std::string::npos) << json;
    const std::string id = json.substr(at + 16, 16);
    EXPECT_EQ(id, fingerprint(b.text).id);
    EXPECT_NE(json.find("\"template\": \"" + fingerprint(b.text).text), std::string::npos) << json;
    ++by_fingerprint[id];
  }
  std::multiset<int> counts;
  for (const auto& [id, n] : by_fingerprint) counts.insert(n);
  EXPECT_EQ(counts, (std::multiset<int>{1, 2, 2, 3, 4}));
}

}  // namespace
