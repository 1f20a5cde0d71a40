// Golden tests of the rendered forms: the whole text, byte for byte.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <errshim/errshim.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

CatalogPtr sdpa_catalog() {
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(
      "  - id: lib.sdpa.head_dim\n"
      "    template: 'bad head dim {q_head}: q dims {:?}'\n"
      "    captures: [q_dims]\n"
      "    source: {path: src/ops.rs, line: 1098, symbol: Sdpa::fwd}\n"
      "    error_class: candle::Error::Msg\n"
      "    kind: unsupported-feature\n"
      "    cause: The kernel has no variant for this head size.\n"
      "    trigger: A model whose head dim the kernel lacks.\n"
      "    remediation:\n"
      "      - text: Use manual attention.\n"
      "        fix: {action: fallback-manual-attention, safety: safe, reason: same math}\n"
      "      - text: Switch \"dtype\" to f16.\n"
      "        fix: {set: {dtype: f16, use_cache: false}, safety: changes-output}\n"
      "    examples: {match: ['bad head dim 48: q dims [1, 2]']}\n"));
  return c;
}

Diagnosis sample() { return *sdpa_catalog()->diagnose("Error: bad head dim 48: q dims [1, 2]"); }

TEST(Render, TextFormGolden) {
  EXPECT_EQ(to_text(sample()),
            "lib.sdpa.head_dim  [unsupported-feature, error]\n"
            "  message:  bad head dim 48: q dims [1, 2]\n"
            "  source:   example/repo src/ops.rs:1098 @0123456789ab in Sdpa::fwd\n"
            "  captured: q_head=48, q_dims=[1, 2]\n"
            "  cause:    The kernel has no variant for this head size.\n"
            "  trigger:  A model whose head dim the kernel lacks.\n"
            "  remediation (most likely first):\n"
            "    1. Use manual attention.\n"
            "       fix: action fallback-manual-attention (safe)\n"
            "    2. Switch \"dtype\" to f16.\n"
            "       fix: set dtype=\"f16\", set use_cache=false (changes-output)\n");
}

TEST(Render, JsonFormGolden) {
  EXPECT_EQ(to_json(sample()),
            R"({"matched": true, "id": "lib.sdpa.head_dim", )"
            R"("source": {"repo": "example/repo", "path": "src/ops.rs", "line": 1098, )"
            R"("commit": "0123456789abcdef0123456789abcdef01234567", "symbol": "Sdpa::fwd", )"
            R"("url": "https://github.com/example/repo/blob/0123456789abcdef0123456789abcdef01234567/src/ops.rs#L1098"}, )"
            R"("library": "test", "error_class": "candle::Error::Msg", "kind": "unsupported-feature", )"
            R"("severity": "error", "cause": "The kernel has no variant for this head size.", )"
            R"("trigger": "A model whose head dim the kernel lacks.", "remediation": [)"
            R"({"step": 0, "text": "Use manual attention.", "fix": {"action": "fallback-manual-attention", "safety": "safe", )"
            R"("reason": "same math"}}, {"step": 1, "text": "Switch \"dtype\" to f16.", "fix": {"set": {"dtype": "f16", )"
            R"("use_cache": false}, "safety": "changes-output"}}], )"
            R"("captures": {"q_head": "48", "q_dims": "[1, 2]"}, )"
            R"("message": "bad head dim 48: q dims [1, 2]", "exception_class": ""})");
}

TEST(Render, FmtFormattersGiveTextAndJson) {
  const Diagnosis d = sample();
  EXPECT_EQ(fmt::format("{}", d), to_text(d));
  EXPECT_EQ(fmt::format("{:j}", d), to_json(d));
  try {
    try {
      throw std::runtime_error("bad head dim 48: q dims [1, 2]");
    } catch (...) {
      rethrow_translated(*sdpa_catalog());
    }
  } catch (const translated_error& e) {
    EXPECT_EQ(fmt::format("{}", e), to_text(e.diagnosis()));
    EXPECT_EQ(fmt::format("{:j}", e), to_json(e.diagnosis()));
  }
}

TEST(Render, UnmatchedJson) { EXPECT_EQ(unmatched_json(), R"({"matched": false})"); }

TEST(JsonQuote, EscapesControlsAndReplacesInvalidUtf8) {
  EXPECT_EQ(json_quote("a\"b\\c\n\t\x01"), R"("a\"b\\c\n\t\u0001")");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");        // valid UTF-8 kept
  EXPECT_EQ(json_quote("bad\xff!"), "\"bad\xEF\xBF\xBD!\"");       // invalid byte -> U+FFFD
  EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");  // surrogate rejected
}

}  // namespace
}  // namespace errshim
