// errshim::PrometheusMetrics: what lands in the host's prometheus-cpp
// registry for decisions, lookups and reloads, and the bound on the labels
// of unrecognised errors.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/registry.h>

#include <errshim/errshim.hpp>
#include <errshim/fingerprint.hpp>
#include <errshim/prometheus.hpp>

#include "../test_catalogs.hpp"

namespace errshim {
namespace {

CatalogPtr catalog() {
  static const CatalogPtr c = testing::catalog_from(testing::file_yaml(
      testing::kv_cache_entry_yaml("t.kv") + testing::entry_yaml("t.advice", "the weights are damaged")));
  return c;
}

// The value of one series: the counter, gauge or histogram sample count
// whose labels are exactly `labels`; -1 when the family or series is absent.
double value(const prometheus::Registry& registry, const std::string& family,
             const std::map<std::string, std::string>& labels = {}) {
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      std::map<std::string, std::string> got;
      for (const auto& l : m.label) got[l.name] = l.value;
      if (got != labels) continue;
      switch (f.type) {
        case prometheus::MetricType::Counter: return m.counter.value;
        case prometheus::MetricType::Gauge: return m.gauge.value;
        case prometheus::MetricType::Histogram: return static_cast<double>(m.histogram.sample_count);
        default: return -1;
      }
    }
  }
  return -1;
}

std::size_t series(const prometheus::Registry& registry, const std::string& family) {
  for (const prometheus::MetricFamily& f : registry.Collect())
    if (f.name == family) return f.metric.size();
  return 0;
}

ConfigTree config() { return ConfigTree::parse("kv_cache_enabled: true\n"); }

int kv_build(const ConfigTree& c) {
  if (c.get({"kv_cache_enabled"})->text == "true") throw std::runtime_error("kv_cache_enabled=true is not supported");
  return 1;
}

TEST(PrometheusMetrics, CountsARemediatedErrorByEntryOutcomeAndSafety) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  Policy policy;
  metrics.attach(policy);
  EXPECT_EQ(remediate(config(), kv_build, policy, *catalog()).value, 1);
  EXPECT_EQ(value(registry, "errshim_decisions_total", {{"entry", "t.kv"}, {"outcome", "applied"}}), 1);
  EXPECT_EQ(value(registry, "errshim_decisions_total", {{"entry", "t.kv"}, {"outcome", "succeeded"}}), 1);
  EXPECT_EQ(value(registry, "errshim_remediation_attempts_total", {{"entry", "t.kv"}, {"safety", "slower"}}), 1);
  EXPECT_EQ(value(registry, "errshim_remediations_total", {{"entry", "t.kv"}, {"outcome", "succeeded"}}), 1);
  EXPECT_EQ(value(registry, "errshim_match_duration_seconds", {{"result", "recognised"}}), 1);
  EXPECT_EQ(value(registry, "errshim_match_duration_seconds", {{"result", "unrecognised"}}), 0);
}

TEST(PrometheusMetrics, GiveUpBeforeAnyFixIsNoFixAndAfterAFixIsFailed) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  Policy policy;
  metrics.attach(policy);
  // No step with a fix: errshim gives up on the first call.
  EXPECT_THROW(remediate(
                   config(), [](const ConfigTree&) -> int { throw std::runtime_error("the weights are damaged"); },
                   policy, *catalog()),
               remediation_error);
  EXPECT_EQ(value(registry, "errshim_remediations_total", {{"entry", "t.advice"}, {"outcome", "no_fix"}}), 1);
  // The fix is applied, then the same error comes back: given up on the second call.
  EXPECT_THROW(remediate(
                   config(),
                   [](const ConfigTree&) -> int { throw std::runtime_error("kv_cache_enabled=true is not supported"); },
                   policy, *catalog()),
               remediation_error);
  EXPECT_EQ(value(registry, "errshim_remediations_total", {{"entry", "t.kv"}, {"outcome", "failed"}}), 1);
  EXPECT_EQ(value(registry, "errshim_remediations_total", {{"entry", "t.kv"}, {"outcome", "no_fix"}}), -1);
}

TEST(PrometheusMetrics, UnrecognisedErrorIsCountedByFingerprintAndTimed) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  Policy policy;
  metrics.attach(policy);
  for (const char* text : {"shard 3 lost its KV block", "shard 7 lost its KV block"}) {
    EXPECT_THROW(
        remediate(
            config(), [&](const ConfigTree&) -> int { throw std::invalid_argument(text); }, policy, *catalog()),
        std::invalid_argument);
  }
  const UnrecognisedLabels f = unrecognised_labels("shard 3 lost its KV block");
  // The number is masked: both are one series.
  EXPECT_EQ(
      value(registry, "errshim_unrecognised_errors_total", {{"class", f.error_class}, {"fingerprint", f.fingerprint}}),
      2);
  EXPECT_EQ(value(registry, "errshim_unrecognised_errors_total", {{"class", "other"}, {"fingerprint", "other"}}), 0);
  EXPECT_EQ(value(registry, "errshim_match_duration_seconds", {{"result", "unrecognised"}}), 2);
}

TEST(PrometheusMetrics, FingerprintsBeyondTheBoundGoToOther) {
  prometheus::Registry registry;
  PrometheusOptions options;
  options.fingerprint_buckets = 2;
  PrometheusMetrics metrics(registry, options);
  const std::string texts[] = {"disk full", "socket closed", "bad magic", "no route", "disk full"};
  for (const std::string& t : texts) metrics.observe(MatchEvent{t, nullptr, {}});
  // other, plus the first two fingerprints seen; the third and fourth are "other".
  EXPECT_EQ(series(registry, "errshim_unrecognised_errors_total"), 3u);
  EXPECT_EQ(value(registry, "errshim_unrecognised_errors_total", {{"class", "other"}, {"fingerprint", "other"}}), 2);
  const UnrecognisedLabels first = unrecognised_labels("disk full");
  EXPECT_EQ(value(registry, "errshim_unrecognised_errors_total",
                  {{"class", first.error_class}, {"fingerprint", first.fingerprint}}),
            2);
}

TEST(PrometheusMetrics, AttachKeepsTheObserversThePolicyHad) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  Policy policy;
  int decisions = 0, matches = 0;
  policy.on_decision = [&](const Decision&) { ++decisions; };
  policy.on_match = [&](const MatchEvent&) { ++matches; };
  metrics.attach(policy);
  remediate(config(), kv_build, policy, *catalog());
  EXPECT_EQ(decisions, 2);  // applied, succeeded
  EXPECT_EQ(matches, 1);
  EXPECT_EQ(value(registry, "errshim_decisions_total", {{"entry", "t.kv"}, {"outcome", "applied"}}), 1);
}

TEST(PrometheusMetrics, CountsSwappedAndRefusedReloadsButNotUnchangedOnes) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  CatalogStore store(catalog());
  metrics.observe(store.reload(CatalogBuilder().add_yaml("schema: 1\nentries: []\n", "empty.yaml")));
  metrics.observe(store.reload(CatalogBuilder().add_yaml("schema: 1\nentries: [{id: x}]\n", "broken.yaml")));
  ReloadReport unchanged;
  unchanged.generation = 99;
  metrics.observe(unchanged);
  EXPECT_EQ(value(registry, "errshim_catalog_reloads_total", {{"outcome", "swapped"}}), 1);
  EXPECT_EQ(value(registry, "errshim_catalog_reloads_total", {{"outcome", "refused"}}), 1);
  EXPECT_EQ(value(registry, "errshim_catalog_generation"), 2);  // the refused one left generation 2 current
  EXPECT_EQ(value(registry, "errshim_catalog_entries"), 0);
}

TEST(UnrecognisedLabels, ClassOfTheRootCauseAndTheSharedFingerprint) {
  const UnrecognisedLabels py = unrecognised_labels(
      "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nKeyError: 'lm_head.weight'\n");
  EXPECT_EQ(py.error_class, "KeyError");
  EXPECT_EQ(py.fingerprint, fingerprint("KeyError: 'lm_head.weight'").id);
  EXPECT_EQ(unrecognised_labels("plain text").error_class, "-");
}

TEST(UnrecognisedLabels, ClassFromHostileTextIsReducedToASafeBoundedLabel) {
  const std::string evil = std::string(200, 'A') + "Error";
  const UnrecognisedLabels f = unrecognised_labels(
      "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n" + evil + ": boom\n");
  EXPECT_EQ(f.error_class, std::string(64, 'A'));  // the normaliser found the class; the label keeps 64 characters
  EXPECT_EQ(f.error_class.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:"),
            std::string::npos);
}

// attach(): lookups from anywhere in the process, here guard() alone.
TEST(PrometheusMetricsAttach, GuardOnlyUnrecognisedErrorsOfTwoWorkersAreOneFingerprintSeries) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  const ObserverHandle lookups = metrics.attach();
  std::vector<std::thread> workers;
  for (int rank : {0, 3}) {
    workers.emplace_back([rank] {
      const std::string text = "[rank" + std::to_string(rank) + "]: RuntimeError: shard " +
                               std::to_string(rank * 5 + 2) + " lost its KV block";
      EXPECT_THROW(guard([&]() -> int { throw std::runtime_error(text); }, *catalog()), std::runtime_error);
    });
  }
  for (auto& w : workers) w.join();
  const UnrecognisedLabels f = unrecognised_labels("[rank1]: RuntimeError: shard 9 lost its KV block");
  EXPECT_EQ(
      value(registry, "errshim_unrecognised_errors_total", {{"class", f.error_class}, {"fingerprint", f.fingerprint}}),
      2);
  EXPECT_EQ(series(registry, "errshim_unrecognised_errors_total"), 2u);  // that one and "other"
  EXPECT_EQ(value(registry, "errshim_match_duration_seconds", {{"result", "unrecognised"}}), 2);
  EXPECT_EQ(value(registry, "errshim_lookups_total", {{"site", "guard"}}), 2);
}

TEST(PrometheusMetricsAttach, RecognisedGuardLookupIsTimedNotCounted) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  const ObserverHandle lookups = metrics.attach();
  EXPECT_THROW(guard([]() -> int { throw std::runtime_error("kv_cache_enabled=true is not supported"); }, *catalog()),
               translated_error);
  EXPECT_EQ(value(registry, "errshim_match_duration_seconds", {{"result", "recognised"}}), 1);
  EXPECT_EQ(series(registry, "errshim_unrecognised_errors_total"), 1u);  // "other" alone
}

TEST(PrometheusMetricsAttach, RemediateLookupCountsOnceWithBothAttachments) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  Policy policy;
  metrics.attach(policy);
  const ObserverHandle lookups = metrics.attach();
  EXPECT_THROW(remediate(
                   config(), [](const ConfigTree&) -> int { throw std::invalid_argument("tokenizer gone"); }, policy,
                   *catalog()),
               std::invalid_argument);
  const UnrecognisedLabels f = unrecognised_labels("tokenizer gone");
  EXPECT_EQ(
      value(registry, "errshim_unrecognised_errors_total", {{"class", f.error_class}, {"fingerprint", f.fingerprint}}),
      1);
  EXPECT_EQ(value(registry, "errshim_lookups_total", {{"site", "remediate"}}), 1);
}

TEST(PrometheusMetricsAttach, NothingIsCountedOnceTheHandleIsGone) {
  prometheus::Registry registry;
  PrometheusMetrics metrics(registry);
  Policy policy;
  metrics.attach(policy);
  { const ObserverHandle lookups = metrics.attach(); }
  EXPECT_FALSE(diagnose("tokenizer gone", *catalog()));
  EXPECT_EQ(value(registry, "errshim_match_duration_seconds", {{"result", "unrecognised"}}), 0);
  // The policy's own attachment counts again.
  EXPECT_THROW(remediate(
                   config(), [](const ConfigTree&) -> int { throw std::invalid_argument("tokenizer gone"); }, policy,
                   *catalog()),
               std::invalid_argument);
  EXPECT_EQ(value(registry, "errshim_match_duration_seconds", {{"result", "unrecognised"}}), 1);
}

}  // namespace
}  // namespace errshim
