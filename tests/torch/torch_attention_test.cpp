// errshim on a real inference layer: a libtorch attention block with a KV
// cache (samples/torch/attention_block.*), misconfigured the ways real configs
// are. Each case runs the block for real, so the errors are the c10::Error (or,
// for view, std::runtime_error) messages libtorch 1.13 raises, backtraces
// included, and checks that:
//   - errshim::guard throws translated_error with the catalog id and captures;
//   - the original exception is nested and of its original type;
//   - the backtrace frames are gone from the matched segment;
//   - libtorch's own "Exception raised from FILE:LINE" is where the entry pins it;
//   - with the host's context, the attention-specific entries win;
//   - where the first remediation is a safe config change, applying it (with a
//     small local helper) makes the same run succeed.
#include <algorithm>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <errshim/errshim.hpp>

#include "attention_block.hpp"
#include "local_fix.hpp"
#include "reference_errors.hpp"

namespace {

using torch_attention::AttentionBlock;
using torch_attention::AttentionConfig;
using Steps = std::vector<std::pair<std::int64_t, std::int64_t>>;  // (batch, tokens) per step

const Steps kPromptThenDecode = {{1, 5}, {1, 1}, {1, 1}};

void run(const AttentionConfig& config, const Steps& steps) {
  AttentionBlock block(config);
  for (const auto& [batch, tokens] : steps) block.step(batch, tokens);
}

// Only the libtorch file, so the tests do not depend on other catalog files.
const errshim::Catalog& catalog() {
  static const errshim::CatalogPtr c = errshim::CatalogBuilder().add_path(ERRSHIM_LIBTORCH_CATALOG).build();
  return *c;
}

// What an attention host knows about where its errors come from.
errshim::Context attention_context() {
  errshim::Context c;
  c.values["component"] = "attention";
  c.values["libtorch"] = torch_attention::libtorch_version();
  return c;
}

enum class Original { c10_error, c10_index_error, std_runtime_error };

struct Scenario {
  std::string name;
  std::function<void(AttentionConfig&)> configure;
  Steps steps;
  std::string id;  // the entry chosen without context
  std::map<std::string, std::string> captures;  // expected, all of them checked
  Original original;
  std::string raised_at;  // FILE:LINE from "Exception raised from"; empty when the error has none
};

std::ostream& operator<<(std::ostream& os, const Scenario& s) { return os << s.name; }

AttentionConfig configured(const Scenario& s) {
  AttentionConfig c;
  s.configure(c);
  return c;
}

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> all = {
      // clang-format off
      {"embed_dim_not_divisible_by_heads", [](AttentionConfig& c) { c.embed_dim = 60; }, kPromptThenDecode,
       "libtorch.shape.view_invalid_size", {{"shape", "[1, 5, 8, 7]"}, {"numel", "300"}}, Original::std_runtime_error,
       ""},
      {"kv_heads_not_dividing_heads", [](AttentionConfig& c) { c.num_kv_heads = 3; }, kPromptThenDecode,
       "libtorch.shape.broadcast_mismatch", {{"a", "8"}, {"b", "6"}, {"dim", "1"}}, Original::c10_error,
       "aten/src/ATen/ExpandUtils.cpp:31"},
      {"kv_heads_above_heads", [](AttentionConfig& c) { c.num_kv_heads = 12; }, kPromptThenDecode,
       "libtorch.shape.broadcast_mismatch", {{"a", "8"}, {"b", "0"}, {"dim", "1"}}, Original::c10_error,
       "aten/src/ATen/ExpandUtils.cpp:31"},
      {"static_cache_dtype",
       [](AttentionConfig& c) {
         c.dtype = "bfloat16";
         c.cache_dtype = "float32";
       },
       kPromptThenDecode, "libtorch.index_copy.dtype_mismatch", {{"self_dtype", "Float"}, {"source_dtype", "BFloat16"}},
       Original::c10_error, "aten/src/ATen/native/TensorAdvancedIndexing.cpp:245"},
      {"dynamic_cache_dtype",
       [](AttentionConfig& c) {
         c.dtype = "bfloat16";
         c.cache_dtype = "float32";
         c.cache_implementation = "dynamic";
       },
       kPromptThenDecode, "libtorch.dtype.expected_scalar_type", {{"expected", "BFloat16"}, {"found", "Float"}},
       Original::c10_error, "aten/src/ATen/core/TensorMethods.cpp:20"},
      {"half_on_cpu", [](AttentionConfig& c) { c.dtype = "float16"; }, kPromptThenDecode,
       "libtorch.dtype.half_not_implemented", {{"op", "addmm_impl_cpu_"}, {"dtype", "Half"}}, Original::c10_error,
       "aten/src/ATen/native/LinearAlgebra.cpp:1308"},
      {"static_cache_full", [](AttentionConfig& c) { c.max_cache_len = 6; }, kPromptThenDecode,
       "libtorch.index_copy.out_of_bounds", {{"index", "6"}, {"dim", "2"}, {"size", "6"}}, Original::c10_index_error,
       "aten/src/ATen/native/cpu/IndexKernel.cpp:273"},
      {"rope_table_exhausted",
       [](AttentionConfig& c) {
         c.max_position_embeddings = 6;
         c.cache_implementation = "dynamic";
       },
       kPromptThenDecode, "libtorch.narrow.out_of_range", {{"start", "6"}, {"length", "1"}, {"size", "6"}},
       Original::c10_error, "aten/src/ATen/native/TensorShape.cpp:1134"},
      {"learned_positions_exhausted",
       [](AttentionConfig& c) {
         c.max_position_embeddings = 6;
         c.position_embedding = "learned";
       },
       kPromptThenDecode, "libtorch.index.out_of_range_in_self", {}, Original::c10_index_error,
       "aten/src/ATen/native/TensorAdvancedIndexing.cpp:1189"},
      {"dynamic_cache_head_dim",
       [](AttentionConfig& c) {
         c.cache_head_dim = 16;
         c.cache_implementation = "dynamic";
       },
       kPromptThenDecode, "libtorch.cat.size_mismatch", {{"dim", "2"}, {"expected", "16"}, {"got", "8"}, {"index", "1"}},
       Original::c10_error, "aten/src/ATen/native/TensorShape.h:25"},
      {"static_cache_head_dim", [](AttentionConfig& c) { c.cache_head_dim = 16; }, kPromptThenDecode,
       "libtorch.index_copy.slice_shape_mismatch",
       {{"destination_shape", "1 8 16"}, {"dim", "2"}, {"source_shape", "1 8 8"}}, Original::c10_error,
       "aten/src/ATen/native/TensorAdvancedIndexing.cpp:266"},
      {"static_cache_batch", [](AttentionConfig&) {}, Steps{{2, 5}}, "libtorch.index_copy.slice_shape_mismatch",
       {{"destination_shape", "1 8 8"}, {"dim", "2"}, {"source_shape", "2 8 8"}}, Original::c10_error,
       "aten/src/ATen/native/TensorAdvancedIndexing.cpp:266"},
      {"dynamic_cache_batch", [](AttentionConfig& c) { c.cache_implementation = "dynamic"; }, Steps{{2, 5}},
       "libtorch.cat.size_mismatch", {{"dim", "2"}, {"expected", "1"}, {"got", "2"}, {"index", "1"}},
       Original::c10_error, "aten/src/ATen/native/TensorShape.h:25"},
      {"cache_on_meta_device", [](AttentionConfig& c) { c.cache_device = "meta"; }, kPromptThenDecode,
       "libtorch.index_copy.device_mismatch",
       {{"self_device", "meta"}, {"index_device", "cpu"}, {"source_device", "cpu"}}, Original::c10_error,
       "aten/src/ATen/native/TensorAdvancedIndexing.cpp:246"},
      // 1 x 8 KV heads x 2^33 positions x head size 8 x 4 bytes = 2 TiB: refused by
      // the allocator at once, nothing is touched.
      {"static_cache_too_large", [](AttentionConfig& c) { c.max_cache_len = std::int64_t{1} << 33; },
       kPromptThenDecode, "libtorch.memory.cpu_alloc_failed", {{"bytes", "2199023255552"}, {"errno", "12"}},
       Original::c10_error, ""},
      // clang-format on
  };
  return all;
}

// The enriched error the scenario must produce under errshim::guard.
errshim::translated_error translated(const AttentionConfig& config, const Steps& steps,
                                     const errshim::Catalog& cat = catalog()) {
  try {
    errshim::guard([&] { run(config, steps); }, cat);
  } catch (const errshim::translated_error& e) {
    return e;
  }
  throw std::logic_error("the scenario ran without an error");
}

// The original exception inside `e`, if it is an E; its what() in `what`.
template <class E>
bool nested_is(const errshim::translated_error& e, std::string* what = nullptr) {
  try {
    std::rethrow_if_nested(e);
  } catch (const E& original) {
    if (what) *what = original.what();
    return true;
  } catch (...) {}
  return false;
}

// "Exception raised from F at ./aten/.../X.cpp:N (most recent call first):" -> "aten/.../X.cpp:N".
// Generated sources are printed under ./build/; the repository path drops that.
std::string raised_at(const std::string& what) {
  static const std::regex site(R"(Exception raised from .* at \./(?:build/)?(\S+):(\d+) \(most recent call first\))");
  std::smatch m;
  return std::regex_search(what, m, site) ? m[1].str() + ":" + m[2].str() : std::string();
}

// `site` ("path:line") is the entry's source or one of its also_at places,
// read at tag v1.13.1.
void expect_pinned(const errshim::Entry& entry, const std::string& site) {
  std::vector<std::string> pins = {entry.source.path + ":" + std::to_string(entry.source.line)};
  for (const errshim::SourcePin& p : entry.also_at) pins.push_back(p.path + ":" + std::to_string(p.line));
  EXPECT_NE(std::find(pins.begin(), pins.end(), site), pins.end()) << site << " is not among the pins of " << entry.id;
  EXPECT_EQ(entry.source.repo, "pytorch/pytorch");
  EXPECT_EQ(entry.source.commit, "49444c3e546bf240bed24a101e747422d1f8a0ee");  // v1.13.1
}

class TorchScenario : public ::testing::TestWithParam<Scenario> {};

TEST_P(TorchScenario, LibtorchRaisesItsOwnError) {
  const Scenario& s = GetParam();
  const AttentionConfig config = configured(s);
  switch (s.original) {
    case Original::c10_index_error: EXPECT_THROW(run(config, s.steps), c10::IndexError); break;
    case Original::c10_error: EXPECT_THROW(run(config, s.steps), c10::Error); break;
    case Original::std_runtime_error:
      // InferSize.h throws a plain std::runtime_error in 1.13, not c10::Error.
      try {
        run(config, s.steps);
        ADD_FAILURE() << "no error";
      } catch (const c10::Error&) {
        ADD_FAILURE() << "expected std::runtime_error, got c10::Error";
      } catch (const std::runtime_error&) {}
      break;
  }
}

TEST_P(TorchScenario, GuardTranslatesWithIdAndCaptures) {
  const Scenario& s = GetParam();
  const errshim::translated_error e = translated(configured(s), s.steps);
  EXPECT_EQ(e.id(), s.id);
  for (const auto& [name, value] : s.captures) {
    const std::string* got = e.diagnosis().capture(name);
    ASSERT_NE(got, nullptr) << "capture " << name;
    EXPECT_EQ(*got, value) << "capture " << name;
  }
}

TEST_P(TorchScenario, OriginalErrorIsNestedUnchanged) {
  const Scenario& s = GetParam();
  const errshim::translated_error e = translated(configured(s), s.steps);
  std::string what;
  switch (s.original) {
    case Original::c10_index_error: EXPECT_TRUE(nested_is<c10::IndexError>(e, &what)); break;
    case Original::c10_error:
      EXPECT_TRUE(nested_is<c10::Error>(e, &what));
      EXPECT_FALSE(nested_is<c10::IndexError>(e));
      break;
    case Original::std_runtime_error:
      EXPECT_FALSE(nested_is<c10::Error>(e));
      EXPECT_TRUE(nested_is<std::runtime_error>(e, &what));
      break;
  }
  // The matched message is the one libtorch raised; its frames were dropped.
  EXPECT_NE(what.find(e.diagnosis().segment), std::string::npos) << what;
  EXPECT_EQ(e.diagnosis().segment.find("frame #"), std::string::npos) << e.diagnosis().segment;
  EXPECT_EQ(e.diagnosis().segment.find("Exception raised from"), std::string::npos) << e.diagnosis().segment;
  if (s.original != Original::std_runtime_error) {
    EXPECT_NE(what.find("frame #0:"), std::string::npos) << what;
  }
}

// Where libtorch says it raised the error is where the entry is pinned (the
// checks living in macros report their expansion site, listed here).
TEST_P(TorchScenario, RaisedWhereTheCatalogPinsIt) {
  const Scenario& s = GetParam();
  const errshim::translated_error e = translated(configured(s), s.steps);
  std::string what;
  ASSERT_TRUE(nested_is<std::exception>(e, &what));
  const std::string site = raised_at(what);
  EXPECT_EQ(site, s.raised_at);
  if (site.empty()) return;
  static const std::map<std::string, std::string> macro_expansions = {
      // DEFINE_CAST in templates/TensorMethods.cpp, expanded in the generated file.
      {"aten/src/ATen/core/TensorMethods.cpp:20", "aten/src/ATen/templates/TensorMethods.cpp:9"},
  };
  const auto it = macro_expansions.find(site);
  expect_pinned(*e.diagnosis().entry, it == macro_expansions.end() ? site : it->second);
}

INSTANTIATE_TEST_SUITE_P(Misconfigured, TorchScenario, ::testing::ValuesIn(scenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& info) { return info.param.name; });

}  // namespace

namespace torch_reference {
void PrintTo(const ReferenceCall& r, std::ostream* os) { *os << r.name; }
}  // namespace torch_reference

namespace {

using torch_reference::ReferenceCall;

class TorchReference : public ::testing::TestWithParam<ReferenceCall> {};

// The catalog's other libtorch 1.13 entries, on the real library: explained
// with the expected id, original c10::Error nested, raised where pinned.
TEST_P(TorchReference, ExplainedAndPinnedWhereRaised) {
  const ReferenceCall& r = GetParam();
  try {
    errshim::guard(r.call, catalog());
    ADD_FAILURE() << "no error";
  } catch (const errshim::translated_error& e) {
    EXPECT_EQ(e.id(), r.id);
    std::string what;
    ASSERT_TRUE(nested_is<c10::Error>(e, &what));
    EXPECT_EQ(raised_at(what), r.raised_at);
    expect_pinned(*e.diagnosis().entry, r.pinned.empty() ? r.raised_at : r.pinned);
  }
}

INSTANTIATE_TEST_SUITE_P(Libtorch, TorchReference, ::testing::ValuesIn(torch_reference::reference_calls()),
                         [](const ::testing::TestParamInfo<ReferenceCall>& info) { return info.param.name; });

const Scenario& scenario(const std::string& name) {
  for (const Scenario& s : scenarios())
    if (s.name == name) return s;
  throw std::invalid_argument("no scenario " + name);
}

TEST(TorchAttention, HealthyConfigsRun) {
  std::vector<AttentionConfig> configs(6);
  configs[1].cache_implementation = "dynamic";
  configs[2].num_kv_heads = 2;  // grouped-query attention
  configs[3].dtype = "bfloat16";
  configs[4].position_embedding = "learned";
  configs[5].num_kv_heads = 4;
  configs[5].cache_implementation = "dynamic";
  configs[5].dtype = "bfloat16";
  for (const AttentionConfig& c : configs) {
    AttentionBlock block(c);
    block.step(1, 5);
    const torch_attention::StepResult r = block.step(1, 1);
    EXPECT_EQ(r.output_shape, (std::vector<std::int64_t>{1, 1, 64}));
    EXPECT_EQ(r.cache_length, 6);
    EXPECT_EQ(r.dtype, c.dtype == "bfloat16" ? "BFloat16" : "Float");
  }
}

TEST(TorchAttention, HostContextSelectsTheAttentionMeaning) {
  const Scenario& gqa = scenario("kv_heads_not_dividing_heads");
  const errshim::translated_error e = translated(configured(gqa), gqa.steps);
  const std::optional<errshim::Diagnosis> d = errshim::diagnose(e.diagnosis().raw, catalog(), attention_context());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id(), "libtorch.attention.kv_heads_not_dividing");
  EXPECT_EQ(*d->capture("a"), "8");

  const Scenario& dtype = scenario("dynamic_cache_dtype");
  const errshim::translated_error e2 = translated(configured(dtype), dtype.steps);
  const std::optional<errshim::Diagnosis> d2 = errshim::diagnose(e2.diagnosis().raw, catalog(), attention_context());
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->id(), "libtorch.attention.kv_cache_dtype_mismatch");

  // Dimension 3 of the scores is the key length, not the heads: the general entry keeps it.
  const std::optional<errshim::Diagnosis> d3 =
      errshim::diagnose("The size of tensor a (7) must match the size of tensor b (5) at non-singleton dimension 3",
                        catalog(), attention_context());
  ASSERT_TRUE(d3);
  EXPECT_EQ(d3->id(), "libtorch.shape.broadcast_mismatch");
}

// The remediation round trip: diagnose (in the host's context), apply the
// first fix to the config with the local helper, rebuild, rerun the same steps.
struct Remedy {
  std::string scenario;
  std::string key;
  std::string value;  // expected after the fix
};

std::optional<AttentionConfig> remedied(const Scenario& s, std::initializer_list<errshim::Safety> allowed) {
  const errshim::translated_error e = translated(configured(s), s.steps);
  const std::optional<errshim::Diagnosis> d = errshim::diagnose(e.diagnosis().raw, catalog(), attention_context());
  if (!d) return std::nullopt;
  return torch_attention::apply_first_fix_locally(configured(s), *d, allowed);
}

std::string member(const AttentionConfig& c, const std::string& key) {
  if (key == "cache_dtype") return c.cache_dtype;
  if (key == "cache_device") return c.cache_device;
  if (key == "cache_implementation") return c.cache_implementation;
  if (key == "dtype") return c.dtype;
  if (key == "num_kv_heads") return std::to_string(c.num_kv_heads);
  return "?";
}

TEST(TorchAttention, SafeFixesAreAppliedAndTheRunSucceeds) {
  const std::vector<Remedy> remedies = {
      {"static_cache_dtype", "cache_dtype", "BFloat16"},  // safe
      {"dynamic_cache_dtype", "cache_dtype", "BFloat16"},  // safe (attention context)
      {"cache_on_meta_device", "cache_device", "cpu"},  // safe
      {"static_cache_full", "cache_implementation", "dynamic"},  // slower
  };
  for (const Remedy& r : remedies) {
    SCOPED_TRACE(r.scenario);
    const Scenario& s = scenario(r.scenario);
    const std::optional<AttentionConfig> fixed = remedied(s, {errshim::Safety::safe, errshim::Safety::slower});
    ASSERT_TRUE(fixed);
    EXPECT_EQ(member(*fixed, r.key), r.value);
    EXPECT_NO_THROW(run(*fixed, s.steps));
  }
}

TEST(TorchAttention, OutputChangingFixesNeedConsent) {
  const std::vector<Remedy> remedies = {
      {"half_on_cpu", "dtype", "float32"},
      {"kv_heads_not_dividing_heads", "num_kv_heads", "8"},  // attention context
      {"kv_heads_above_heads", "num_kv_heads", "8"},
  };
  for (const Remedy& r : remedies) {
    SCOPED_TRACE(r.scenario);
    const Scenario& s = scenario(r.scenario);
    EXPECT_FALSE(remedied(s, {errshim::Safety::safe, errshim::Safety::slower}));
    const std::optional<AttentionConfig> fixed =
        remedied(s, {errshim::Safety::safe, errshim::Safety::slower, errshim::Safety::changes_output});
    ASSERT_TRUE(fixed);
    EXPECT_EQ(member(*fixed, r.key), r.value);
    EXPECT_NO_THROW(run(*fixed, s.steps));
  }
}

TEST(TorchAttention, NoConfigFixWhenTheMessageCannotTellTheValue) {
  // Which num_heads would divide embed_dim, or how large a cache should be, is
  // for a person to decide: those entries carry advice, not a fix.
  for (const char* name : {"embed_dim_not_divisible_by_heads", "rope_table_exhausted", "static_cache_too_large",
                           "dynamic_cache_head_dim", "static_cache_batch"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(remedied(scenario(name), {errshim::Safety::safe, errshim::Safety::slower,
                                           errshim::Safety::changes_output, errshim::Safety::manual}));
  }
}

TEST(TorchAttention, UnknownErrorsPassThroughUnchanged) {
  AttentionConfig c;
  c.num_heads = 0;  // the block's own guard against dividing by zero, not a libtorch error
  EXPECT_THROW(errshim::guard([&] { run(c, kPromptThenDecode); }, catalog()), std::invalid_argument);
}

TEST(TorchAttention, EmbeddedCatalogKnowsTheLibtorchEntries) {
  const errshim::CatalogPtr embedded = errshim::Catalog::embedded();
  for (const auto& entry : catalog().entries()) EXPECT_NE(embedded->find(entry->id), nullptr) << entry->id;
  const Scenario& s = scenario("static_cache_full");
  try {
    errshim::guard([&] { run(configured(s), s.steps); });  // the embedded catalog
    ADD_FAILURE() << "no error";
  } catch (const errshim::translated_error& e) {
    EXPECT_EQ(e.id(), s.id);
  }
}

}  // namespace
