// errshim's counters and histograms in the host's prometheus-cpp registry:
// the opt-in bridge for servers that already expose prometheus-cpp metrics
// (target errshim::prometheus, built when Debian's prometheus-cpp-dev is
// found). Hosts without prometheus-cpp keep errshim::Metrics, which writes
// the text format itself. This is the only errshim header that names
// prometheus-cpp types.
//
//   prometheus::Registry& registry = ...;               // the host's
//   errshim::PrometheusMetrics metrics(registry);
//   errshim::Policy policy = ...;
//   auto lookups = metrics.attach();                     // every lookup in the process (guard, diagnose, C API, ...)
//   metrics.attach(policy);                              // decisions (and, without attach(), lookups) of remediate()
//   if (auto r = store.reload_if_changed(); r.outcome != errshim::ReloadReport::Outcome::unchanged)
//     metrics.observe(r);                                // catalog reloads
//
// Families (every label value is bounded: entry ids come from the catalog,
// outcomes and safety classes from fixed lists, unrecognised errors from at
// most `fingerprint_buckets` fingerprints plus "other"):
//   errshim_decisions_total{entry, outcome}          counter: every Decision, as errshim::Metrics counts them
//   errshim_remediation_attempts_total{entry, safety} counter: fixes applied and retried
//   errshim_remediations_total{entry, outcome}        counter: how remediation ended:
//       succeeded (a fix made the call work), failed (fixes applied, then errshim gave up),
//       no_fix (gave up before any fix: none allowed or usable)
//   errshim_unrecognised_errors_total{class, fingerprint} counter: errors the catalog does not know
//   errshim_match_duration_seconds{result}            histogram: catalog lookups, recognised / unrecognised
//   errshim_lookups_total{site}                       counter: lookups by where they were made (attach() only)
//   errshim_catalog_reloads_total{outcome}            counter: swapped / refused
//   errshim_catalog_generation, errshim_catalog_entries gauges: the catalog current after the last reload
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/registry.h>

#include "errshim/catalog_store.hpp"
#include "errshim/observer.hpp"
#include "errshim/remediation.hpp"

namespace errshim {

struct PrometheusOptions {
  // Distinct unrecognised-error fingerprints that get series of their own;
  // later ones are counted under class="other", fingerprint="other". The
  // first ones seen keep their series (a counter never moves to another).
  std::size_t fingerprint_buckets = 16;
  // Upper bounds, in seconds, of errshim_match_duration_seconds.
  std::vector<double> latency_buckets = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 1e-2, 1e-1};
};

// The labels an error errshim does not recognise is counted under: the
// exception class of its root-cause segment (as the normaliser finds it;
// "-" when none, only [A-Za-z0-9_.:] kept, at most 64 characters) and its
// fingerprint (errshim/fingerprint.hpp), so every worker's copy of one error
// is one series.
struct UnrecognisedLabels {
  std::string error_class;
  std::string fingerprint;
};
UnrecognisedLabels unrecognised_labels(std::string_view error_text);

// Thread-safe. Registers its families in `registry` on construction; the
// registry must outlive it, and it must outlive every policy it is attached to.
class PrometheusMetrics {
 public:
  explicit PrometheusMetrics(prometheus::Registry& registry, PrometheusOptions options = {});
  ~PrometheusMetrics();
  PrometheusMetrics(const PrometheusMetrics&) = delete;
  PrometheusMetrics& operator=(const PrometheusMetrics&) = delete;

  // Counts every lookup in the process (errshim/observer.hpp): guard,
  // rethrow_translated, remediate, diagnose and the C API, on every thread,
  // until the handle goes (keep it no longer than this object). While it is
  // held, the lookups of policies attached below are not counted twice.
  [[nodiscard]] ObserverHandle attach();

  // Chains observe() into policy.on_decision and policy.on_match, after
  // whatever the policy already calls there. (The on_match part stands
  // aside while attach() holds: that counts remediate()'s lookups too.)
  void attach(Policy& policy);

  void observe(const Decision& decision);
  void observe(const MatchEvent& event);
  // Swapped and refused reloads; an unchanged one is not counted.
  void observe(const ReloadReport& report);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace errshim
