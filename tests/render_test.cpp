// Golden tests of the rendered forms: the whole text, byte for byte.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <errshim/errshim.hpp>
#include <errshim/render.hpp>

#include "test_catalogs.hpp"
#include "render_internal.hpp"

namespace errshim {
namespace {

CatalogPtr sdpa_catalog() {
  static const CatalogPtr c = testing::catalog_from(
      testing::file_yaml("  - id: lib.sdpa.head_dim\n"
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
            "    [0] Use manual attention.\n"
            "        fix: action fallback-manual-attention (safe)\n"
            "    [1] Switch \"dtype\" to f16.\n"
            "        fix: set dtype=\"f16\", set use_cache=false (changes-output)\n");
}

TEST(Render, JsonFormGolden) {
  EXPECT_EQ(
      to_json(sample()),
      R"({"matched": true, "id": "lib.sdpa.head_dim", )"
      R"("source": {"repo": "example/repo", "path": "src/ops.rs", "line": 1098, )"
      R"("commit": "0123456789abcdef0123456789abcdef01234567", "symbol": "Sdpa::fwd", )"
      R"("url": "https://github.com/example/repo/blob/0123456789abcdef0123456789abcdef01234567/src/ops.rs#L1098"}, )"
      R"("also_at": [], "library": "test", "error_class": "candle::Error::Msg", "kind": "unsupported-feature", )"
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

// Prose as catalog YAML holds it: a literal block with hard line breaks.
CatalogPtr prose_catalog() {
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(
      "  - id: lib.cache.too_long\n"
      "    template: 'sequence length {n} exceeds cache {max}'\n"
      "    source: {path: src/cache.rs, line: 42}\n"
      "    also_at:\n"
      "      - {path: src/a.rs, line: 1}\n"
      "      - {path: src/b.rs, line: 2}\n"
      "      - {path: src/c.rs, line: 3}\n"
      "    error_class: candle::Error::Msg\n"
      "    kind: resource\n"
      "    cause: |-\n"
      "      The cache was sized at build time (e.g. from\n"
      "      `max_seq_len`) and the sequence outgrew it. It does not grow.\n"
      "\n"
      "      A second paragraph:\n"
      "      - one item\n"
      "      - another item\n"
      "    trigger: Long prompts.\n"
      "    remediation:\n"
      "      - text: Raise the limit.\n"
      "        fix: {set: {max_seq_len: 8192}, safety: slower, reason: more memory}\n"
      "    examples: {match: ['sequence length 9000 exceeds cache 4096', 'sequence length 1 exceeds cache 0',\n"
      "               'sequence length 2 exceeds cache 0', 'sequence length 3 exceeds cache 0']}\n"));
  return c;
}

TEST(Render, FoldProseJoinsLinesAndKeepsParagraphsAndListItems) {
  EXPECT_EQ(fold_prose(prose_catalog()->entries()[0]->cause),
            "The cache was sized at build time (e.g. from `max_seq_len`) and the sequence outgrew it. It does not "
            "grow.\n\nA second paragraph:\n- one item\n- another item");
  EXPECT_EQ(fold_prose("one\n  indented code\nback"), "one\n  indented code back");
}

TEST(Render, FirstSentenceSkipsAbbreviationsAndCode) {
  EXPECT_EQ(first_sentence(prose_catalog()->entries()[0]->cause),
            "The cache was sized at build time (e.g. from `max_seq_len`) and the sequence outgrew it.");
  EXPECT_EQ(first_sentence("Calls `x. y` first. Then"), "Calls `x. y` first.");
  EXPECT_EQ(first_sentence("No end here\n\nNext paragraph."), "No end here");
}

TEST(Render, SourceUrlPointsAtThePinnedLine) {
  SourcePin p{"huggingface/candle", "candle-nn/src/ops.rs", 1098, "2a13b0f", "Sdpa::fwd"};
  EXPECT_EQ(source_url(p), "https://github.com/huggingface/candle/blob/2a13b0f/candle-nn/src/ops.rs#L1098");
  p.line = 0;
  p.commit.clear();
  EXPECT_EQ(source_url(p), "https://github.com/huggingface/candle/blob/HEAD/candle-nn/src/ops.rs");
}

Diagnosis prose_sample() { return *prose_catalog()->diagnose("sequence length 9000 exceeds cache 4096"); }

TEST(Render, JsonListsEveryPinAndTheOneTheMessageStates) {
  const auto d = prose_catalog()->diagnose(
      "sequence length 9000 exceeds cache 4096\nException raised from grow at ../src/b.rs:2 (most recent call first):");
  ASSERT_TRUE(d);
  const std::string j = to_json(*d);
  EXPECT_NE(j.find(R"("also_at": [{"repo": "example/repo", "path": "src/a.rs", "line": 1, )"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("path": "src/c.rs", "line": 3, )"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("raised_at": {"library": "libtorch", "path": "../src/b.rs", "line": 2, "function": "grow", )"
                   R"("form": "c10"}, )"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("site": {"pin": {"repo": "example/repo", "path": "src/b.rs", "line": 2, )"), std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("fit": "line"})"), std::string::npos) << j;
  // Nothing stated: neither field.
  const std::string plain = to_json(prose_sample());
  EXPECT_EQ(plain.find("\"raised_at\""), std::string::npos);
  EXPECT_EQ(plain.find("\"site\""), std::string::npos);
}

TEST(Render, PersonTextWrapsToTheWidthAndFoldsLongLists) {
  TextOptions o;
  o.width = 40;
  const std::string t = to_text(prose_sample(), o);
  std::size_t widest = 0;
  for (std::size_t start = 0, end; start < t.size(); start = end + 1) {
    end = t.find('\n', start);
    const std::string line = t.substr(start, end - start);
    if (line.find("https://") == std::string::npos) widest = std::max(widest, line.size());
  }
  EXPECT_LE(widest, 40u) << t;
  EXPECT_EQ(t.rfind("error: lib.cache.too_long [resource]\n", 0), 0u) << t;
  EXPECT_NE(t.find("also raised at 3 other places"), std::string::npos) << t;
  EXPECT_EQ(t.find("src/b.rs"), std::string::npos) << t;
  EXPECT_NE(t.find("\n  [0] Raise the limit.\n      fix: set max_seq_len=8192 (slower:"), std::string::npos) << t;
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << t;
  o.verbose = true;
  EXPECT_NE(to_text(prose_sample(), o).find("also at example/repo src/b.rs:2"), std::string::npos);
}

TEST(Render, ColourHighlightsCapturesAndLinksThePin) {
  TextOptions o;
  o.color = true;
  const std::string t = to_text(prose_sample(), o);
  EXPECT_NE(t.find("sequence length \x1b[1;33m9000\x1b[0m exceeds cache \x1b[1;33m4096\x1b[0m"), std::string::npos)
      << t;
  EXPECT_NE(
      t.find("\x1b]8;;https://github.com/example/repo/blob/0123456789abcdef0123456789abcdef01234567/src/cache.rs#L42"
             "\x1b\\\x1b[1msrc/cache.rs:42\x1b[0m\x1b]8;;\x1b\\"),
      std::string::npos)
      << t;
}

TEST(Render, MessageControlCharactersAreEscaped) {
  // normalize() already drops them; the renderer does not rely on it.
  Diagnosis d = prose_sample();
  d.segment += " \x1b]0;owned\x07";
  const std::string t = to_text(d, TextOptions{});
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << t;
  EXPECT_NE(t.find("\\x1B]0;owned\\x07"), std::string::npos) << t;
}

TEST(Render, EntryTextShowsExamplesBehindACount) {
  const std::string t = to_text(*prose_catalog()->entries()[0], TextOptions{});
  EXPECT_NE(t.find("message:  sequence length {n} exceeds cache {max}"), std::string::npos) << t;
  EXPECT_NE(t.find("  - sequence length 9000 exceeds cache 4096\n"), std::string::npos) << t;
  EXPECT_NE(t.find("... and 1 more (--verbose shows them)"), std::string::npos) << t;
}

TEST(Render, JsonFoldsProse) {
  const std::string j = to_json(prose_sample());
  EXPECT_NE(j.find(R"("cause": "The cache was sized at build time (e.g. from `max_seq_len`) and the sequence outgrew )"
                   R"(it. It does not grow.\n\nA second paragraph:\n- one item\n- another item")"),
            std::string::npos)
      << j;
}

}  // namespace
}  // namespace errshim
