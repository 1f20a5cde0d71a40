// Where a message says it was raised: reading the forms, fitting them to
// pins, and the matcher's tie-break between entries that match equally.
#include <gtest/gtest.h>

#include <string>

#include <errshim/catalog.hpp>
#include <errshim/raise_site.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

struct StatedCase {
  const char* name;
  const char* message;
  const char* library;  // of the first stated site; "" = none stated
  const char* path;
  int line;
  const char* function;
  const char* form;
};

class StatedSites : public ::testing::TestWithParam<StatedCase> {};

TEST_P(StatedSites, ReadsTheFirstSiteTheMessageStates) {
  const StatedCase& c = GetParam();
  const std::vector<StatedSite> sites = stated_sites(c.message);
  if (*c.library == '\0') {
    EXPECT_TRUE(sites.empty()) << sites.front().path;
    return;
  }
  ASSERT_FALSE(sites.empty());
  EXPECT_EQ(sites[0].library, c.library);
  EXPECT_EQ(sites[0].path, c.path);
  EXPECT_EQ(sites[0].line, c.line);
  EXPECT_EQ(sites[0].function, c.function);
  EXPECT_EQ(sites[0].form, c.form);
}

const StatedCase kStated[] = {
    {"c10_what",
     "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 "
     "in the list.\nException raised from check_cat_shape_except_dim at "
     "../aten/src/ATen/native/TensorShape.cpp:89 (most recent call first):\nframe #0: c10::Error::Error",
     "libtorch", "../aten/src/ATen/native/TensorShape.cpp", 89, "check_cat_shape_except_dim", "c10"},
    {"c10_behind_rank_prefix",
     "[rank0]: Exception raised from operator() at ./build/aten/src/ATen/RegisterCPU.cpp:31034 (most recent call "
     "first):",
     "libtorch", "./build/aten/src/ATen/RegisterCPU.cpp", 31034, "operator()", "c10"},
    {"torch_warning",
     "UserWarning: Memory efficient kernel not used because: (Triggered internally at  "
     "../aten/src/ATen/native/transformers/cuda/sdp_utils.h:527.)",
     "libtorch", "../aten/src/ATen/native/transformers/cuda/sdp_utils.h", 527, "", "warning"},
    {"caffe2_enforce",
     "RuntimeError: [enforce fail at inline_container.cc:145] . PytorchStreamReader failed reading zip archive: "
     "failed finding central directory",
     "libtorch", "inline_container.cc", 145, "", "enforce"},
    {"windows_c10_path",
     "Exception raised from at::native::x at C:\\actions-runner\\pytorch\\aten\\src\\ATen\\native\\Foo.cpp:12 "
     "(most recent call first):",
     "libtorch", "C:\\actions-runner\\pytorch\\aten\\src\\ATen\\native\\Foo.cpp", 12, "at::native::x", "c10"},
    {"innermost_transformers_frame",
     "Traceback (most recent call last):\n"
     "  File \"/home/u/app.py\", line 9, in <module>\n    model.generate(**inputs)\n"
     "  File \"/usr/lib/python3/site-packages/transformers/generation/utils.py\", line 1500, in generate\n"
     "    self._validate_model_kwargs(model_kwargs.copy())\n"
     "  File \"/usr/lib/python3/site-packages/transformers/generation/utils.py\", line 1134, in "
     "_validate_model_kwargs\n    raise ValueError(\n"
     "ValueError: The following `model_kwargs` are not used by the model: ['foo']",
     "transformers", "transformers/generation/utils.py", 1134, "_validate_model_kwargs", "python-frame"},
    {"torch_python_frame",
     "Traceback (most recent call last):\n  File \"x.py\", line 2, in <module>\n"
     "  File \"/usr/lib/python3/dist-packages/torch/nn/functional.py\", line 5030, in multi_head_attention_forward\n"
     "    assert embed_dim == embed_dim_to_check\nAssertionError: was expecting embedding dimension of 8, but got 4",
     "torch", "torch/nn/functional.py", 5030, "multi_head_attention_forward", "python-frame"},
    {"rust_frame_with_location",
     "Error: shape mismatch\nStack backtrace:\n   0: candle_core::error::Error::bt\n"
     "             at "
     "/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/candle-core-0.8.0/src/error.rs:246:25\n"
     "   1: candle_core::tensor::Tensor::matmul\n"
     "             at "
     "/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/candle-core-0.8.0/src/tensor.rs:1200:17\n",
     "candle", "candle-core/src/tensor.rs", 1200, "candle_core::tensor::Tensor::matmul", "rust-frame"},
    {"rust_frame_without_location",
     "Error: bad\nStack backtrace:\n   0: anyhow::error::x\n   1: "
     "candle_transformers::models::glm4::SelfAttention::forward\n",
     "candle", "candle-transformers/src/models/glm4/SelfAttention/forward", 0,
     "candle_transformers::models::glm4::SelfAttention::forward", "rust-frame"},
    {"application_frames_only",
     "Traceback (most recent call last):\n  File \"/srv/app/main.py\", line 3, in <module>\nValueError: nope", "", "",
     0, "", ""},
    {"no_location", "kv_cache_enabled=true is not supported", "", "", 0, "", ""},
    {"location_without_line", "Exception raised from f at ../aten/src/x.cpp (most recent call first):", "", "", 0, "",
     ""},
};

INSTANTIATE_TEST_SUITE_P(Forms, StatedSites, ::testing::ValuesIn(kStated),
                         [](const auto& info) { return std::string(info.param.name); });

struct FitCase {
  const char* name;
  const char* pin_path;
  int pin_line;
  const char* stated_path;
  int stated_line;
  const char* form;
  SiteFit want;
};

class SiteFits : public ::testing::TestWithParam<FitCase> {};

TEST_P(SiteFits, ComparesPathSuffixAtADirectoryAndTheLine) {
  const FitCase& c = GetParam();
  SourcePin pin;
  pin.path = c.pin_path;
  pin.line = c.pin_line;
  const StatedSite site{"x", c.stated_path, c.stated_line, "", c.form};
  EXPECT_EQ(site_fit(pin, site), c.want);
}

const FitCase kFits[] = {
    {"relative_torch_path", "aten/src/ATen/native/TensorShape.cpp", 89, "../aten/src/ATen/native/TensorShape.cpp", 89,
     "c10", SiteFit::line},
    {"other_line", "aten/src/ATen/native/TensorShape.cpp", 90, "../aten/src/ATen/native/TensorShape.cpp", 89, "c10",
     SiteFit::file},
    {"generated_file", "aten/src/ATen/RegisterCPU.cpp", 7, "./build/aten/src/ATen/RegisterCPU.cpp", 7, "c10",
     SiteFit::line},
    {"suffix_inside_a_name_is_no_fit", "native/TensorShape.cpp", 89, "../aten/src/ATen/native/MyTensorShape.cpp", 89,
     "c10", SiteFit::none},
    {"transformers_src_layout", "src/transformers/generation/utils.py", 1134, "transformers/generation/utils.py", 1134,
     "python-frame", SiteFit::line},
    {"windows_path", "aten/src/ATen/native/Foo.cpp", 12,
     "C:\\actions-runner\\pytorch\\aten\\src\\ATen\\native\\Foo.cpp", 12, "c10", SiteFit::line},
    {"basename_only", "caffe2/serialize/inline_container.cc", 145, "inline_container.cc", 145, "enforce",
     SiteFit::line},
    {"rust_module_path", "candle-transformers/src/models/glm4.rs", 300,
     "candle-transformers/src/models/glm4/SelfAttention/forward", 0, "rust-frame", SiteFit::file},
    {"rust_mod_rs", "candle-nn/src/ops/mod.rs", 1, "candle-nn/src/ops/softmax", 0, "rust-frame", SiteFit::file},
    {"rust_other_module", "candle-nn/src/ops.rs", 1, "candle-nn/src/opsx/softmax", 0, "rust-frame", SiteFit::none},
    {"rust_crate_root_alone_is_no_fit", "candle-core/src/lib.rs", 1, "candle-core/src", 0, "rust-frame", SiteFit::none},
};

INSTANTIATE_TEST_SUITE_P(Pins, SiteFits, ::testing::ValuesIn(kFits),
                         [](const auto& info) { return std::string(info.param.name); });

// Two entries with the same text (and so the same specificity), raised in
// two files; a third raised in two places under one entry.
std::string two_sites_yaml() {
  auto entry = [](const std::string& id, const std::string& tmpl, const std::string& source) {
    return "  - id: " + id + "\n    template: '" + tmpl + "'\n    source: " + source +
           "\n    error_class: c10::Error\n    kind: validation\n    cause: c\n    trigger: t\n"
           "    remediation:\n      - text: r\n    examples:\n      match: ['" +
           tmpl + "']\n";
  };
  return testing::file_yaml(
      entry("test.a", "expected a square matrix of size {n}", "{path: aten/src/ATen/native/A.cpp, line: 10}") +
      entry("test.b", "expected a square matrix of size {n}", "{path: aten/src/ATen/native/B.cpp, line: 20}") +
      entry("test.c", "index {i} is out of bounds",
            "{path: aten/src/ATen/native/C.cpp, line: 5}\n    also_at:\n      - {path: aten/src/ATen/native/D.cpp, "
            "line: 7}"));
}

TEST(RaiseSite, StatedLocationBreaksATieBetweenEntries) {
  const CatalogPtr catalog = testing::catalog_from(two_sites_yaml());
  const std::string tail = " (most recent call first):\nframe #0: c10::Error::Error()";
  const MatchResult at_b = catalog->match(
      "expected a square matrix of size 3\nException raised from f at ../aten/src/ATen/native/B.cpp:20" + tail);
  ASSERT_TRUE(at_b.diagnosis);
  EXPECT_EQ(at_b.diagnosis->id(), "test.b");
  const MatchResult at_a = catalog->match(
      "expected a square matrix of size 3\nException raised from f at ../aten/src/ATen/native/A.cpp:99" + tail);
  ASSERT_TRUE(at_a.diagnosis);
  EXPECT_EQ(at_a.diagnosis->id(), "test.a");
  // Nothing stated: the id decides, as before.
  const MatchResult none = catalog->match("expected a square matrix of size 3");
  ASSERT_TRUE(none.diagnosis);
  EXPECT_EQ(none.diagnosis->id(), "test.a");
}

TEST(RaiseSite, ResolvePicksThePinTheMessageStates) {
  const CatalogPtr catalog = testing::catalog_from(two_sites_yaml());
  const MatchResult r = catalog->match(
      "index 9 is out of bounds\nException raised from g at ../aten/src/ATen/native/D.cpp:7 (most recent call first):");
  ASSERT_TRUE(r.diagnosis);
  const SiteResolution site = resolve_site(*r.diagnosis);
  ASSERT_NE(site.pin, nullptr);
  EXPECT_EQ(site.pin->path, "aten/src/ATen/native/D.cpp");
  EXPECT_EQ(site.fit, SiteFit::line);
  ASSERT_EQ(site.stated.size(), 1u);
  EXPECT_EQ(site.stated[0].function, "g");
}

TEST(RaiseSite, ALocationNoPinHoldsIsStillReported) {
  const CatalogPtr catalog = testing::catalog_from(two_sites_yaml());
  const MatchResult r = catalog->match(
      "index 9 is out of bounds\nException raised from h at ../aten/src/ATen/native/E.cpp:1 (most recent call first):");
  ASSERT_TRUE(r.diagnosis);
  const SiteResolution site = resolve_site(*r.diagnosis);
  EXPECT_EQ(site.pin, nullptr);
  EXPECT_EQ(site.fit, SiteFit::none);
  ASSERT_EQ(site.stated.size(), 1u);
  EXPECT_EQ(site.stated[0].path, "../aten/src/ATen/native/E.cpp");
  EXPECT_EQ(site.stated[0].line, 1);
}

TEST(RaiseSite, ReadsAtMostAFewSites) {
  std::string many;
  for (int i = 0; i < 100; ++i)
    many += "Exception raised from f at ../a/x" + std::to_string(i) + ".cpp:1 (most recent call first):\n";
  EXPECT_LE(stated_sites(many).size(), 8u);
}

}  // namespace
}  // namespace errshim
