// The C interface: statuses instead of exceptions, ownership, fields and
// JSON of a diagnosis, catalogs in layers, config fixes.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <errshim/c_api.h>
#include <errshim/version.hpp>

#include "test_catalogs.hpp"

namespace {

constexpr const char* kSdpa =
    "Error: Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], k dims [1, 8, 7, 48], v dims [1, 8, 7, "
    "48].";
constexpr const char* kQuantized =
    "ValueError: This model does not support the quantized cache. If you want your model to support quantized "
    "cache, please open an issue and tag @zucchini-nlp.";

// Owns what the C interface hands out, so a failing test does not leak.
struct Diag {
  errshim_diagnosis* p = nullptr;
  ~Diag() { errshim_diagnosis_free(p); }
};
struct Fix {
  errshim_fix* p = nullptr;
  ~Fix() { errshim_fix_free(p); }
};
struct Cat {
  errshim_catalog* p = nullptr;
  ~Cat() { errshim_catalog_free(p); }
};
struct Str {
  char* p = nullptr;
  ~Str() { errshim_string_free(p); }
  std::string str() const { return p != nullptr ? p : "<null>"; }
};

// The C API lints a layer before it swaps it in: these entries lint clean.
using errshim::testing::captured_entry_yaml;

TEST(CApi, VersionAndStatusNames) {
  EXPECT_STREQ(errshim_version(), ERRSHIM_VERSION_STRING);
  EXPECT_STREQ(errshim_status_name(ERRSHIM_OK), "ok");
  EXPECT_STREQ(errshim_status_name(ERRSHIM_NO_FIX), "no-fix");
  EXPECT_STREQ(errshim_status_name(ERRSHIM_INTERNAL_ERROR), "internal-error");
  EXPECT_STREQ(errshim_status_name(static_cast<errshim_status>(99)), "unknown");
}

TEST(CApi, DiagnoseFieldsFromTheEmbeddedCatalog) {
  Diag d;
  Str err;
  ASSERT_EQ(errshim_diagnose(nullptr, kSdpa, ERRSHIM_NUL_TERMINATED, nullptr, &d.p, &err.p), ERRSHIM_OK);
  EXPECT_EQ(err.p, nullptr);
  ASSERT_NE(d.p, nullptr);
  EXPECT_EQ(errshim_diagnosis_matched(d.p), 1);
  EXPECT_STREQ(errshim_diagnosis_id(d.p), "candle.sdpa.unsupported_head_dim");
  EXPECT_STREQ(errshim_diagnosis_library(d.p), "candle");
  EXPECT_STREQ(errshim_diagnosis_source_repo(d.p), "huggingface/candle");
  EXPECT_STREQ(errshim_diagnosis_source_path(d.p), "candle-nn/src/ops.rs");
  EXPECT_GT(errshim_diagnosis_source_line(d.p), 0);
  EXPECT_GT(std::strlen(errshim_diagnosis_source_commit(d.p)), 6u);
  EXPECT_GT(std::strlen(errshim_diagnosis_cause(d.p)), 0u);
  EXPECT_GT(std::strlen(errshim_diagnosis_trigger(d.p)), 0u);
  EXPECT_NE(std::string(errshim_diagnosis_message(d.p)).find("q head dim 48"), std::string::npos);

  ASSERT_GE(errshim_diagnosis_remediation_count(d.p), 1u);
  EXPECT_GT(std::strlen(errshim_diagnosis_remediation(d.p, 0)), 0u);
  EXPECT_EQ(errshim_diagnosis_remediation(d.p, 1000), nullptr);
  EXPECT_EQ(errshim_diagnosis_remediation_safety(d.p, 1000), nullptr);

  ASSERT_GE(errshim_diagnosis_capture_count(d.p), 4u);
  EXPECT_STREQ(errshim_diagnosis_capture_name(d.p, 0), "q_head");
  EXPECT_STREQ(errshim_diagnosis_capture_value(d.p, 0), "48");
  EXPECT_STREQ(errshim_diagnosis_capture(d.p, "q_head"), "48");
  EXPECT_STREQ(errshim_diagnosis_capture(d.p, "q_dims"), "[1, 32, 7, 48]");
  EXPECT_EQ(errshim_diagnosis_capture(d.p, "nope"), nullptr);
  EXPECT_EQ(errshim_diagnosis_capture(d.p, nullptr), nullptr);
  EXPECT_EQ(errshim_diagnosis_capture_name(d.p, 99), nullptr);
  EXPECT_EQ(errshim_diagnosis_problem_count(d.p), 0u);

  Str json{errshim_diagnosis_json(d.p)};
  EXPECT_EQ(json.str().rfind("{\"matched\": true, \"id\": \"candle.sdpa.unsupported_head_dim\"", 0), 0u) << json.str();
}

TEST(CApi, MessageWithExplicitLengthNeedNotBeTerminated) {
  const std::string buffer = std::string(kQuantized) + "GARBAGE-AFTER-THE-MESSAGE";
  Diag d;
  ASSERT_EQ(errshim_diagnose(nullptr, buffer.data(), std::strlen(kQuantized), nullptr, &d.p, nullptr), ERRSHIM_OK);
  EXPECT_STREQ(errshim_diagnosis_id(d.p), "transformers.generation.quantized_cache_unsupported");
  EXPECT_STREQ(errshim_diagnosis_exception_class(d.p), "ValueError");
  EXPECT_STREQ(errshim_diagnosis_remediation_safety(d.p, 0), "safe");
  EXPECT_STREQ(errshim_diagnosis_remediation_safety(d.p, 1), "slower");
}

TEST(CApi, NoMatchStillGivesAHandle) {
  Diag d;
  ASSERT_EQ(errshim_diagnose(nullptr, "the weather is bad", ERRSHIM_NUL_TERMINATED, nullptr, &d.p, nullptr),
            ERRSHIM_NO_MATCH);
  ASSERT_NE(d.p, nullptr);
  EXPECT_EQ(errshim_diagnosis_matched(d.p), 0);
  EXPECT_STREQ(errshim_diagnosis_id(d.p), "");
  EXPECT_STREQ(errshim_diagnosis_cause(d.p), "");
  EXPECT_EQ(errshim_diagnosis_source_line(d.p), 0);
  EXPECT_EQ(errshim_diagnosis_remediation_count(d.p), 0u);
  EXPECT_EQ(errshim_diagnosis_capture_count(d.p), 0u);
  Str json{errshim_diagnosis_json(d.p)};
  EXPECT_EQ(json.str(), "{\"matched\": false}");

  Diag empty;
  EXPECT_EQ(errshim_diagnose(nullptr, nullptr, 0, nullptr, &empty.p, nullptr), ERRSHIM_NO_MATCH);
}

TEST(CApi, BadArgumentsAreStatusesNeverCrashes) {
  Diag d;
  Str err;
  EXPECT_EQ(errshim_diagnose(nullptr, kSdpa, ERRSHIM_NUL_TERMINATED, nullptr, nullptr, &err.p),
            ERRSHIM_INVALID_ARGUMENT);
  EXPECT_NE(err.str().find("out is NULL"), std::string::npos);

  Str err2;
  EXPECT_EQ(errshim_diagnose(nullptr, nullptr, 5, nullptr, &d.p, &err2.p), ERRSHIM_INVALID_ARGUMENT);
  EXPECT_EQ(d.p, nullptr);

  Str err3;
  EXPECT_EQ(errshim_diagnose(nullptr, kSdpa, ERRSHIM_NUL_TERMINATED, "no-equals", &d.p, &err3.p),
            ERRSHIM_INVALID_ARGUMENT);
  EXPECT_EQ(d.p, nullptr);
  EXPECT_NE(err3.str().find("context"), std::string::npos) << err3.str();

  // The error out-parameter is optional.
  EXPECT_EQ(errshim_diagnose(nullptr, kSdpa, ERRSHIM_NUL_TERMINATED, "no-equals", &d.p, nullptr),
            ERRSHIM_INVALID_ARGUMENT);

  // Getters and frees take NULL.
  EXPECT_EQ(errshim_diagnosis_id(nullptr), nullptr);
  EXPECT_EQ(errshim_diagnosis_matched(nullptr), 0);
  Str unmatched{errshim_diagnosis_json(nullptr)};
  EXPECT_EQ(unmatched.str(), "{\"matched\": false}");
  EXPECT_EQ(errshim_catalog_size(nullptr), 0u);
  errshim_diagnosis_free(nullptr);
  errshim_catalog_free(nullptr);
  errshim_fix_free(nullptr);
  errshim_string_free(nullptr);
  EXPECT_EQ(errshim_catalog_add_path(nullptr, "x", nullptr), ERRSHIM_INVALID_ARGUMENT);
}

TEST(CApi, CatalogLayers) {
  Cat c;
  ASSERT_EQ(errshim_catalog_new(0, &c.p, nullptr), ERRSHIM_OK);
  EXPECT_EQ(errshim_catalog_size(c.p), 0u);

  const std::string mine =
      errshim::testing::file_yaml(captured_entry_yaml("test.capi.custom", "the flux capacitor is at {level} percent",
                                                      "the flux capacitor is at 88 percent", "{level: '88'}"));
  Str err;
  ASSERT_EQ(errshim_catalog_add_yaml(c.p, mine.data(), mine.size(), "mine.yaml", &err.p), ERRSHIM_OK) << err.str();
  EXPECT_EQ(errshim_catalog_size(c.p), 1u);

  Diag d;
  ASSERT_EQ(
      errshim_diagnose(c.p, "the flux capacitor is at 88 percent", ERRSHIM_NUL_TERMINATED, nullptr, &d.p, nullptr),
      ERRSHIM_OK);
  EXPECT_STREQ(errshim_diagnosis_capture(d.p, "level"), "88");

  // A layer that does not load is refused whole, with every problem, and the
  // catalog keeps what it had.
  const std::string broken =
      errshim::testing::file_yaml(errshim::testing::entry_yaml("test.capi.broken", "x {y}", "    cuase: typo\n"));
  Str err2;
  EXPECT_EQ(errshim_catalog_add_yaml(c.p, broken.data(), ERRSHIM_NUL_TERMINATED, "broken.yaml", &err2.p),
            ERRSHIM_CATALOG_ERROR);
  EXPECT_NE(err2.str().find("broken.yaml"), std::string::npos) << err2.str();
  EXPECT_NE(err2.str().find("cuase"), std::string::npos) << err2.str();
  EXPECT_EQ(errshim_catalog_size(c.p), 1u);

  // A folder: the shipped catalog.
  Str err3;
  ASSERT_EQ(errshim_catalog_add_path(c.p, ERRSHIM_SOURCE_DIR "/patterns", &err3.p), ERRSHIM_OK) << err3.str();
  EXPECT_GT(errshim_catalog_size(c.p), 10u);
  Diag d2;
  EXPECT_EQ(errshim_diagnose(c.p, kSdpa, ERRSHIM_NUL_TERMINATED, nullptr, &d2.p, nullptr), ERRSHIM_OK);

  Str err4;
  EXPECT_EQ(errshim_catalog_add_path(c.p, "/nonexistent/errshim", &err4.p), ERRSHIM_CATALOG_ERROR);
  EXPECT_NE(err4.str().find("/nonexistent/errshim"), std::string::npos) << err4.str();
}

TEST(CApi, AddRefusesALayerThatBuildsButDoesNotLintCleanAndKeepsTheOldCatalog) {
  // The add goes through CatalogStore: compiled and linted before the swap.
  // This layer builds (add_yaml loads it), but lint finds a pattern that may
  // backtrack catastrophically, so the catalog must stay as it was.
  Cat c;
  ASSERT_EQ(errshim_catalog_new(0, &c.p, nullptr), ERRSHIM_OK);
  const std::string base =
      errshim::testing::file_yaml(captured_entry_yaml("test.capi.kept", "the flux capacitor is at {level} percent",
                                                      "the flux capacitor is at 88 percent", "{level: '88'}"));
  ASSERT_EQ(errshim_catalog_add_yaml(c.p, base.data(), base.size(), "base.yaml", nullptr), ERRSHIM_OK);
  const std::string risky = errshim::testing::file_yaml(errshim::testing::risky_entry_yaml("test.capi.slow"));
  Str err;
  EXPECT_EQ(errshim_catalog_add_yaml(c.p, risky.data(), risky.size(), "risky.yaml", &err.p), ERRSHIM_CATALOG_ERROR);
  EXPECT_NE(err.str().find("risky.yaml:5:5: entry 'test.capi.slow': pattern may backtrack catastrophically"),
            std::string::npos)
      << err.str();
  EXPECT_EQ(errshim_catalog_size(c.p), 1u);
  Diag d;
  ASSERT_EQ(
      errshim_diagnose(c.p, "the flux capacitor is at 88 percent", ERRSHIM_NUL_TERMINATED, nullptr, &d.p, nullptr),
      ERRSHIM_OK);
  EXPECT_STREQ(errshim_diagnosis_id(d.p), "test.capi.kept");
  Diag slow;
  EXPECT_EQ(errshim_diagnose(c.p, "slow a b", ERRSHIM_NUL_TERMINATED, nullptr, &slow.p, nullptr), ERRSHIM_NO_MATCH);

  // A later good layer still adds to the kept catalog, not to the refused one.
  const std::string more =
      errshim::testing::file_yaml(captured_entry_yaml("test.capi.more", "more {x} here", "more 1 here", "{x: '1'}"));
  ASSERT_EQ(errshim_catalog_add_yaml(c.p, more.data(), more.size(), "more.yaml", nullptr), ERRSHIM_OK);
  EXPECT_EQ(errshim_catalog_size(c.p), 2u);
}

TEST(CApi, LoadsACatalogSnapshotByPath) {
  // A snapshot written by `errshim snapshot` (here by the C++ API) loads
  // through add_path like a YAML file; a damaged one is refused by name.
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/capi_test.snapshot", bad = dir + "/capi_test_damaged.snapshot";
  using errshim::testing::entry_yaml;
  using errshim::testing::file_yaml;
  const std::string bytes =
      errshim::testing::catalog_from(file_yaml(captured_entry_yaml("test.capi.snap", "snapshot entry {n} here",
                                                                   "snapshot entry 1 here", "{n: '1'}")))
          ->snapshot();
  auto write = [](const std::string& path, const std::string& data) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    EXPECT_EQ(std::fwrite(data.data(), 1, data.size(), f), data.size());
    std::fclose(f);
  };
  write(good, bytes);
  write(bad, bytes.substr(0, bytes.size() / 2));

  Cat c;
  ASSERT_EQ(errshim_catalog_new(0, &c.p, nullptr), ERRSHIM_OK);
  Str err;
  ASSERT_EQ(errshim_catalog_add_path(c.p, good.c_str(), &err.p), ERRSHIM_OK) << err.str();
  EXPECT_EQ(errshim_catalog_size(c.p), 1u);
  Diag d;
  const char* message = "snapshot entry 7 here";
  ASSERT_EQ(errshim_diagnose(c.p, message, ERRSHIM_NUL_TERMINATED, nullptr, &d.p, nullptr), ERRSHIM_OK);
  ASSERT_NE(d.p, nullptr);

  Str err2;
  EXPECT_EQ(errshim_catalog_add_path(c.p, bad.c_str(), &err2.p), ERRSHIM_CATALOG_ERROR);
  EXPECT_NE(err2.str().find("capi_test_damaged.snapshot"), std::string::npos) << err2.str();
  EXPECT_EQ(errshim_catalog_size(c.p), 1u);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST(CApi, ContextPicksTheScopedEntry) {
  Cat c;
  ASSERT_EQ(errshim_catalog_new(0, &c.p, nullptr), ERRSHIM_OK);
  // Each example names the context it is for: without one, lint finds one entry shadowing the other.
  std::string entries;
  for (const auto& [id, range, version] :
       {std::tuple<const char*, const char*, const char*>{"old", "<4.54", "4.50"}, {"new", ">=4.54", "4.57"}})
    entries += std::string("  - id: lib.cache.") + id +
               "\n"
               "    template: 'quantized cache unsupported'\n"
               "    applies_to: {transformers: '" +
               range +
               "'}\n"
               "    source: {path: lib/cache.py, line: 1}\n"
               "    error_class: ValueError\n"
               "    kind: unsupported-feature\n"
               "    cause: c\n"
               "    trigger: t\n"
               "    remediation:\n"
               "      - text: r\n"
               "    examples:\n"
               "      match: [{text: 'quantized cache unsupported', context: {transformers: '" +
               version + "'}}]\n";
  const std::string scoped = errshim::testing::file_yaml(entries);
  Str err;
  ASSERT_EQ(errshim_catalog_add_yaml(c.p, scoped.data(), scoped.size(), "scoped.yaml", &err.p), ERRSHIM_OK)
      << err.str();
  for (const auto& [context, id] :
       {std::pair<const char*, const char*>{"transformers=4.57,device=metal", "lib.cache.new"},
        {"transformers=4.50", "lib.cache.old"}}) {
    Diag d;
    ASSERT_EQ(errshim_diagnose(c.p, "quantized cache unsupported", ERRSHIM_NUL_TERMINATED, context, &d.p, nullptr),
              ERRSHIM_OK);
    EXPECT_STREQ(errshim_diagnosis_id(d.p), id) << context;
  }
}

TEST(CApi, EmbeddedCatalogHandleMatchesTheDefault) {
  Cat c;
  ASSERT_EQ(errshim_catalog_new(1, &c.p, nullptr), ERRSHIM_OK);
  EXPECT_GT(errshim_catalog_size(c.p), 10u);
  Diag d;
  ASSERT_EQ(errshim_diagnose(c.p, kSdpa, ERRSHIM_NUL_TERMINATED, nullptr, &d.p, nullptr), ERRSHIM_OK);
  EXPECT_STREQ(errshim_diagnosis_id(d.p), "candle.sdpa.unsupported_head_dim");
}

TEST(CApi, DiagnoseWhileAnotherThreadAddsLayers) {
  // Small layers, so the adds are quick and many diagnoses overlap them.
  Cat c;
  ASSERT_EQ(errshim_catalog_new(0, &c.p, nullptr), ERRSHIM_OK);
  const std::string base =
      errshim::testing::file_yaml(captured_entry_yaml("test.capi.base", "the flux capacitor is at {level} percent",
                                                      "the flux capacitor is at 88 percent", "{level: '88'}"));
  ASSERT_EQ(errshim_catalog_add_yaml(c.p, base.data(), base.size(), nullptr, nullptr), ERRSHIM_OK);
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!done) {
        errshim_diagnosis* d = nullptr;
        if (errshim_diagnose(c.p, "the flux capacitor is at 88 percent", ERRSHIM_NUL_TERMINATED, nullptr, &d,
                             nullptr) != ERRSHIM_OK ||
            std::strcmp(errshim_diagnosis_id(d), "test.capi.base") != 0)
          ++wrong;
        errshim_diagnosis_free(d);
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    const std::string layer = errshim::testing::file_yaml(
        captured_entry_yaml("test.capi.layer" + std::to_string(i), "layer " + std::to_string(i) + " {x}",
                            "layer " + std::to_string(i) + " 1", "{x: '1'}"));
    EXPECT_EQ(errshim_catalog_add_yaml(c.p, layer.data(), layer.size(), nullptr, nullptr), ERRSHIM_OK);
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CApi, FixAJsonConfig) {
  const std::string config = "{\n  \"max_new_tokens\": 64,\n  \"cache_implementation\": \"quantized\"\n}\n";
  Fix f;
  Str err;
  ASSERT_EQ(errshim_fix_config(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, config.data(), config.size(),
                               nullptr, nullptr, &f.p, &err.p),
            ERRSHIM_OK)
      << err.str();
  EXPECT_EQ(errshim_fix_applied(f.p), 1);
  EXPECT_STREQ(errshim_fix_format(f.p), "json");
  EXPECT_STREQ(errshim_fix_entry_id(f.p), "transformers.generation.quantized_cache_unsupported");
  EXPECT_EQ(errshim_fix_step(f.p), 0);
  EXPECT_STREQ(errshim_fix_safety(f.p), "safe");
  EXPECT_GT(std::strlen(errshim_fix_step_text(f.p)), 0u);
  const std::string out = errshim_fix_config_text(f.p);
  EXPECT_NE(out.find("\"cache_implementation\": \"dynamic\""), std::string::npos) << out;
  EXPECT_LT(out.find("max_new_tokens"), out.find("cache_implementation")) << "key order kept";
  ASSERT_NE(errshim_fix_diagnosis(f.p), nullptr);
  EXPECT_STREQ(errshim_diagnosis_id(errshim_fix_diagnosis(f.p)), errshim_fix_entry_id(f.p));

  Str json{errshim_fix_json(f.p)};
  EXPECT_EQ(
      json.str().rfind("{\"applied\": true, \"entry\": \"transformers.generation.quantized_cache_unsupported\", "
                       "\"step\": 0, \"safety\": \"safe\", \"changes\": [{\"path\": \"cache_implementation\", "
                       "\"before\": \"quantized\", \"after\": \"dynamic\", \"created\": false}], \"decisions\": [",
                       0),
      0u)
      << json.str();
}

TEST(CApi, FixAYamlConfigUnderAPolicy) {
  const std::string config = "cache_implementation: quantized\nmax_new_tokens: 64\n";
  Fix f;
  ASSERT_EQ(errshim_fix_config(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, config.c_str(),
                               ERRSHIM_NUL_TERMINATED, " slower ", nullptr, &f.p, nullptr),
            ERRSHIM_OK);
  EXPECT_STREQ(errshim_fix_format(f.p), "yaml");
  EXPECT_EQ(errshim_fix_step(f.p), 1);
  EXPECT_STREQ(errshim_fix_safety(f.p), "slower");
  EXPECT_NE(std::string(errshim_fix_config_text(f.p)).find("cache_implementation: offloaded"), std::string::npos);

  // Pinned: the user chose it; no step may change it.
  Fix pinned;
  EXPECT_EQ(
      errshim_fix_config(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, config.c_str(), ERRSHIM_NUL_TERMINATED,
                         "safe,slower", "dtype, cache_implementation", &pinned.p, nullptr),
      ERRSHIM_NO_FIX);
  EXPECT_EQ(errshim_fix_applied(pinned.p), 0);
  EXPECT_EQ(errshim_fix_step(pinned.p), -1);
  EXPECT_STREQ(errshim_fix_safety(pinned.p), "");
  EXPECT_EQ(std::string(errshim_fix_config_text(pinned.p)), config);
  Str why{errshim_fix_json(pinned.p)};
  EXPECT_NE(why.str().find("\"outcome\": \"refused\""), std::string::npos) << why.str();
}

// A caller's own retry loop (Python's remediate) says which steps it
// applied before; the next allowed one is chosen, as in C++ remediate().
TEST(CApi, FixSkippingChoosesTheNextAllowedStep) {
  const std::string config = "cache_implementation: quantized\n";
  Fix f;
  ASSERT_EQ(errshim_fix_config_skipping(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, config.c_str(),
                                        ERRSHIM_NUL_TERMINATED, "safe,slower", nullptr, " 0 ", &f.p, nullptr),
            ERRSHIM_OK);
  EXPECT_EQ(errshim_fix_step(f.p), 1);
  EXPECT_NE(std::string(errshim_fix_config_text(f.p)).find("offloaded"), std::string::npos);
  Fix all;
  EXPECT_EQ(errshim_fix_config_skipping(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, config.c_str(),
                                        ERRSHIM_NUL_TERMINATED, "safe,slower", nullptr, "0,1", &all.p, nullptr),
            ERRSHIM_NO_FIX);
  for (const char* bad : {"x", "-1", "1x"}) {
    Fix b;
    Str err;
    EXPECT_EQ(errshim_fix_config_skipping(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, config.c_str(),
                                          ERRSHIM_NUL_TERMINATED, nullptr, nullptr, bad, &b.p, &err.p),
              ERRSHIM_INVALID_ARGUMENT)
        << bad;
    EXPECT_NE(err.str().find(bad), std::string::npos) << err.str();
    EXPECT_EQ(b.p, nullptr);
  }
}

TEST(CApi, FixRefusals) {
  const char* config = "{\"cache_implementation\": \"quantized\"}";
  Fix f;
  Str err;
  EXPECT_EQ(errshim_fix_config(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, config, ERRSHIM_NUL_TERMINATED,
                               "safe,manual", nullptr, &f.p, &err.p),
            ERRSHIM_INVALID_ARGUMENT);
  EXPECT_EQ(f.p, nullptr);
  EXPECT_NE(err.str().find("manual"), std::string::npos);

  Str err2;
  EXPECT_EQ(errshim_fix_config(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, config, ERRSHIM_NUL_TERMINATED,
                               "fast", nullptr, &f.p, &err2.p),
            ERRSHIM_INVALID_ARGUMENT);
  EXPECT_NE(err2.str().find("'fast'"), std::string::npos);

  Str err3;
  EXPECT_EQ(errshim_fix_config(nullptr, kQuantized, ERRSHIM_NUL_TERMINATED, nullptr, "{\"a\": ", ERRSHIM_NUL_TERMINATED,
                               nullptr, nullptr, &f.p, &err3.p),
            ERRSHIM_CONFIG_ERROR);
  EXPECT_EQ(f.p, nullptr);
  EXPECT_FALSE(err3.str().empty());

  Fix unknown;
  EXPECT_EQ(errshim_fix_config(nullptr, "the weather is bad", ERRSHIM_NUL_TERMINATED, nullptr, config,
                               ERRSHIM_NUL_TERMINATED, nullptr, nullptr, &unknown.p, nullptr),
            ERRSHIM_NO_MATCH);
  EXPECT_STREQ(errshim_fix_entry_id(unknown.p), "");
  EXPECT_EQ(errshim_fix_diagnosis(unknown.p), nullptr);
  Str json{errshim_fix_json(unknown.p)};
  EXPECT_EQ(
      json.str(),
      "{\"applied\": false, \"entry\": null, \"step\": null, \"safety\": null, \"changes\": [], \"decisions\": []}");
}

}  // namespace
