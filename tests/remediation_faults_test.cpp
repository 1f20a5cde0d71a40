// Remediation under faults: the build function fails differently on retry, a
// host action throws, the config refuses a change, the policy forbids every
// fix. In each case the caller's config is untouched, the report holds every
// attempt, and the original exception is reachable.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <errshim/errshim.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

CatalogPtr catalog() {
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(R"(  - id: f.kv
    template: kv_cache_enabled=true is not supported
    source: {path: metavoice.rs, line: 449}
    error_class: candle::Error::Msg
    kind: unsupported-feature
    cause: c
    trigger: t
    remediation:
      - text: turn the cache off
        fix: {set: {kv_cache_enabled: false}, safety: slower}
    examples: {match: [kv_cache_enabled=true is not supported]}
  - id: f.quant
    template: does not support the quantized cache
    source: {path: utils.py, line: 2003}
    error_class: ValueError
    kind: unsupported-feature
    cause: c
    trigger: t
    remediation:
      - text: use the dynamic cache
        fix: {set: {cache_implementation: dynamic}, safety: safe}
    examples: {match: [does not support the quantized cache]}
  - id: f.attn
    template: attention kernel failed
    source: {path: attn.rs, line: 1}
    error_class: E
    kind: internal
    cause: c
    trigger: t
    remediation:
      - text: fall back to manual attention
        fix: {action: fallback, safety: safe}
      - text: turn flash attention off, with its cache type
        fix: {set: {use_flash_attn: false}, requires: {kv_cache_dtype: auto}, create: [kv_cache_dtype], safety: safe}
    examples: {match: [attention kernel failed]}
)"));
  return c;
}

// The error inference layers throw in these tests: a type of the host's own,
// so a test can tell it from anything errshim makes.
struct ModelError : std::runtime_error {
  ModelError(const std::string& what, int id) : std::runtime_error(what), id(id) {}
  int id;
};

// A flat config that can be told to refuse changes: set() throws
// config_error for the keys in `refuse` (after any earlier keys of the same
// fix were set, so a half-made bundle is possible).
class FlatConfig final : public ConfigAccess {
 public:
  std::map<std::string, Value> values;
  std::vector<std::string> refuse;
  bool refuse_assign = false;

  std::vector<KeyPath> find(std::string_view key) const override {
    if (values.count(std::string(key))) return {KeyPath{std::string(key)}};
    return {};
  }
  std::optional<Value> get(const KeyPath& path) const override {
    auto it = values.find(to_string(path));
    return it == values.end() ? std::nullopt : std::optional<Value>(it->second);
  }
  void set(const KeyPath& path, const Value& value) override {
    for (const std::string& r : refuse)
      if (r == to_string(path)) throw config_error("config: '" + r + "' is read-only");
    values[to_string(path)] = value;
  }
  void remove(const KeyPath& path) override { values.erase(to_string(path)); }
  std::unique_ptr<ConfigAccess> clone() const override { return std::make_unique<FlatConfig>(*this); }
  void assign_from(const ConfigAccess& other) override {
    if (refuse_assign) throw config_error("config: cannot be written back");
    values = dynamic_cast<const FlatConfig&>(other).values;
  }
};

FlatConfig flat(std::map<std::string, Value> values) {
  FlatConfig c;
  c.values = std::move(values);
  return c;
}
const Value kTrue{Value::Type::boolean, "true"};

std::vector<std::string> outcomes(const RemediationReport& r) {
  std::vector<std::string> out;
  for (const Decision& d : r.decisions) out.push_back(std::string(to_string(d.outcome)) + ":" + d.entry_id);
  return out;
}

// The text of the exception in `e`, whatever it is.
std::string text_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (int i) {
    return "int " + std::to_string(i);
  } catch (...) {
    return "?";
  }
}

// The exception nested in a remediation_error (the last error).
std::string nested_text(const remediation_error& e) {
  try {
    std::rethrow_if_nested(e);
  } catch (...) {
    return text_of(std::current_exception());
  }
  return "(nothing nested)";
}

TEST(RemediationFaults, ABuildThatFailsUnrecognisablyOnRetryKeepsTheWholeHistory) {
  const ConfigTree config = ConfigTree::parse("kv_cache_enabled: true\n");
  const std::string before = config.dump();
  int calls = 0;
  try {
    remediate(
        config,
        [&](const ConfigTree&) -> int {
          if (++calls == 1) throw ModelError("kv_cache_enabled=true is not supported", 1);
          throw ModelError("CUDA driver crashed", 2);
        },
        Policy{}, *catalog());
    FAIL() << "no remediation_error";
  } catch (const remediation_error& e) {
    const RemediationReport& r = e.report();
    EXPECT_EQ(r.calls, 2);
    ASSERT_EQ(r.errors.size(), 2u);
    EXPECT_EQ(text_of(r.errors.front()), "kv_cache_enabled=true is not supported");  // the original
    EXPECT_EQ(nested_text(e), "CUDA driver crashed");                                // the last
    EXPECT_EQ(outcomes(r), (std::vector<std::string>{"applied:f.kv", "gave-up:f.kv"}));
    EXPECT_NE(r.decisions.back().reason.find("CUDA driver crashed"), std::string::npos);
    EXPECT_EQ(e.id(), "f.kv");
  }
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(config.dump(), before);
}

TEST(RemediationFaults, ABuildThatThrowsANonStandardValueOnRetryIsStillReachable) {
  const ConfigTree config = ConfigTree::parse("kv_cache_enabled: true\n");
  int calls = 0;
  try {
    remediate(
        config,
        [&](const ConfigTree&) -> int {
          if (++calls == 1) throw ModelError("kv_cache_enabled=true is not supported", 1);
          throw 42;
        },
        Policy{}, *catalog());
    FAIL() << "no remediation_error";
  } catch (const remediation_error& e) {
    EXPECT_EQ(text_of(e.report().errors.front()), "kv_cache_enabled=true is not supported");
    EXPECT_EQ(nested_text(e), "int 42");
    EXPECT_EQ(e.report().errors.size(), 2u);
  }
  EXPECT_EQ(config.dump(), "kv_cache_enabled: true\n");
}

TEST(RemediationFaults, ADifferentRecognisedErrorOnRetryIsFixedInTurn) {
  const ConfigTree config = ConfigTree::parse("kv_cache_enabled: true\ncache_implementation: quantized\n");
  const std::string before = config.dump();
  const auto r = remediate(
      config,
      [&](const ConfigTree& c) {
        if (c.get({"kv_cache_enabled"})->text == "true") throw ModelError("kv_cache_enabled=true is not supported", 1);
        if (c.get({"cache_implementation"})->text == "quantized")
          throw ModelError("ValueError: This model does not support the quantized cache.", 2);
        return 7;
      },
      Policy{}, *catalog());
  EXPECT_EQ(r.value, 7);
  EXPECT_EQ(r.report.calls, 3);
  EXPECT_EQ(r.report.errors.size(), 2u);
  EXPECT_EQ(outcomes(r.report), (std::vector<std::string>{"applied:f.kv", "applied:f.quant", "succeeded:f.quant"}));
  EXPECT_EQ(r.config.dump(), "kv_cache_enabled: false\ncache_implementation: dynamic\n");
  EXPECT_EQ(config.dump(), before);
}

TEST(RemediationFaults, AHostActionThatThrowsHalfwayLeavesNoChangeBehind) {
  ActionRegistry actions;
  actions.add("fallback", [](ConfigAccess& c, const Diagnosis&) {
    c.set({"attention"}, Value{Value::Type::string, "manual"});  // done, then the host gives up
    throw std::runtime_error("GPU busy: cannot switch kernels now");
  });
  Policy policy;
  policy.actions = &actions;
  const ConfigTree config = ConfigTree::parse("use_flash_attn: true\n");
  const auto r = remediate(
      config,
      [&](const ConfigTree& c) {
        if (c.get({"use_flash_attn"})->text == "true") throw ModelError("attention kernel failed", 1);
        return 1;
      },
      policy, *catalog());
  EXPECT_EQ(outcomes(r.report), (std::vector<std::string>{"failed:f.attn", "applied:f.attn", "succeeded:f.attn"}));
  EXPECT_EQ(r.report.decisions[0].reason, "GPU busy: cannot switch kernels now");
  EXPECT_FALSE(r.config.get({"attention"})) << "the failed action's change leaked:\n" << r.config.dump();
  EXPECT_EQ(r.config.dump(), "use_flash_attn: false\nkv_cache_dtype: auto\n");
  EXPECT_EQ(config.dump(), "use_flash_attn: true\n");
}

TEST(RemediationFaults, AHostActionThatThrowsANonStandardValueIsAFailedStepNotTheHostsError) {
  ActionRegistry actions;
  actions.add("fallback", [](ConfigAccess&, const Diagnosis&) { throw 7; });
  Policy policy;
  policy.actions = &actions;
  const ConfigTree config = ConfigTree::parse("use_flash_attn: true\n");
  const auto r = remediate(
      config,
      [&](const ConfigTree& c) {
        if (c.get({"use_flash_attn"})->text == "true") throw ModelError("attention kernel failed", 1);
        return 1;
      },
      policy, *catalog());
  ASSERT_EQ(r.report.decisions.size(), 3u);
  EXPECT_EQ(to_string(r.report.decisions[0].outcome), "failed");
  EXPECT_EQ(r.report.decisions[0].reason, "host action 'fallback' threw an exception that is not a std::exception");
  EXPECT_EQ(r.config.dump(), "use_flash_attn: false\nkv_cache_dtype: auto\n");
}

TEST(RemediationFaults, AnObserverThatThrowsDoesNotBreakRecovery) {
  Policy policy;
  int seen = 0;
  policy.on_decision = [&](const Decision&) {
    ++seen;
    throw std::runtime_error("audit log is down");
  };
  const ConfigTree config = ConfigTree::parse("kv_cache_enabled: true\n");
  const auto r = remediate(
      config,
      [&](const ConfigTree& c) {
        if (c.get({"kv_cache_enabled"})->text == "true") throw ModelError("kv_cache_enabled=true is not supported", 1);
        return 1;
      },
      policy, *catalog());
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(outcomes(r.report), (std::vector<std::string>{"applied:f.kv", "succeeded:f.kv"}));
}

TEST(RemediationFaults, AConfigThatRefusesTheChangeEndsInAReportNotAHalfChangedConfig) {
  FlatConfig config = flat({{"use_flash_attn", kTrue}, {"kv_cache_dtype", Value{Value::Type::string, "fp8"}}});
  config.refuse = {"kv_cache_dtype"};  // the bundle's second key: the first is set before the refusal
  const FlatConfig original = config;
  try {
    remediate(
        config,
        [&](const FlatConfig&) -> int { throw ModelError("attention kernel failed", 1); }, Policy{}, *catalog());
    FAIL() << "no remediation_error";
  } catch (const remediation_error& e) {
    const RemediationReport& r = e.report();
    EXPECT_EQ(r.calls, 1);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(text_of(r.errors.front()), "attention kernel failed");
    EXPECT_EQ(nested_text(e), "attention kernel failed");
    // The action is not registered, the bundle is refused by the config.
    EXPECT_EQ(outcomes(r), (std::vector<std::string>{"failed:f.attn", "failed:f.attn", "gave-up:f.attn"}));
    EXPECT_EQ(r.decisions[1].reason, "config: 'kv_cache_dtype' is read-only");
    EXPECT_TRUE(r.applied_changes().empty());
  }
  EXPECT_EQ(config.values, original.values);
}

TEST(RemediationFaults, AConfigThatCannotBeWrittenBackKeepsItsState) {
  FlatConfig config = flat({{"kv_cache_enabled", kTrue}});
  config.refuse_assign = true;
  try {
    remediate(
        config, [&](const FlatConfig&) -> int { throw ModelError("kv_cache_enabled=true is not supported", 1); },
        Policy{}, *catalog());
    FAIL() << "no remediation_error";
  } catch (const remediation_error& e) {
    EXPECT_EQ(outcomes(e.report()), (std::vector<std::string>{"failed:f.kv", "gave-up:f.kv"}));
    EXPECT_EQ(e.report().decisions[0].reason, "config: cannot be written back");
    EXPECT_EQ(text_of(e.report().errors.front()), "kv_cache_enabled=true is not supported");
  }
  EXPECT_EQ(config.values.at("kv_cache_enabled"), kTrue);
}

TEST(RemediationFaults, APolicyThatForbidsEverythingRefusesEachStepAndKeepsTheOriginal) {
  Policy policy;
  policy.allowed.clear();
  const ConfigTree config = ConfigTree::parse("use_flash_attn: true\n");
  try {
    remediate(config, [&](const ConfigTree&) -> int { throw ModelError("attention kernel failed", 9); }, policy,
              *catalog());
    FAIL() << "no remediation_error";
  } catch (const remediation_error& e) {
    EXPECT_EQ(outcomes(e.report()), (std::vector<std::string>{"refused:f.attn", "refused:f.attn", "gave-up:f.attn"}));
    EXPECT_EQ(e.report().decisions[0].reason, "safety class 'safe' is not allowed by the policy");
    try {
      std::rethrow_if_nested(e);
    } catch (const ModelError& original) {
      EXPECT_EQ(original.id, 9);  // the host's own exception, with its own type
    }
  }
  EXPECT_EQ(config.dump(), "use_flash_attn: true\n");
}

TEST(RemediationFaults, ModeOffPassesTheOriginalExceptionThroughUntouched) {
  Policy policy;
  policy.mode = Mode::off;
  const ConfigTree config = ConfigTree::parse("kv_cache_enabled: true\n");
  try {
    remediate(config, [&](const ConfigTree&) -> int { throw ModelError("kv_cache_enabled=true is not supported", 5); },
              policy, *catalog());
    FAIL() << "nothing thrown";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.id, 5);
  }
}

TEST(RemediationFaults, EveryRefusalAndEveryErrorIsCountedInTheReport) {
  // Deny the keys instead of the classes: the action is unregistered, the
  // bundle's keys denied.
  Policy policy;
  policy.deny_keys = {"use_flash_attn"};
  const ConfigTree config = ConfigTree::parse("use_flash_attn: true\n");
  try {
    remediate(config, [&](const ConfigTree&) -> int { throw ModelError("attention kernel failed", 1); }, policy,
              *catalog());
    FAIL();
  } catch (const remediation_error& e) {
    const RemediationReport& r = e.report();
    EXPECT_EQ(outcomes(r), (std::vector<std::string>{"failed:f.attn", "refused:f.attn", "gave-up:f.attn"}));
    for (const Decision& d : r.decisions) EXPECT_EQ(d.attempt, 1);
    EXPECT_EQ(r.errors.size(), static_cast<std::size_t>(r.calls));
    EXPECT_NE(r.to_json().find("\"outcome\": \"refused\""), std::string::npos);
  }
}

}  // namespace
}  // namespace errshim
