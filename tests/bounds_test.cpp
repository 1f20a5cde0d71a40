// Bounded work on hostile input: huge, binary, badly encoded and deeply
// nested messages are diagnosed or declined quickly, in bounded memory,
// without an exception reaching the host; a catastrophic user pattern costs
// "no match" and a report; YAML bombs, deep and huge catalog files are
// refused with a clear message.
//
// No time is asserted here: a hang fails the test by ctest's timeout
// (tests/CMakeLists.txt), and what these inputs cost is measured in bench/
// (errshim_bench's bounds/ rows, as ratios to a short message).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

#include <errshim/errshim.hpp>
#include <errshim/lint.hpp>
#include <errshim/normalize.hpp>
#include <errshim/render.hpp>

#include "test_catalogs.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ERRSHIM_BOUNDS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ERRSHIM_BOUNDS_SANITIZED 1
#endif
#endif

namespace errshim {
namespace {

// Not measured under ASan/TSan, whose shadow memory makes RSS growth meaningless.
constexpr long kMemoryBoundKiB = 64 * 1024;  // growth of peak RSS while one message is handled

long status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

// Peak-RSS growth while `f` runs: the kernel's high-water mark is reset to the
// current RSS first (clear_refs 5). -1 when that is not possible here.
template <class F>
long peak_growth_kib(F&& f) {
  bool reset = false;
  {
    std::ofstream clear("/proc/self/clear_refs");
    reset = static_cast<bool>(clear << "5" << std::flush);
  }
  const long rss = status_kib("VmRSS");
  f();
  const long hwm = status_kib("VmHWM");
  return reset && rss >= 0 && hwm >= 0 ? hwm - rss : -1;
}

// Matches `message` on `catalog`: within the memory bound, and the same
// answer from diagnose(). Returns the result.
MatchResult bounded_match(const std::string& message, const Catalog& catalog = *Catalog::embedded()) {
  MatchResult r;
  const long growth = peak_growth_kib([&] { r = catalog.match(message); });
#if !defined(ERRSHIM_BOUNDS_SANITIZED)
  if (growth >= 0) {
    EXPECT_LT(growth, kMemoryBoundKiB) << message.size() << "-byte message";
  }
#endif
  (void)growth;
  const auto again = catalog.diagnose(message);
  EXPECT_EQ(again.has_value(), r.diagnosis.has_value());
  if (again && r.diagnosis) {
    EXPECT_EQ(again->id(), r.diagnosis->id());
  }
  return r;
}

bool mentions(const std::vector<std::string>& problems, const std::string& fragment) {
  for (const std::string& p : problems)
    if (p.find(fragment) != std::string::npos) return true;
  return false;
}

bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

const char* const kMimi = "only kv-repeat = 1 is supported";
const char* const kSdpa =
    "Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], k dims [1, 8, 7, 48], v dims [1, 8, 7, 48].";
const char* const kQuant =
    "ValueError: This model does not support the quantized cache. If you want your model to support quantized "
    "cache, please open an issue and tag @zucchini-nlp.";

std::string id_of(const std::string& message) {
  const auto d = Catalog::embedded()->diagnose(message);
  return d ? d->id() : "";
}

// ------------------------------------------------------------ messages

TEST(Bounds, AFiftyMegabyteMessageIsCutToItsHeadAndTailAndStillDiagnosed) {
  // A known message followed by a 50 MB dump (a tensor printed into the error).
  std::string dump = std::string("Error: ") + kSdpa + "\nq = tensor([";
  dump.reserve((50u << 20) + 64);
  while (dump.size() < (50u << 20)) dump += "0.1234, -5.6789, ";
  dump += "])\n";
  MatchResult r = bounded_match(dump);
  ASSERT_TRUE(r.diagnosis);
  EXPECT_EQ(r.diagnosis->id(), id_of(kSdpa));
  EXPECT_LE(r.diagnosis->raw.size(), kMaxInputBytes);
  EXPECT_TRUE(mentions(r.problems, "cut to its first and last")) << ::testing::PrintToString(r.problems);

  // A 50 MB traceback: the final exception is in the kept tail.
  std::string tb = "Traceback (most recent call last):\n";
  tb.reserve((50u << 20) + 256);
  for (int i = 0; tb.size() < (50u << 20); ++i)
    tb += "  File \"/srv/app/layers.py\", line " + std::to_string(i) + ", in forward\n    return self.block(x)\n";
  tb += std::string(kQuant) + "\n";
  r = bounded_match(tb);
  ASSERT_TRUE(r.diagnosis);
  EXPECT_EQ(r.diagnosis->id(), id_of(kQuant));
}

TEST(Bounds, AFiftyMegabyteLogIsHandledWithinTheBounds) {
  // A plain log is one message to the normaliser, of which the first 16 KiB
  // are matched: an error on its last line is declined (docs/bad-input.md).
  std::string log;
  log.reserve((50u << 20) + 128);
  for (int i = 0; log.size() < (50u << 20); ++i)
    log += "2024-05-01 12:00:00 INFO [worker-1] step " + std::to_string(i) + " ok\n";
  log += std::string("2024-05-01 12:00:01 ERROR [worker-1] ") + kMimi + "\n";
  (void)bounded_match(log);
}

TEST(Bounds, AFiftyMegabyteSingleLineIsDeclined) {
  const MatchResult r = bounded_match(std::string(50u << 20, 'a'));
  EXPECT_FALSE(r.diagnosis);
}

TEST(Bounds, BinaryBytesAreDeclinedOrDiagnosedWithoutThrowing) {
  std::mt19937 random(20240501);
  std::string bytes(8u << 20, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xFF);
  EXPECT_FALSE(bounded_match(bytes).diagnosis);

  std::string every_byte;
  for (int round = 0; round < 64; ++round)
    for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  (void)bounded_match(every_byte);
  // A known message inside binary noise, NULs included, is still found.
  const MatchResult r = bounded_match(every_byte + "\n" + kMimi + "\n" + every_byte);
  ASSERT_TRUE(r.diagnosis);
  EXPECT_EQ(r.diagnosis->id(), id_of(kMimi));
}

TEST(Bounds, InvalidUtf8AroundAKnownMessageIsDiagnosedAndRendersAsValidJson) {
  const std::string message = std::string("\xff\xfe\xc3\x28 Error: ") + kSdpa + " \xe2\x82\n\xed\xa0\x80 \xf8\x88\x80";
  const MatchResult r = bounded_match(message);
  ASSERT_TRUE(r.diagnosis);
  EXPECT_EQ(r.diagnosis->id(), id_of(kSdpa));
  EXPECT_EQ(*r.diagnosis->capture("q_head"), "48");
  const std::string json = to_json(*r.diagnosis);
  EXPECT_TRUE(valid_utf8(json)) << "bytes that are not UTF-8 must be replaced in JSON";
  (void)to_text(*r.diagnosis);

  std::string broken;
  for (int i = 0; i < 200000; ++i) broken += "\xe2\x82\xc3";  // truncated sequences, nothing else
  EXPECT_FALSE(bounded_match(broken).diagnosis);
}

TEST(Bounds, APythonTracebackOfAHundredThousandFramesIsDiagnosed) {
  std::string tb = "Traceback (most recent call last):\n";
  for (int i = 0; i < 100000; ++i)
    tb += "  File \"/srv/app/layers.py\", line " + std::to_string(i + 1) + ", in forward\n    return self.block(x)\n";
  tb += std::string(kQuant) + "\n";
  const MatchResult r = bounded_match(tb);
  ASSERT_TRUE(r.diagnosis);
  EXPECT_EQ(r.diagnosis->id(), id_of(kQuant));
  EXPECT_EQ(r.diagnosis->exception_class, "ValueError");
}

TEST(Bounds, ARustBacktraceAndALibtorchFrameListOfAHundredThousandFramesAreDiagnosed) {
  std::string rust = std::string("Error: ") + kMimi + "\n\nStack backtrace:\n";
  for (int i = 0; i < 100000; ++i)
    rust += "  " + std::to_string(i) +
            ": candle_core::tensor::Tensor::forward\n             at ./src/tensor.rs:" + std::to_string(i) + ":5\n";
  EXPECT_EQ(bounded_match(rust).diagnosis.value_or(Diagnosis{}).id(), id_of(kMimi));

  std::string torch = std::string("c10::Error: ") + kMimi + "\nException raised from forward at model.cpp:1:\n";
  for (int i = 0; i < 100000; ++i)
    torch += "frame #" + std::to_string(i) + ": at::native::forward(at::Tensor const&) + 0x" + std::to_string(i) +
             " (0x7f00 in libtorch_cpu.so)\n";
  (void)bounded_match(torch);  // diagnosed or declined: bounded either way
}

TEST(Bounds, AHundredThousandLinkCausedByChainIsBounded) {
  std::string chain = "Error: outermost\n\nCaused by:\n";
  for (int i = 0; i < 100000; ++i) chain += "    " + std::to_string(i) + ": layer " + std::to_string(i) + " failed\n";
  chain += std::string("    100000: ") + kMimi + "\n";
  (void)bounded_match(chain);
  EXPECT_LE(normalize(chain).segments.size(), kMaxSegments);
}

TEST(Bounds, AnExceptionNestedAThousandDeepReachesTheHostUnchangedOrTranslated) {
  auto nest = [](auto& self, int depth) -> void {
    if (depth == 0) throw std::runtime_error(kMimi);
    try {
      self(self, depth - 1);
    } catch (...) {
      std::throw_with_nested(std::runtime_error("layer " + std::to_string(depth)));
    }
  };
  try {
    guard([&] { nest(nest, 1000); });
    FAIL() << "nothing thrown";
  } catch (const translated_error& e) {
    ADD_FAILURE() << "translated although the known message is 1000 levels down: " << e.id();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "layer 1000");  // the host's exception, unchanged
  }
}

TEST(Bounds, BinaryExceptionTextIsRethrownUnchanged) {
  const std::string binary("\xff\x01 kv\x80\0tail", 11);
  try {
    guard([&] { throw std::out_of_range(binary); });
  } catch (const translated_error& e) {
    ADD_FAILURE() << "translated: " << e.id();
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "\xff\x01 kv\x80");
  }
}

// ------------------------------------------------- catastrophic patterns

const std::string kSlowEntry =
    "  - id: user.slow\n"
    "    pattern: 'slow: (\\w+\\s?)+$'\n"
    "    source: {path: src/slow.rs, line: 1}\n"
    "    error_class: E\n"
    "    kind: validation\n"
    "    cause: c\n"
    "    trigger: t\n"
    "    remediation: [{text: r}]\n"
    "    examples: {match: ['slow: a b c']}\n";

CatalogPtr with_slow_entry() {
  static const CatalogPtr c =
      CatalogBuilder().add_embedded().add_yaml(testing::file_yaml(kSlowEntry), "user.yaml").build();
  return c;
}

TEST(Bounds, LintFlagsAUserPatternThatBacktracksCatastrophically) {
  const CatalogPtr catalog = testing::catalog_from(testing::file_yaml(kSlowEntry));
  bool flagged = false;
  for (const Problem& p : lint(*catalog))
    flagged =
        flagged || (p.entry_id == "user.slow" && p.message.rfind("pattern may backtrack catastrophically:", 0) == 0);
  EXPECT_TRUE(flagged);
}

TEST(Bounds, ACatastrophicPatternIsNoMatchPlusAReportAndTheHostKeepsWorking) {
  const CatalogPtr catalog = with_slow_entry();
  const std::string trap = "slow: " + std::string(40, 'a') + "!";
  const MatchResult r = bounded_match(trap, *catalog);
  EXPECT_FALSE(r.diagnosis);
  EXPECT_TRUE(mentions(r.problems, "'user.slow'")) << ::testing::PrintToString(r.problems);

  // The same catalog goes on answering, the trap included next to a known error.
  EXPECT_EQ(bounded_match(kMimi, *catalog).diagnosis.value_or(Diagnosis{}).id(), id_of(kMimi));
  const MatchResult both = bounded_match(trap + "\n" + kSdpa, *catalog);
  ASSERT_TRUE(both.diagnosis);
  EXPECT_EQ(both.diagnosis->id(), id_of(kSdpa));
  EXPECT_TRUE(bounded_match("slow: a b c", *catalog).diagnosis);  // a benign text still matches

  // Through guard(): the host's exception passes through unchanged.
  try {
    guard([&] { throw std::invalid_argument(trap); }, *catalog);
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(e.what(), trap);
  }
}

// ------------------------------------------------------------ YAML

std::vector<Problem> problems_of(const std::string& yaml) {
  std::vector<Problem> out;
  try {
    testing::catalog_from(yaml, "bomb.yaml");
  } catch (const catalog_error& e) {
    out = e.problems();
  }
  return out;
}

TEST(BoundsYaml, ABillionLaughsCatalogIsRefusedAtItsFirstAlias) {
  std::string yaml = "schema: 1\nlol0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    yaml += "lol" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) yaml += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
    yaml += "]\n";
  }
  yaml += "entries: [*a9]\n";
  const auto ps = problems_of(yaml);
  ASSERT_EQ(ps.size(), 1u) << ps.front().to_string();
  EXPECT_EQ(ps[0].to_string(),
            "bomb.yaml:3:12: aliases are not allowed in catalog files (write the value out in full)");
}

TEST(BoundsYaml, AMergeKeyIsAnAliasToo) {
  const auto ps = problems_of(testing::file_yaml("  - &base {id: a.b}\n  - {<<: *base, id: a.c}\n"));
  ASSERT_FALSE(ps.empty());
  EXPECT_EQ(ps[0].message, "aliases are not allowed in catalog files (write the value out in full)");
  EXPECT_EQ(ps[0].where.line, 6);
}

TEST(BoundsYaml, AnAnchorWithoutAliasesIsHarmlessAndLoads) {
  const CatalogPtr c = testing::catalog_from(
      testing::file_yaml(testing::entry_yaml("t.anchored", "anchored message", "    tags: &t [a, b]\n")));
  EXPECT_EQ(c->size(), 1u);
}

TEST(BoundsYaml, NestingDeeperThanTheLimitIsRefusedWhereItStarts) {
  const auto flow = problems_of("schema: 1\nentries: " + std::string(100000, '[') + std::string(100000, ']') + "\n");
  ASSERT_EQ(flow.size(), 1u);
  EXPECT_EQ(flow[0].to_string(), "bomb.yaml:2:73: nested more than 64 levels deep; catalog files are not");

  std::string block = "schema: 1\nentries:\n";
  for (int i = 0; i < 70; ++i)
    block += std::string(static_cast<std::size_t>(2 * i + 2), ' ') + "k" + std::to_string(i) + ":\n";
  const auto ps = problems_of(block);
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_NE(ps[0].message.find("nested more than 64 levels deep"), std::string::npos);
}

TEST(BoundsYaml, AConfigOfAFlowCollectionAndACommaIsAnErrorNotAHang) {
  // yaml-cpp 0.7 reads "{}," as an endless run of empty documents (found by
  // the config_fix fuzzer: it allocated until it ran out of memory).
  for (const char* text : {"{},", "[],", "{\"a\": 1},\n"}) {
    try {
      ConfigTree::parse(text, "c.json");
      ADD_FAILURE() << text << " parsed";
    } catch (const config_error& e) {
      EXPECT_NE(std::string(e.what()).find("more than one document"), std::string::npos) << e.what();
    }
  }
}

TEST(BoundsYaml, ACatalogFileOverSixteenMebibytesIsRefusedBeforeParsing) {
  std::string huge = "schema: 1\nentries: []\n";
  huge.append(16u << 20, '#');  // a comment, so only the size is wrong
  const auto ps = problems_of(huge);
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].to_string(), "bomb.yaml: the file is " + std::to_string(huge.size()) +
                                   " bytes; a catalog file may hold at most 16 MiB (split it into several files in "
                                   "one folder)");

  // The same from a file on disk.
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "errshim-bounds-huge.yaml";
  std::ofstream(path, std::ios::binary) << huge;
  try {
    CatalogBuilder().add_path(path).build();
    ADD_FAILURE() << "a huge catalog file loaded";
  } catch (const catalog_error& e) {
    EXPECT_NE(e.problems().at(0).message.find("at most 16 MiB"), std::string::npos);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace errshim
