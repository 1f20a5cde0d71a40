// Remediation under faults: the build function fails differently on retry, a
// host action throws, the config refuses a change, the policy forbids every
// fix. In each case the caller's config is untouched, the report holds every
// attempt, and the original exception is reachable.
#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <errshim/errshim.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

CatalogPtr catalog() {
  using testing::Step;
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(
      testing::kv_cache_entry_yaml("f.kv") +
      testing::fixable_entry_yaml("f.quant", "does not support the quantized cache",
                                  {{"use the dynamic cache", "{set: {cache_implementation: dynamic}, safety: safe}"}}) +
      testing::fixable_entry_yaml("f.attn", "attention kernel failed",
                                  {{"fall back to manual attention", "{action: fallback, safety: safe}"},
                                   {"turn flash attention off, with its cache type",
                                    "{set: {use_flash_attn: false}, requires: {kv_cache_dtype: auto}, create: "
                                    "[kv_cache_dtype], safety: safe}"}})));
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

// The build function fails with a recognised error, then, once the fix is
// applied, with something errshim does not know: remediation gives up with
// the whole history, the first error and the last one both reachable.
struct RetryFaultCase {
  const char* name;  // what the retry throws
  void (*second_failure)();  // throws it
  const char* last_error;  // the text of the last error, nested in remediation_error
  const char* reason_mentions;  // in the gave-up decision's reason; nullptr: not checked
};

std::ostream& operator<<(std::ostream& os, const RetryFaultCase& c) { return os << c.name; }

class RemediationFaultsOnRetry : public ::testing::TestWithParam<RetryFaultCase> {};

TEST_P(RemediationFaultsOnRetry, GivesUpKeepingTheWholeHistory) {
  const RetryFaultCase& c = GetParam();
  const ConfigTree config = ConfigTree::parse("kv_cache_enabled: true\n");
  const std::string before = config.dump();
  int calls = 0;
  try {
    remediate(
        config,
        [&](const ConfigTree&) -> int {
          if (++calls == 1) throw ModelError("kv_cache_enabled=true is not supported", 1);
          c.second_failure();
          return 0;
        },
        Policy{}, *catalog());
    FAIL() << "no remediation_error";
  } catch (const remediation_error& e) {
    const RemediationReport& r = e.report();
    EXPECT_EQ(r.calls, 2);
    ASSERT_EQ(r.errors.size(), 2u);
    EXPECT_EQ(text_of(r.errors.front()), "kv_cache_enabled=true is not supported");  // the original
    EXPECT_EQ(nested_text(e), c.last_error);  // the last
    EXPECT_EQ(outcomes(r), (std::vector<std::string>{"applied:f.kv", "gave-up:f.kv"}));
    if (c.reason_mentions) {
      EXPECT_NE(r.decisions.back().reason.find(c.reason_mentions), std::string::npos);
    }
    EXPECT_EQ(e.id(), "f.kv");
  }
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(config.dump(), before);
}

const RetryFaultCase kRetryFaults[] = {
    {"UnrecognisedModelError", [] { throw ModelError("CUDA driver crashed", 2); }, "CUDA driver crashed",
     "CUDA driver crashed"},
    {"NonStandardValue", [] { throw 42; }, "int 42", nullptr},
};

INSTANTIATE_TEST_SUITE_P(RemediationFaults, RemediationFaultsOnRetry, ::testing::ValuesIn(kRetryFaults),
                         [](const ::testing::TestParamInfo<RetryFaultCase>& info) {
                           return std::string(info.param.name);
                         });

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

// The host action of the first step throws: that step is a failed decision
// (not the host's error), nothing it changed is kept, and the next step fixes
// the call.
struct ActionFaultCase {
  const char* name;  // what the action throws
  void (*action)(ConfigAccess& config, const Diagnosis& diagnosis);
  const char* reason;  // of the failed decision
};

std::ostream& operator<<(std::ostream& os, const ActionFaultCase& c) { return os << c.name; }

class RemediationFaultsInHostAction : public ::testing::TestWithParam<ActionFaultCase> {};

TEST_P(RemediationFaultsInHostAction, IsAFailedStepThatLeavesNoChangeBehind) {
  const ActionFaultCase& c = GetParam();
  ActionRegistry actions;
  actions.add("fallback", c.action);
  Policy policy;
  policy.actions = &actions;
  const ConfigTree config = ConfigTree::parse("use_flash_attn: true\n");
  const auto r = remediate(
      config,
      [&](const ConfigTree& cfg) {
        if (cfg.get({"use_flash_attn"})->text == "true") throw ModelError("attention kernel failed", 1);
        return 1;
      },
      policy, *catalog());
  ASSERT_EQ(r.report.decisions.size(), 3u);
  EXPECT_EQ(outcomes(r.report), (std::vector<std::string>{"failed:f.attn", "applied:f.attn", "succeeded:f.attn"}));
  EXPECT_EQ(r.report.decisions[0].reason, c.reason);
  EXPECT_FALSE(r.config.get({"attention"})) << "the failed action's change leaked:\n" << r.config.dump();
  EXPECT_EQ(r.config.dump(), "use_flash_attn: false\nkv_cache_dtype: auto\n");
  EXPECT_EQ(config.dump(), "use_flash_attn: true\n");
}

const ActionFaultCase kActionFaults[] = {
    {"RuntimeErrorHalfway",
     [](ConfigAccess& cfg, const Diagnosis&) {
       cfg.set({"attention"}, Value{Value::Type::string, "manual"});  // done, then the host gives up
       throw std::runtime_error("GPU busy: cannot switch kernels now");
     },
     "GPU busy: cannot switch kernels now"},
    {"NonStandardValue", [](ConfigAccess&, const Diagnosis&) { throw 7; },
     "host action 'fallback' threw an exception that is not a std::exception"},
};

INSTANTIATE_TEST_SUITE_P(RemediationFaults, RemediationFaultsInHostAction, ::testing::ValuesIn(kActionFaults),
                         [](const ::testing::TestParamInfo<ActionFaultCase>& info) {
                           return std::string(info.param.name);
                         });

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

// The config refuses what a fix does (a key it will not change, or the
// copy that worked cannot be written back): the step fails, remediation gives
// up, and the caller's config holds what it held.
struct ConfigFaultCase {
  const char* name;  // how the config refuses
  std::map<std::string, Value> values;
  std::vector<std::string> refuse;  // keys set() refuses
  bool refuse_assign;
  const char* error;  // what the build function throws
  std::vector<std::string> outcomes;  // of the decisions, in order
  std::size_t failed_step;  // the decision the refusal is reported in
  const char* reason;
};

std::ostream& operator<<(std::ostream& os, const ConfigFaultCase& c) { return os << c.name; }

class RemediationFaultsInConfig : public ::testing::TestWithParam<ConfigFaultCase> {};

TEST_P(RemediationFaultsInConfig, EndsInAReportNotAChangedConfig) {
  const ConfigFaultCase& c = GetParam();
  FlatConfig config = flat(c.values);
  config.refuse = c.refuse;
  config.refuse_assign = c.refuse_assign;
  const FlatConfig original = config;
  try {
    remediate(
        config, [&](const FlatConfig&) -> int { throw ModelError(c.error, 1); }, Policy{}, *catalog());
    FAIL() << "no remediation_error";
  } catch (const remediation_error& e) {
    const RemediationReport& r = e.report();
    EXPECT_EQ(r.calls, 1);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(text_of(r.errors.front()), c.error);
    EXPECT_EQ(nested_text(e), c.error);
    EXPECT_EQ(outcomes(r), c.outcomes);
    ASSERT_LT(c.failed_step, r.decisions.size());
    EXPECT_EQ(r.decisions[c.failed_step].reason, c.reason);
    EXPECT_TRUE(r.applied_changes().empty());
  }
  EXPECT_EQ(config.values, original.values);
}

const ConfigFaultCase kConfigFaults[] = {
    // The bundle's second key: the first is set before the refusal, so a
    // half-made bundle would show. The action is not registered.
    {"RefusesTheBundlesSecondKey",
     {{"use_flash_attn", kTrue}, {"kv_cache_dtype", Value{Value::Type::string, "fp8"}}},
     {"kv_cache_dtype"},
     false,
     "attention kernel failed",
     {"failed:f.attn", "failed:f.attn", "gave-up:f.attn"},
     1,
     "config: 'kv_cache_dtype' is read-only"},
    {"CannotBeWrittenBack",
     {{"kv_cache_enabled", kTrue}},
     {},
     true,
     "kv_cache_enabled=true is not supported",
     {"failed:f.kv", "gave-up:f.kv"},
     0,
     "config: cannot be written back"},
};

INSTANTIATE_TEST_SUITE_P(RemediationFaults, RemediationFaultsInConfig, ::testing::ValuesIn(kConfigFaults),
                         [](const ::testing::TestParamInfo<ConfigFaultCase>& info) {
                           return std::string(info.param.name);
                         });

// The policy rules out every step (no safety class allowed, or the
// bundle's key denied; the action is not registered): each step is a
// decision in the report, the host's own exception stays nested, and the
// config is untouched.
struct PolicyFaultCase {
  const char* name;  // what the policy forbids
  void (*restrict)(Policy& policy);
  std::vector<std::string> outcomes;
  const char* first_reason;  // of decision 0; nullptr: not checked
};

std::ostream& operator<<(std::ostream& os, const PolicyFaultCase& c) { return os << c.name; }

class RemediationFaultsUnderPolicy : public ::testing::TestWithParam<PolicyFaultCase> {};

TEST_P(RemediationFaultsUnderPolicy, RefusesEachStepAndKeepsTheOriginal) {
  const PolicyFaultCase& c = GetParam();
  Policy policy;
  c.restrict(policy);
  const ConfigTree config = ConfigTree::parse("use_flash_attn: true\n");
  try {
    remediate(
        config, [&](const ConfigTree&) -> int { throw ModelError("attention kernel failed", 9); }, policy, *catalog());
    FAIL() << "no remediation_error";
  } catch (const remediation_error& e) {
    const RemediationReport& r = e.report();
    EXPECT_EQ(outcomes(r), c.outcomes);
    if (c.first_reason) {
      EXPECT_EQ(r.decisions[0].reason, c.first_reason);
    }
    for (const Decision& d : r.decisions) EXPECT_EQ(d.attempt, 1);
    EXPECT_EQ(r.errors.size(), static_cast<std::size_t>(r.calls));
    EXPECT_NE(r.to_json().find("\"outcome\": \"refused\""), std::string::npos);
    try {
      std::rethrow_if_nested(e);
      ADD_FAILURE() << "nothing nested";
    } catch (const ModelError& original) {
      EXPECT_EQ(original.id, 9);  // the host's own exception, with its own type
    }
  }
  EXPECT_EQ(config.dump(), "use_flash_attn: true\n");
}

const PolicyFaultCase kPolicyFaults[] = {
    {"NoSafetyClassAllowed",
     [](Policy& p) { p.allowed.clear(); },
     {"refused:f.attn", "refused:f.attn", "gave-up:f.attn"},
     "safety class 'safe' is not allowed by the policy"},
    {"BundlesKeyDenied",
     [](Policy& p) { p.deny_keys = {"use_flash_attn"}; },
     {"failed:f.attn", "refused:f.attn", "gave-up:f.attn"},
     nullptr},
};

INSTANTIATE_TEST_SUITE_P(RemediationFaults, RemediationFaultsUnderPolicy, ::testing::ValuesIn(kPolicyFaults),
                         [](const ::testing::TestParamInfo<PolicyFaultCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(RemediationFaults, ModeOffPassesTheOriginalExceptionThroughUntouched) {
  Policy policy;
  policy.mode = Mode::off;
  const ConfigTree config = ConfigTree::parse("kv_cache_enabled: true\n");
  try {
    remediate(
        config, [&](const ConfigTree&) -> int { throw ModelError("kv_cache_enabled=true is not supported", 5); },
        policy, *catalog());
    FAIL() << "nothing thrown";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.id, 5);
  }
}

}  // namespace
}  // namespace errshim
