// Auto-remediation: which fix is chosen under which policy, what happens to
// the config, and what the caller gets back or sees thrown.
#include <gtest/gtest.h>

#include <stdexcept>

#include <errshim/errshim.hpp>
#include <errshim/metrics.hpp>
#include <errshim/preflight.hpp>

#include "test_catalogs.hpp"
#include "remediation_internal.hpp"

namespace errshim {
namespace {

// A catalog with one entry per behaviour under test. Steps are ordered as the
// catalog would order them; the build functions below raise the messages.
CatalogPtr catalog() {
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(R"(  - id: t.kv
    template: kv_cache_enabled=true is not supported
    source: {path: metavoice.rs, line: 449}
    error_class: candle::Error::Msg
    kind: unsupported-feature
    cause: c
    trigger: t
    remediation:
      - text: turn the cache off
        fix: {set: {kv_cache_enabled: false}, safety: slower, reason: 'same output, slower'}
      - text: rebuild candle with the cache path
    examples: {match: [kv_cache_enabled=true is not supported]}
    preflight: {kv_cache_enabled: true}
  - id: t.quant
    template: does not support the quantized cache
    source: {path: utils.py, line: 2003}
    error_class: ValueError
    kind: unsupported-feature
    cause: c
    trigger: t
    remediation:
      - text: use the dynamic cache
        fix: {set: {cache_implementation: dynamic}, safety: safe}
      - text: offload
        fix: {set: {cache_implementation: offloaded}, safety: slower}
    examples: {match: [does not support the quantized cache]}
    preflight:
      - {cache_implementation: quantized, is_encoder_decoder: true}
      - {cache_implementation: quantized, model: 'whisper|t5'}
  - id: t.repeat
    template: only kv-repeat = 1 is supported
    source: {path: mimi.rs, line: 151}
    error_class: candle::Error::Msg
    kind: unsupported-feature
    cause: c
    trigger: t
    remediation:
      - text: set kv_repeat to 1
        fix: {set: {kv_repeat: 1}, safety: changes-output, reason: other KV layout}
    examples: {match: [only kv-repeat = 1 is supported]}
  - id: t.flash
    template: flash attention needs fp16 cache, got {dtype}
    source: {path: attn.py, line: 10}
    error_class: ValueError
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: turn flash attention off (and the quantized KV cache type with it)
        fix:
          set: {use_flash_attn: false}
          requires: {kv_cache_dtype: auto}
          conflicts: {strict_kernels: true}
          create: [kv_cache_dtype]
          safety: slower
      - text: fall back to manual attention
        fix: {action: fallback-manual-attention, safety: safe}
    examples: {match: ['flash attention needs fp16 cache, got int8']}
  - id: t.heads
    template: 'head count {heads} does not divide {:?}'
    captures: [kv]
    capture_patterns: {heads: '\d+'}
    source: {path: attn.rs, line: 1}
    error_class: E
    kind: validation
    cause: c
    trigger: t
    remediation:
      - text: use the head count from the message
        fix: {set: {num_kv_heads: '{heads}', kv_second: '{kv:dim0}'}, create: [kv_second], safety: changes-output}
    examples: {match: ['head count 8 does not divide [A, 3]']}
  - id: t.tag
    template: 'unknown model tag {tag} for revision {rev}'
    capture_patterns: {tag: '\w+', rev: '\w+'}
    source: {path: hub.py, line: 1}
    error_class: ValueError
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: use the tag the message names
        fix: {set: {model_tag: '{tag}', revision: '{rev}'}, create: true, safety: safe}
      - text: or fall back to the main tag
        fix: {set: {model_tag: main}, safety: safe}
    examples: {match: ['unknown model tag 123 for revision 7']}
  - id: t.where
    template: 'cannot write the cache at {where}'
    source: {path: cache.py, line: 1}
    error_class: ValueError
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: use the place the message names (a loose capture, as an unlinted catalog may have)
        fix: {set: {cache_dir: '{where}'}, safety: safe}
      - text: or the default place
        fix: {set: {cache_dir: default}, safety: safe}
    examples: {match: ['cannot write the cache at /tmp/x']}
)"));
  return c;
}

struct layer_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool is_true(const ConfigAccess& c, const char* key) {
  auto v = c.get(parse_key_path(key));
  return v && v->text == "true";
}

// metavoice-like construction: fails while the cache is on.
std::string build_metavoice(const ConfigTree& c) {
  if (is_true(c, "kv_cache_enabled")) throw layer_error("Error: kv_cache_enabled=true is not supported");
  return "model";
}

TEST(Remediate, AppliesTheFirstAllowedFixToACopyAndRetries) {
  const ConfigTree cfg = ConfigTree::parse("n_head: 16\nkv_cache_enabled: true\n");
  auto r = remediate(cfg, build_metavoice, Policy{}, *catalog());
  EXPECT_EQ(r.value, "model");
  EXPECT_EQ(r.report.calls, 2);
  EXPECT_EQ(r.config.dump(), "n_head: 16\nkv_cache_enabled: false\n");
  EXPECT_EQ(cfg.dump(), "n_head: 16\nkv_cache_enabled: true\n");  // caller's config untouched
  const auto changes = r.report.applied_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(to_string(changes[0].path), "kv_cache_enabled");
  EXPECT_EQ(changes[0].before->text, "true");
  EXPECT_EQ(changes[0].after->text, "false");
  ASSERT_EQ(r.report.decisions.size(), 2u);
  EXPECT_EQ(r.report.decisions[0].outcome, Decision::Outcome::applied);
  EXPECT_EQ(r.report.decisions[1].outcome, Decision::Outcome::succeeded);
}

TEST(Remediate, SuccessOnFirstCallReportsNothing) {
  const ConfigTree cfg = ConfigTree::parse("kv_cache_enabled: false\n");
  auto r = remediate(cfg, build_metavoice, Policy{}, *catalog());
  EXPECT_EQ(r.report.calls, 1);
  EXPECT_TRUE(r.report.decisions.empty());
}

TEST(Remediate, FindsNestedKeys) {
  const ConfigTree cfg = ConfigTree::parse(R"({"generation_config": {"cache_implementation": "quantized"}})");
  auto r = remediate(
      cfg,
      [](const ConfigTree& c) {
        if (c.get({"generation_config", "cache_implementation"})->text == "quantized")
          throw layer_error("ValueError: This model does not support the quantized cache.");
        return 1;
      },
      Policy{}, *catalog());
  EXPECT_EQ(r.config.get({"generation_config", "cache_implementation"})->text, "dynamic");
  EXPECT_EQ(r.config.format(), ConfigTree::Format::json);
}

TEST(Remediate, AmbiguousKeyIsRefusedNotGuessed) {
  const ConfigTree cfg = ConfigTree::parse("kv_cache_enabled: true\nstage2:\n  kv_cache_enabled: true\n");
  try {
    remediate(cfg, build_metavoice, Policy{}, *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    ASSERT_FALSE(e.report().decisions.empty());
    const Decision& d = e.report().decisions.front();
    EXPECT_EQ(d.outcome, Decision::Outcome::refused);
    EXPECT_NE(d.reason.find("ambiguous"), std::string::npos) << d.reason;
    EXPECT_NE(d.reason.find("stage2.kv_cache_enabled"), std::string::npos) << d.reason;
  }
}

TEST(Remediate, ChangesOutputIsRefusedByDefaultAndAppliedWhenAllowed) {
  const ConfigTree cfg = ConfigTree::parse("kv_repeat: 2\n");
  auto build = [](const ConfigTree& c) {
    if (c.get({"kv_repeat"})->text != "1") throw layer_error("only kv-repeat = 1 is supported");
    return 0;
  };
  try {
    remediate(cfg, build, Policy{}, *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    EXPECT_EQ(e.id(), "t.repeat");
    EXPECT_NE(e.report().decisions.front().reason.find("'changes-output' is not allowed"), std::string::npos);
    EXPECT_THROW(std::rethrow_if_nested(e), layer_error);  // the original is inside
  }
  Policy p;
  p.allowed.insert(Safety::changes_output);
  EXPECT_EQ(remediate(cfg, build, p, *catalog()).config.get({"kv_repeat"})->text, "1");
}

TEST(Remediate, ManualStepsAreNeverApplied) {
  Policy p;
  p.allowed = {Safety::safe, Safety::slower, Safety::changes_output, Safety::manual};
  const Entry* e = catalog()->find("t.kv");
  ASSERT_FALSE(e->remediation[1].fix);  // text-only step: nothing to apply
  // A fix marked manual is refused even when the policy lists manual.
  auto cat = testing::catalog_from(
      testing::file_yaml(testing::entry_yaml("t.m", "boom")
                             .replace(testing::entry_yaml("t.m", "boom").find("      - text: r\n"), 16,
                                      "      - text: r\n        fix: {set: {x: 1}, safety: manual}\n")));
  const ConfigTree cfg = ConfigTree::parse("x: 0\n");
  try {
    remediate(
        cfg, [](const ConfigTree&) -> int { throw layer_error("boom"); }, p, *cat);
    FAIL();
  } catch (const remediation_error& err) {
    EXPECT_NE(err.report().decisions.front().reason.find("needs a person"), std::string::npos);
  }
}

TEST(Remediate, PinnedKeyIsNeverOverridden) {
  Policy p;
  p.pinned_keys = {"kv_cache_enabled"};
  try {
    remediate(ConfigTree::parse("kv_cache_enabled: true\n"), build_metavoice, p, *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    EXPECT_NE(e.report().decisions.front().reason.find("pinned"), std::string::npos);
  }
}

TEST(Remediate, DenyAndAllowListsOfEntriesAndKeys) {
  const ConfigTree cfg = ConfigTree::parse("kv_cache_enabled: true\n");
  Policy deny_entry;
  deny_entry.deny_entries = {"t.kv"};
  EXPECT_THROW(remediate(cfg, build_metavoice, deny_entry, *catalog()), remediation_error);
  Policy allow_other;
  allow_other.allow_entries = {"t.quant"};
  EXPECT_THROW(remediate(cfg, build_metavoice, allow_other, *catalog()), remediation_error);
  Policy deny_key;
  deny_key.deny_keys = {"kv_cache_enabled"};
  EXPECT_THROW(remediate(cfg, build_metavoice, deny_key, *catalog()), remediation_error);
  Policy allow_key;
  allow_key.allow_keys = {"kv_cache_enabled"};
  EXPECT_NO_THROW(remediate(cfg, build_metavoice, allow_key, *catalog()));
}

TEST(Remediate, ModesOffExplainSuggestAuto) {
  const ConfigTree cfg = ConfigTree::parse("kv_cache_enabled: true\n");
  Policy off;
  off.mode = Mode::off;
  EXPECT_THROW(remediate(cfg, build_metavoice, off, *catalog()), layer_error);  // untouched, same type

  Policy explain;
  explain.mode = Mode::explain;
  try {
    remediate(cfg, build_metavoice, explain, *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    EXPECT_EQ(e.id(), "t.kv");
    EXPECT_EQ(e.report().calls, 1);
    EXPECT_EQ(e.report().decisions.back().outcome, Decision::Outcome::explained);
  }

  Policy suggest;
  suggest.mode = Mode::suggest;
  try {
    remediate(cfg, build_metavoice, suggest, *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    EXPECT_EQ(e.report().calls, 1);  // nothing retried
    const Decision& d = e.report().decisions.back();
    EXPECT_EQ(d.outcome, Decision::Outcome::suggested);
    ASSERT_EQ(d.changes.size(), 1u);  // but the fix it would apply is reported
    EXPECT_EQ(d.changes[0].after->text, "false");
  }

  Policy per_entry;  // auto by default, explain for this entry
  per_entry.entry_modes["t.kv"] = Mode::explain;
  EXPECT_THROW(remediate(cfg, build_metavoice, per_entry, *catalog()), remediation_error);
}

TEST(Remediate, NeverTheSameFixTwiceAndStopsOnTheSameError) {
  // The build keeps failing with the same error whatever the config says.
  int calls = 0;
  auto stubborn = [&](const ConfigTree&) -> int {
    ++calls;
    throw layer_error("This model does not support the quantized cache.");
  };
  try {
    remediate(ConfigTree::parse("cache_implementation: quantized\n"), stubborn, Policy{}, *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    EXPECT_EQ(calls, 2);  // one fix, then the same error: stop
    EXPECT_EQ(e.report().decisions.back().outcome, Decision::Outcome::gave_up);
    EXPECT_NE(e.report().decisions.back().reason.find("same error came back"), std::string::npos);
    EXPECT_EQ(e.report().errors.size(), 2u);
  }
}

TEST(Remediate, RetryBoundIsHonoured) {
  // Each fix leads to the next error; with max_retries 1 the second stops it.
  auto chain = [](const ConfigTree& c) {
    if (is_true(c, "kv_cache_enabled")) throw layer_error("kv_cache_enabled=true is not supported");
    if (c.get({"cache_implementation"})->text == "quantized") throw layer_error("does not support the quantized cache");
    return 7;
  };
  const ConfigTree cfg = ConfigTree::parse("kv_cache_enabled: true\ncache_implementation: quantized\n");
  EXPECT_EQ(remediate(cfg, chain, Policy{}, *catalog()).report.calls, 3);
  Policy p;
  p.max_retries = 1;
  try {
    remediate(cfg, chain, p, *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    EXPECT_EQ(e.id(), "t.quant");
    EXPECT_NE(e.report().decisions.back().reason.find("retry bound (1)"), std::string::npos);
  }
}

TEST(Remediate, BundleAppliesWholeOrNotAtAll) {
  auto build = [](const ConfigTree& c) {
    if (is_true(c, "use_flash_attn")) throw layer_error("flash attention needs fp16 cache, got int8");
    return 1;
  };
  auto r = remediate(ConfigTree::parse("use_flash_attn: true\nkv_cache_dtype: int8\n"), build, Policy{}, *catalog());
  EXPECT_EQ(r.config.get({"kv_cache_dtype"})->text, "auto");  // the required change came along
  EXPECT_EQ(r.config.get({"use_flash_attn"})->text, "false");
}

TEST(ChooseFix, SkippedStepsAreNotChosenAndTheNextOneIs) {
  const Diagnosis d = *catalog()->diagnose("This model does not support the quantized cache.");
  ConfigTree first = ConfigTree::parse("cache_implementation: quantized\n");
  EXPECT_EQ(choose_fix(d, first, Policy{}).step, std::optional<std::size_t>(0));
  ConfigTree second = ConfigTree::parse("cache_implementation: quantized\n");
  const FixChoice skipped = choose_fix(d, second, Policy{}, {0});
  EXPECT_EQ(skipped.step, std::optional<std::size_t>(1));
  EXPECT_EQ(second.get({"cache_implementation"})->text, "offloaded");
  ConfigTree third = ConfigTree::parse("cache_implementation: quantized\n");
  EXPECT_FALSE(choose_fix(d, third, Policy{}, {0, 1}).step);
}

// The one JSON shape of a change: the audit record and the C API write it.
TEST(ChangeJson, CarriesWhetherTheKeyWasCreated) {
  Change c;
  c.path = {"generation_config", "cache_implementation"};
  c.after = Value{Value::Type::string, "dynamic"};
  c.created = true;
  EXPECT_EQ(to_json(c),
            "{\"path\": \"generation_config.cache_implementation\", \"before\": null, "
            "\"after\": \"dynamic\", \"created\": true}");
  EXPECT_EQ(to_json(std::vector<Change>{c, c}), "[" + to_json(c) + ", " + to_json(c) + "]");
}

TEST(Remediate, ConflictRefusesTheBundleAndTheNextStepIsTried) {
  ActionRegistry actions;
  int fallbacks = 0;
  actions.add("fallback-manual-attention", [&](ConfigAccess& c, const Diagnosis&) {
    ++fallbacks;
    c.set({"use_flash_attn"}, {Value::Type::boolean, "false"});
  });
  Policy p;
  p.actions = &actions;
  auto build = [](const ConfigTree& c) {
    if (is_true(c, "use_flash_attn")) throw layer_error("flash attention needs fp16 cache, got int8");
    return 1;
  };
  auto r = remediate(ConfigTree::parse("use_flash_attn: true\nstrict_kernels: true\nkv_cache_dtype: int8\n"), build, p,
                     *catalog());
  EXPECT_EQ(fallbacks, 1);
  EXPECT_EQ(r.config.get({"kv_cache_dtype"})->text, "int8");  // bundle not applied
  EXPECT_NE(r.report.decisions[0].reason.find("conflicts with strict_kernels = true"), std::string::npos);
  EXPECT_EQ(r.report.decisions[1].outcome, Decision::Outcome::applied);
}

TEST(Remediate, UnregisteredOrThrowingHostActionFailsTheStepCleanly) {
  ActionRegistry actions;
  actions.add("fallback-manual-attention", [](ConfigAccess& c, const Diagnosis&) {
    c.set({"half_done"}, {Value::Type::boolean, "true"});
    throw std::runtime_error("no manual kernel on this device");
  });
  Policy p;
  p.actions = &actions;
  const ConfigTree cfg = ConfigTree::parse("use_flash_attn: true\nstrict_kernels: true\n");
  try {
    remediate(
        cfg, [](const ConfigTree&) -> int { throw layer_error("flash attention needs fp16 cache, got int8"); }, p,
        *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    const auto& ds = e.report().decisions;
    ASSERT_GE(ds.size(), 2u);
    EXPECT_EQ(ds[1].outcome, Decision::Outcome::failed);
    EXPECT_NE(ds[1].reason.find("no manual kernel"), std::string::npos);
  }
  EXPECT_FALSE(cfg.get({"half_done"}));  // the caller's config never saw the half-made change
  Policy none;  // no registry at all
  try {
    remediate(
        cfg, [](const ConfigTree&) -> int { throw layer_error("flash attention needs fp16 cache, got int8"); }, none,
        *catalog());
  } catch (const remediation_error& e) {
    EXPECT_NE(e.report().decisions[1].reason.find("'fallback-manual-attention' is not registered"), std::string::npos);
  }
}

TEST(Remediate, UnknownErrorPassesThroughUnchanged) {
  EXPECT_THROW(remediate(
                   ConfigTree::parse("a: 1\n"), [](const ConfigTree&) -> int { throw std::out_of_range("x"); },
                   Policy{}, *catalog()),
               std::out_of_range);
}

TEST(Remediate, UnknownErrorAfterAFixKeepsTheHistory) {
  auto build = [](const ConfigTree& c) -> int {
    if (is_true(c, "kv_cache_enabled")) throw layer_error("kv_cache_enabled=true is not supported");
    throw std::out_of_range("weights file truncated");
  };
  try {
    remediate(ConfigTree::parse("kv_cache_enabled: true\n"), build, Policy{}, *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    EXPECT_EQ(e.report().calls, 2);
    EXPECT_THROW(std::rethrow_if_nested(e), std::out_of_range);  // the last error is inside
    EXPECT_THROW(std::rethrow_exception(e.report().errors.front()), layer_error);  // and the first one
    EXPECT_NE(std::string(e.what()).find("weights file truncated"), std::string::npos);
  }
}

TEST(Remediate, ValuesComputedFromCaptures) {
  Policy p;
  p.allowed.insert(Safety::changes_output);
  auto r = remediate(
      ConfigTree::parse("num_kv_heads: 3\n"),
      [](const ConfigTree& c) {
        if (c.get({"num_kv_heads"})->text == "3") throw layer_error("head count 8 does not divide [A, 3]");
        return 0;
      },
      p, *catalog());
  // num_kv_heads is a whole number by its validator; dim0 is one by its conversion.
  EXPECT_EQ(*r.config.get({"num_kv_heads"}), (Value{Value::Type::integer, "8"}));
  EXPECT_EQ(*r.config.get({"kv_second"}), (Value{Value::Type::integer, "3"}));
}

// A capture of digits is not a number because it looks like one: the key
// decides. (It used to become an integer for any key.)
TEST(Remediate, DigitsCapturedForATextKeyStayText) {
  ConfigTree scratch = ConfigTree::parse("model_tag: v1\nrevision: 2\n");
  const Diagnosis d = *catalog()->diagnose("unknown model tag 123 for revision 7");
  const FixChoice choice = choose_fix(d, scratch, Policy{});
  ASSERT_TRUE(choice.step);
  EXPECT_EQ(*scratch.get({"model_tag"}), (Value{Value::Type::string, "123"}));  // the config holds text there
  EXPECT_EQ(*scratch.get({"revision"}), (Value{Value::Type::integer, "7"}));  // and a number here
  ConfigTree fresh = ConfigTree::parse("other: 1\n");
  (void)choose_fix(d, fresh, Policy{});
  EXPECT_EQ(*fresh.get({"model_tag"}), (Value{Value::Type::string, "123"}));  // absent: text, as captured
}

// Step 1 refused for `reason`, and step 2 taken: a refused value never ends the search.
void expect_first_refused_then_second(const FixChoice& choice, const char* reason) {
  ASSERT_EQ(choice.decisions.size(), 2u);
  EXPECT_EQ(choice.decisions[0].outcome, Decision::Outcome::refused);
  EXPECT_NE(choice.decisions[0].reason.find(reason), std::string::npos) << choice.decisions[0].reason;
  ASSERT_TRUE(choice.step);
  EXPECT_EQ(*choice.step, 1u);
}

TEST(Remediate, CapturedTextThatDoesNotFitTheConfigTypeIsRefused) {
  ConfigTree scratch = ConfigTree::parse("model_tag: v1\nrevision: 2\n");
  const Diagnosis d = *catalog()->diagnose("unknown model tag abc for revision seven");
  expect_first_refused_then_second(choose_fix(d, scratch, Policy{}), "the config holds a number there");
  EXPECT_EQ(scratch.get({"model_tag"})->text, "main");
  EXPECT_EQ(scratch.get({"revision"})->text, "2");
}

// A catalog that was not linted may feed a loose capture to a fix: the
// captured text itself must then be spelled like a value.
TEST(Remediate, HostileCapturedTextIsRefusedWithAReasonAndTheNextStepTried) {
  ConfigTree scratch = ConfigTree::parse("cache_dir: here\n");
  const Diagnosis d = *catalog()->diagnose("cannot write the cache at https://evil.example/x.sh; rm -rf / #");
  expect_first_refused_then_second(choose_fix(d, scratch, Policy{}), "not spelled like a config value");
  EXPECT_EQ(scratch.get({"cache_dir"})->text, "default");
}

// The issue's case: a beam count of 2000000000 read from a message, through
// remediate(), which used to return that config as the one that worked.
TEST(Remediate, HugeBeamCountFromAMessageIsRefused) {
  const ConfigTree cfg = ConfigTree::parse("num_beams: 4\n");
  int calls = 0;
  try {
    remediate(
        cfg,
        [&](const ConfigTree& c) {
          ++calls;
          if (c.get({"num_beams"})->text == "4")
            throw layer_error(
                "ValueError: `num_return_sequences` (2000000000) has to be smaller or equal to `num_beams` (4).");
          return 0;
        },
        Policy{});
    FAIL() << "remediate() returned a config";
  } catch (const remediation_error& e) {
    EXPECT_TRUE(e.report().applied_changes().empty()) << e.report().to_json();
    bool reasoned = false;
    for (const Decision& x : e.report().decisions)
      reasoned =
          reasoned || (x.outcome == Decision::Outcome::refused && x.reason.find("[1, 256]") != std::string::npos);
    EXPECT_TRUE(reasoned) << e.report().to_json();
  }
  EXPECT_EQ(calls, 1);
}

// A count the message reports must be the config's own when the config
// holds that key: a different one is text about something else.
TEST(Remediate, CapturedCountThatContradictsTheConfigIsRefused) {
  const Diagnosis d =
      *Catalog::embedded()->diagnose("`num_return_sequences` (9) has to be smaller or equal to `num_beams` (4).");
  ConfigTree scratch = ConfigTree::parse("num_beams: 4\nnum_return_sequences: 8\n");
  const FixChoice choice = choose_fix(d, scratch, Policy{});
  EXPECT_FALSE(choice.step);
  ASSERT_FALSE(choice.decisions.empty());
  EXPECT_NE(choice.decisions[0].reason.find("the config holds num_return_sequences = 8"), std::string::npos)
      << choice.decisions[0].reason;
  ConfigTree agrees = ConfigTree::parse("num_beams: 4\nnum_return_sequences: 9\n");
  ASSERT_TRUE(choose_fix(d, agrees, Policy{}).step);
  EXPECT_EQ(*agrees.get({"num_beams"}), (Value{Value::Type::integer, "9"}));
}

TEST(Remediate, KvHeadCountMustDivideTheConfigsHeadCount) {
  Policy p;
  p.allowed.insert(Safety::changes_output);
  const Diagnosis d = *catalog()->diagnose("head count 6 does not divide [A, 3]");
  ConfigTree scratch = ConfigTree::parse("num_heads: 8\nnum_kv_heads: 3\n");
  const FixChoice choice = choose_fix(d, scratch, p);
  EXPECT_FALSE(choice.step);
  ASSERT_EQ(choice.decisions.size(), 1u);
  EXPECT_EQ(choice.decisions[0].outcome, Decision::Outcome::refused);
  EXPECT_NE(choice.decisions[0].reason.find("divides the config's num_heads (8)"), std::string::npos)
      << choice.decisions[0].reason;
}

// Text quoted or echoed inside the error is not the error: auto mode
// applies nothing for it; suggest mode still shows what it would do.
TEST(Remediate, AutoModeAppliesNothingForTextInsideTheMessage) {
  const Diagnosis d = *catalog()->diagnose("ValueError: the prompt was \"kv_cache_enabled=true is not supported\"");
  EXPECT_EQ(d.id(), "t.kv");
  EXPECT_FALSE(root_cause_problem(d).empty());
  ConfigTree scratch = ConfigTree::parse("kv_cache_enabled: true\n");
  const FixChoice choice = choose_fix(d, scratch, Policy{});
  EXPECT_FALSE(choice.step);
  ASSERT_EQ(choice.decisions.size(), 1u);
  EXPECT_EQ(choice.decisions[0].outcome, Decision::Outcome::refused);
  EXPECT_EQ(*choice.decisions[0].step, 0u);
  EXPECT_NE(choice.decisions[0].reason.find("quoted or echoed"), std::string::npos) << choice.decisions[0].reason;
  EXPECT_EQ(scratch.get({"kv_cache_enabled"})->text, "true");

  Policy suggest;
  suggest.mode = Mode::suggest;
  ConfigTree scratch2 = ConfigTree::parse("kv_cache_enabled: true\n");
  const FixChoice shown = choose_fix(d, scratch2, suggest);
  ASSERT_TRUE(shown.step);
  EXPECT_TRUE(shown.suggest_only);

  // The message's own words may lead in: that is still the root cause.
  const Diagnosis own = *catalog()->diagnose("ValueError: This model does not support the quantized cache.");
  EXPECT_EQ(root_cause_problem(own), "");
  const Diagnosis later = *catalog()->diagnose("ValueError: bad input\nkv_cache_enabled=true is not supported");
  EXPECT_NE(root_cause_problem(later).find("later line"), std::string::npos);
}

// A fix key that names no config path ("a..b"), in a Fix made in code (a
// catalog refuses it at load): that step is refused, the next one tried.
TEST(Remediate, UnusableFixKeyRefusesItsStepOnly) {
  auto e = std::make_shared<Entry>(*catalog()->find("t.kv"));
  Fix bad = *e->remediation[0].fix;
  bad.set = {{"generation..num_beams", Value{Value::Type::integer, "4"}}};
  e->remediation.insert(e->remediation.begin(), Remediation{"bad key", bad});
  Diagnosis d = *catalog()->diagnose("kv_cache_enabled=true is not supported");
  d.entry = e;
  ConfigTree scratch = ConfigTree::parse("kv_cache_enabled: true\n");
  FixChoice choice;
  ASSERT_NO_THROW(choice = choose_fix(d, scratch, Policy{}));
  ASSERT_GE(choice.decisions.size(), 2u);
  EXPECT_EQ(choice.decisions[0].outcome, Decision::Outcome::refused);
  EXPECT_NE(choice.decisions[0].reason.find("generation..num_beams"), std::string::npos);
  ASSERT_TRUE(choice.step);
  EXPECT_EQ(*choice.step, 1u);
  EXPECT_EQ(scratch.get({"kv_cache_enabled"})->text, "false");
}

TEST(ResolveValue, ConversionsAndErrors) {
  const Diagnosis d = *catalog()->diagnose("head count 8 does not divide [1, 32, 7]");
  EXPECT_EQ(resolve_value({Value::Type::string, "{kv:dim1}"}, d), (Value{Value::Type::integer, "32"}));
  EXPECT_EQ(resolve_value({Value::Type::string, "h={heads}"}, d), (Value{Value::Type::string, "h=8"}));
  EXPECT_EQ(resolve_value({Value::Type::string, "{heads}"}, d), (Value{Value::Type::string, "8"}));  // the key types it
  EXPECT_EQ(resolve_value({Value::Type::string, "{heads:int}"}, d), (Value{Value::Type::integer, "8"}));
  EXPECT_EQ(resolve_value({Value::Type::string, "{kv}"}, d), (Value{Value::Type::string, "[1, 32, 7]"}));
  EXPECT_EQ(resolve_value({Value::Type::string, "{{literal}}"}, d), (Value{Value::Type::string, "{literal}"}));
  EXPECT_EQ(resolve_value({Value::Type::boolean, "false"}, d), (Value{Value::Type::boolean, "false"}));
  EXPECT_THROW(resolve_value({Value::Type::string, "{nope}"}, d), config_error);
  EXPECT_THROW(resolve_value({Value::Type::string, "{kv:dim9}"}, d), config_error);
  EXPECT_THROW(resolve_value({Value::Type::string, "{kv:weird}"}, d), config_error);
}

struct MetavoiceConfig {
  bool kv_cache_enabled = true;
  int n_head = 16;
  std::string attn = "TorchAttn";
};

TEST(Remediate, TypedStructConfig) {
  auto bindings = std::make_shared<Bindings<MetavoiceConfig>>();
  bindings->bind("kv_cache_enabled", &MetavoiceConfig::kv_cache_enabled).bind("n_head", &MetavoiceConfig::n_head);
  const TypedConfig<MetavoiceConfig> cfg(MetavoiceConfig{}, bindings);
  auto r = remediate(
      cfg,
      [](const TypedConfig<MetavoiceConfig>& c) {
        if (c.value().kv_cache_enabled) throw layer_error("kv_cache_enabled=true is not supported");
        return c.value().n_head;
      },
      Policy{}, *catalog());
  EXPECT_EQ(r.value, 16);
  EXPECT_FALSE(r.config.value().kv_cache_enabled);
  EXPECT_TRUE(cfg.value().kv_cache_enabled);  // caller's struct untouched
}

TEST(Remediate, AuditCallbackAndMetrics) {
  Metrics metrics;
  std::vector<std::string> audit;
  Policy p;
  p.metrics = &metrics;
  p.on_decision = [&](const Decision& d) { audit.push_back(d.to_json()); };
  remediate(ConfigTree::parse("kv_cache_enabled: true\n"), build_metavoice, p, *catalog());
  ASSERT_EQ(audit.size(), 2u);
  for (const char* field :
       {"\"time\": \"", "\"attempt\": 1", "\"entry\": \"t.kv\"", "\"step\": 0",
        // the fix in the one shape a diagnosis writes it in (json.hpp)
        "\"fix\": {\"set\": {\"kv_cache_enabled\": false}, \"safety\": \"slower\", "
        "\"reason\": \"same output, slower\"}, \"safety\": \"slower\"",
        "\"mode\": \"auto\"", "\"outcome\": \"applied\"",
        "\"changes\": [{\"path\": \"kv_cache_enabled\", \"before\": true, \"after\": false, \"created\": false}]"})
    EXPECT_NE(audit[0].find(field), std::string::npos) << field << "\n" << audit[0];
  EXPECT_NE(audit[1].find("\"outcome\": \"succeeded\""), std::string::npos);
  EXPECT_EQ(metrics.value("t.kv", Decision::Outcome::applied), 1u);
  EXPECT_EQ(metrics.value("t.kv", Decision::Outcome::succeeded), 1u);
  const std::string prom = metrics.prometheus();
  EXPECT_NE(prom.find("# TYPE errshim_decisions_total counter\n"), std::string::npos);
  EXPECT_NE(prom.find("errshim_decisions_total{entry=\"t.kv\",outcome=\"applied\"} 1\n"), std::string::npos) << prom;
}

TEST(Remediate, ThrowingObserverDoesNotBreakRecovery) {
  Policy p;
  p.on_decision = [](const Decision&) { throw std::runtime_error("log sink down"); };
  EXPECT_EQ(remediate(ConfigTree::parse("kv_cache_enabled: true\n"), build_metavoice, p, *catalog()).value, "model");
}

TEST(Preflight, ReportsKnownErrorsAheadOnlyWhenTheConfigSaysSo) {
  const auto findings = check(ConfigTree::parse("kv_cache_enabled: true\n"), *catalog());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].entry->id, "t.kv");
  EXPECT_EQ(to_string(findings[0].because[0].first), "kv_cache_enabled");
  EXPECT_TRUE(check(ConfigTree::parse("kv_cache_enabled: false\n"), *catalog()).empty());
  EXPECT_TRUE(check(ConfigTree::parse("other: 1\n"), *catalog()).empty());  // absent key: cannot tell
}

TEST(Preflight, EncoderDecoderByConfigOrByModelName) {
  const ConfigTree enc =
      ConfigTree::parse(R"({"is_encoder_decoder": true, "generation_config": {"cache_implementation": "quantized"}})");
  ASSERT_EQ(check(enc, *catalog()).size(), 1u);
  const ConfigTree named = ConfigTree::parse("cache_implementation: quantized\n");
  EXPECT_TRUE(check(named, *catalog()).empty());
  EXPECT_EQ(check(named, *catalog(), Context::parse("model=openai/whisper-tiny")).size(), 1u);
  EXPECT_TRUE(check(named, *catalog(), Context::parse("model=meta-llama/Llama-3-8B")).empty());
}

// ---- config kinds, created keys, vocabularies ------------------------------------

namespace scope {

CatalogPtr kinds_catalog() {
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(R"(  - id: k.attn
    template: 'flash kernel missing'
    source: {path: modeling.py, line: 1}
    error_class: ImportError
    kind: missing-dependency
    cause: c
    trigger: t
    remediation:
      - text: sdpa
        fix: {set: {attn_implementation: sdpa}, config: [model-config, from-pretrained-kwargs], create: true, safety: safe}
    examples: {match: ['flash kernel missing']}
  - id: k.cache
    template: 'cache broken'
    source: {path: cache.py, line: 1}
    error_class: ValueError
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: dynamic, creating the key
        fix: {set: {cache_implementation: dynamic}, create: true, safety: safe}
    examples: {match: ['cache broken']}
  - id: k.nocreate
    template: 'kv cache on'
    source: {path: m.rs, line: 1}
    error_class: E
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: off, only where the key is
        fix: {set: {use_kv_cache: false}, safety: slower}
    examples: {match: ['kv cache on']}
  - id: k.dtype
    template: 'wanted {want} for the buffer'
    capture_patterns: {want: '\w+'}
    source: {path: b.cpp, line: 1}
    error_class: c10::Error
    kind: dtype-mismatch
    cause: c
    trigger: t
    remediation:
      - text: buffer in that dtype (a key whose name does not say it is a dtype)
        fix: {set: {buffer_kind: '{want}'}, vocabulary: {buffer_kind: dtype}, create: true, safety: safe}
    examples: {match: ['wanted Half for the buffer']}
)"));
  return c;
}

FixChoice choose(const char* message, ConfigAccess& config, const Policy& p = {}) {
  const auto d = kinds_catalog()->diagnose(message);
  EXPECT_TRUE(d) << message;
  return d ? choose_fix(*d, config, p) : FixChoice{};
}

TEST(RemediateScope, AFixForOtherConfigKindsIsRefusedWithTheKindNamed) {
  ConfigTree gen = ConfigTree::parse("{\"do_sample\": true}", "out/generation_config.json");
  EXPECT_EQ(gen.kind(), ConfigKind::generation_config);
  const FixChoice choice = choose("flash kernel missing", gen);
  EXPECT_FALSE(choice.step);
  ASSERT_EQ(choice.decisions.size(), 1u);
  EXPECT_EQ(choice.decisions[0].reason,
            "this fix applies to model-config, from-pretrained-kwargs configs, and this is a generation-config config");
  ConfigTree model = ConfigTree::parse("{\"model_type\": \"llama\"}");
  EXPECT_EQ(model.kind(), ConfigKind::model_config);
  EXPECT_TRUE(choose("flash kernel missing", model).step);
}

TEST(RemediateScope, TheCallersWordOnTheKindWinsOverTheConfigs) {
  ConfigTree kwargs = ConfigTree::parse("{\"max_new_tokens\": 8}");
  Policy p;
  p.context.values["config"] = "generate-kwargs";
  const FixChoice choice = choose("flash kernel missing", kwargs, p);
  EXPECT_FALSE(choice.step);
  p.context.values["config"] = "from-pretrained-kwargs";
  EXPECT_TRUE(choose("flash kernel missing", kwargs, p).step);
}

TEST(RemediateScope, ACreatedKeyIsAChangeOfItsOwnInTheRecord) {
  ConfigTree config = ConfigTree::parse("{\"model_type\": \"llama\"}");
  const FixChoice choice = choose("flash kernel missing", config);
  ASSERT_TRUE(choice.step);
  ASSERT_EQ(choice.changes.size(), 1u);
  EXPECT_TRUE(choice.changes[0].created);
  EXPECT_FALSE(choice.changes[0].before);
  EXPECT_NE(choice.decisions.back().to_json().find("\"after\": \"sdpa\", \"created\": true"), std::string::npos)
      << choice.decisions.back().to_json();
  ConfigTree has = ConfigTree::parse("{\"model_type\": \"llama\", \"attn_implementation\": \"eager\"}");
  const FixChoice again = choose("flash kernel missing", has);
  ASSERT_TRUE(again.step);
  EXPECT_FALSE(again.changes[0].created);
}

TEST(RemediateScope, AKeyIsCreatedOnlyWhereTheFixSaysSo) {
  ConfigTree lacks = ConfigTree::parse("model: {n_head: 8}\n");
  const FixChoice choice = choose("kv cache on", lacks);
  EXPECT_FALSE(choice.step);
  ASSERT_EQ(choice.decisions.size(), 1u);
  EXPECT_EQ(choice.decisions[0].outcome, Decision::Outcome::refused);
  EXPECT_EQ(choice.decisions[0].reason,
            "the config has no key 'use_kv_cache', and this fix changes only keys the config has (it does not say "
            "'create')");
  EXPECT_EQ(lacks.dump(), "model: {n_head: 8}\n");
  ConfigTree has = ConfigTree::parse("model: {n_head: 8, use_kv_cache: true}\n");
  ASSERT_TRUE(choose("kv cache on", has).step);
  EXPECT_EQ(has.dump(), "model: {n_head: 8, use_kv_cache: false}\n");
}

TEST(RemediateScope, AKindThatDoesNotReadTheKeyNeverGetsItCreated) {
  // cache_implementation is read by generate(), attn_implementation is not:
  // a fix that may create keys still creates none a generate() call ignores.
  ConfigTree gen = ConfigTree::parse("{\"_from_model_config\": true}");
  EXPECT_EQ(gen.kind(), ConfigKind::generation_config);
  ASSERT_TRUE(choose("cache broken", gen).step);
  EXPECT_EQ(gen.dump(), "{\"_from_model_config\": true, \"cache_implementation\": \"dynamic\"}");
}

TEST(RemediateScope, DeclaredVocabularyMapsAndAnUnknownValueIsRefused) {
  ConfigTree candle = ConfigTree::parse("dtype: bf16\n");
  candle.set_kind(ConfigKind::candle_config);
  ASSERT_TRUE(choose("wanted Half for the buffer", candle).step);
  EXPECT_EQ(candle.get({"buffer_kind"}), (Value{Value::Type::string, "f16"}));  // the spelling of dtype: bf16

  ConfigTree any = ConfigTree::parse("dtype: float32\n");
  const FixChoice choice = choose("wanted QUInt4x2 for the buffer", any);
  EXPECT_FALSE(choice.step);
  ASSERT_EQ(choice.decisions.size(), 1u);
  EXPECT_EQ(choice.decisions[0].reason,
            "value 'QUInt4x2' for 'buffer_kind' is refused: 'QUInt4x2' is not a dtype errshim knows (libtorch, torch, "
            "transformers or candle spelling); it is not written as the message spelled it");
  // A dtype the config's vocabulary cannot spell: int8 has no candle name.
  ConfigTree candle_int8 = ConfigTree::parse("dtype: f32\n");
  const FixChoice no_spelling = choose("wanted Char for the buffer", candle_int8);
  EXPECT_FALSE(no_spelling.step);
  EXPECT_NE(no_spelling.decisions[0].reason.find("has no spelling in this config's vocabulary"), std::string::npos)
      << no_spelling.decisions[0].reason;
}

TEST(RemediateScope, TypedHostConfigIsAHostConfig) {
  struct Host {
    std::string attn_implementation = "flash_attention_2";
  };
  auto bindings = std::make_shared<Bindings<Host>>();
  bindings->bind("attn_implementation", &Host::attn_implementation);
  TypedConfig<Host> host(Host{}, bindings);
  EXPECT_EQ(host.kind(), ConfigKind::host_config);
  EXPECT_FALSE(choose("flash kernel missing", host).step);  // k.attn names no host config
}

struct BadFix {
  const char* name;
  const char* fix;
  const char* problem;  // expected in the load error, after file:line:column
};

void PrintTo(const BadFix& b, std::ostream* os) { *os << b.name; }

class RemediateScopeLoad : public ::testing::TestWithParam<BadFix> {};

TEST_P(RemediateScopeLoad, BadFixScopeIsALoadErrorWithItsPlace) {
  const std::string yaml = testing::file_yaml(std::string(R"(  - id: k.bad
    template: 'x failed'
    source: {path: a.py, line: 1}
    error_class: E
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: r
        fix: )") + GetParam().fix + R"(
    examples: {match: ['x failed']}
)");
  try {
    testing::catalog_from(yaml, "k.yaml");
    FAIL() << "loaded";
  } catch (const catalog_error& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam().problem), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixes, RemediateScopeLoad,
    ::testing::Values(
        BadFix{"UnknownKind", "{set: {a: 1}, config: [generation-cfg], safety: safe}",
               "k.yaml:14:37: entry 'k.bad': fix.config: unknown config kind 'generation-cfg'"},
        BadFix{"CreateOfAKeyNotSet", "{set: {a: 1}, create: [b], safety: safe}",
               "k.yaml:14:37: entry 'k.bad': fix.create: 'b' is not a key this fix sets (it sets: a)"},
        BadFix{"CreateNotABoolean", "{set: {a: 1}, create: yes-please, safety: safe}",
               "k.yaml:14:36: entry 'k.bad': fix.create must be true, false or a list"},
        BadFix{"UnknownVocabulary", "{set: {a_dtype: f16}, vocabulary: {a_dtype: dtypes}, safety: safe}",
               "fix.vocabulary.a_dtype: unknown vocabulary 'dtypes' (one of: dtype, device, attn-implementation, "
               "cache-implementation)"},
        BadFix{"VocabularyOfAKeyNotSet", "{set: {a: 1}, vocabulary: {b: dtype}, safety: safe}",
               "fix.vocabulary: 'b' is not a key this fix sets"}),
    [](const ::testing::TestParamInfo<BadFix>& info) { return std::string(info.param.name); });

}  // namespace scope

}  // namespace
}  // namespace errshim
