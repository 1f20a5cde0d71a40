// Replays every input a fuzzer ever crashed or hung on
// (tests/data/fuzz-regressions/<target>/) and the seed corpora
// (fuzz/corpus/<target>/) through the same target bodies the fuzzers run
// (fuzz/fuzz_targets.hpp), so a fixed finding stays fixed in the normal
// suite, with no clang or libFuzzer needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace errshim::fuzz {
// A property a target checks did not hold: a test failure here, where a
// fuzzer would abort.
struct property_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace errshim::fuzz

#define ERRSHIM_FUZZ_FAIL(message) throw ::errshim::fuzz::property_failure(message)
#include "../fuzz/fuzz_targets.hpp"

namespace errshim {
namespace {

namespace fs = std::filesystem;
using Body = std::function<void(const std::uint8_t*, std::size_t)>;

std::vector<fs::path> inputs_of(const std::string& target) {
  std::vector<fs::path> out;
  for (const fs::path& dir : {fs::path(ERRSHIM_SOURCE_DIR) / "tests/data/fuzz-regressions" / target,
                              fs::path(ERRSHIM_SOURCE_DIR) / "fuzz/corpus" / target}) {
    std::error_code ec;
    for (const auto& de : fs::directory_iterator(dir, ec))
      if (de.is_regular_file() && de.path().filename().string()[0] != '.') out.push_back(de.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs every input of `target`; returns how many there were.
std::size_t replay(const std::string& target, const Body& body) {
  const std::vector<fs::path> inputs = inputs_of(target);
  for (const fs::path& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      body(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
    } catch (const fuzz::property_failure& e) {
      ADD_FAILURE() << p << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << p << ": an exception escaped: " << e.what();
    } catch (...) {
      ADD_FAILURE() << p << ": a non-standard exception escaped";
    }
  }
  return inputs.size();
}

TEST(FuzzRegression, CatalogInputsLoadOrFailWithPositionedProblems) {
  EXPECT_GT(replay("catalog", fuzz::catalog_one), 0u);
}

TEST(FuzzRegression, TemplateInputsCompileToSafeRegexesOrFailAtAnOffset) {
  EXPECT_GT(replay("template", fuzz::template_one), 0u);
}

TEST(FuzzRegression, MessageInputsMatchWithinTheBoundsWithoutThrowing) {
  EXPECT_GT(replay("match", fuzz::match_one), 0u);
}

TEST(FuzzRegression, ImportInputsGiveLoadableCatalogsOrImportErrors) {
#if ERRSHIM_FUZZ_HAVE_IMPORTER
  EXPECT_GT(replay("import", fuzz::import_one), 0u);
#else
  GTEST_SKIP() << "no importer in this tree";
#endif
}

TEST(FuzzRegression, ConfigFixInputsNeverChangeTheCallersConfig) {
  EXPECT_GT(replay("config_fix", fuzz::config_fix_one), 0u);
}

TEST(FuzzRegression, SealedSnapshotInputsLoadOrFailWithProblems) {
  EXPECT_GT(replay("snapshot", fuzz::snapshot_one), 0u);
}

}  // namespace
}  // namespace errshim
