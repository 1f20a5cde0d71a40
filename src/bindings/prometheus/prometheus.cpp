#include "errshim/prometheus.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <utility>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "chars.hpp"
#include "errshim/fingerprint.hpp"
#include "errshim/normalize.hpp"

namespace errshim {

namespace {

// A label value from a class name found in hostile text: a fixed alphabet
// and length, so it cannot smuggle anything into the exposition.
std::string class_label(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (out.size() == 64) break;
    if (detail::is_ident(c) || c == '.' || c == ':') out += c;
  }
  return out.empty() ? "-" : out;
}

}  // namespace

UnrecognisedLabels unrecognised_labels(std::string_view error_text) {
  const Normalized n = normalize(error_text);
  const std::string_view cls = n.segments.empty() ? std::string_view() : n.segments.front().exception_class;
  return {class_label(cls), fingerprint(error_text).id};
}

struct PrometheusMetrics::Impl {
  PrometheusOptions options;
  prometheus::Family<prometheus::Counter>& decisions;
  prometheus::Family<prometheus::Counter>& attempts;
  prometheus::Family<prometheus::Counter>& remediations;
  prometheus::Family<prometheus::Counter>& unrecognised;
  prometheus::Family<prometheus::Histogram>& latency;
  prometheus::Family<prometheus::Counter>& reloads;
  prometheus::Family<prometheus::Counter>& lookups;
  prometheus::Gauge& generation;
  prometheus::Gauge& entries;
  prometheus::Histogram& latency_recognised;
  prometheus::Histogram& latency_unrecognised;

  std::mutex mutex;  // guards the two maps
  std::map<std::string, prometheus::Counter*> buckets;  // "class\nhash" -> its counter
  prometheus::Counter& other;
  // Process-wide attachments held: while any is, the per-policy on_match
  // leaves counting to them, so a remediate() lookup counts once.
  // Shared with the observers, which may be destroyed after this object (a
  // lookup on another thread can hold the last reference to one briefly).
  std::shared_ptr<std::atomic<int>> attached = std::make_shared<std::atomic<int>>(0);

  Impl(prometheus::Registry& r, PrometheusOptions o)
      : options(std::move(o)),
        decisions(prometheus::BuildCounter()
                      .Name("errshim_decisions_total")
                      .Help("Decisions errshim made about inference errors, by catalog entry and outcome.")
                      .Register(r)),
        attempts(
            prometheus::BuildCounter()
                .Name("errshim_remediation_attempts_total")
                .Help("Fixes errshim applied to a config copy before retrying the call, by entry and safety class.")
                .Register(r)),
        remediations(prometheus::BuildCounter()
                         .Name("errshim_remediations_total")
                         .Help("How remediation of a recognised error ended: succeeded, failed (fixes applied, then "
                               "gave up) or no_fix (gave up before any fix), by entry.")
                         .Register(r)),
        unrecognised(prometheus::BuildCounter()
                         .Name("errshim_unrecognised_errors_total")
                         .Help("Errors the catalog does not recognise, by exception class and fingerprint of the "
                               "first line (a bounded set; the rest under \"other\").")
                         .Register(r)),
        latency(prometheus::BuildHistogram()
                    .Name("errshim_match_duration_seconds")
                    .Help("Time of a catalog lookup for a failed call's error, by result.")
                    .Register(r)),
        reloads(prometheus::BuildCounter()
                    .Name("errshim_catalog_reloads_total")
                    .Help("Catalog reloads: swapped in, or refused with the old catalog kept.")
                    .Register(r)),
        lookups(prometheus::BuildCounter()
                    .Name("errshim_lookups_total")
                    .Help("Catalog lookups observed process-wide, by where they were made (guard, "
                          "rethrow_translated, remediate, diagnose, c_api_diagnose, c_api_fix_config).")
                    .Register(r)),
        generation(prometheus::BuildGauge()
                       .Name("errshim_catalog_generation")
                       .Help("Generation of the catalog current after the last reload (1: the first).")
                       .Register(r)
                       .Add({})),
        entries(prometheus::BuildGauge()
                    .Name("errshim_catalog_entries")
                    .Help("Entries of the catalog current after the last reload.")
                    .Register(r)
                    .Add({})),
        latency_recognised(latency.Add({{"result", "recognised"}}, options.latency_buckets)),
        latency_unrecognised(latency.Add({{"result", "unrecognised"}}, options.latency_buckets)),
        other(unrecognised.Add({{"class", "other"}, {"fingerprint", "other"}})) {}

  prometheus::Counter& bucket(const UnrecognisedLabels& f) {
    std::lock_guard<std::mutex> lock(mutex);
    const std::string key = f.error_class + '\n' + f.fingerprint;
    if (auto it = buckets.find(key); it != buckets.end()) return *it->second;
    if (buckets.size() >= options.fingerprint_buckets) return other;
    prometheus::Counter& c = unrecognised.Add({{"class", f.error_class}, {"fingerprint", f.fingerprint}});
    buckets.emplace(key, &c);
    return c;
  }
};

PrometheusMetrics::PrometheusMetrics(prometheus::Registry& registry, PrometheusOptions options)
    : impl_(std::make_unique<Impl>(registry, std::move(options))) {}

PrometheusMetrics::~PrometheusMetrics() = default;

void PrometheusMetrics::attach(Policy& policy) {
  policy.on_decision = [previous = std::move(policy.on_decision), this](const Decision& d) {
    if (previous) previous(d);
    observe(d);
  };
  policy.on_match = [previous = std::move(policy.on_match), this](const MatchEvent& e) {
    if (previous) previous(e);
    if (impl_->attached->load(std::memory_order_acquire) == 0) observe(e);
  };
}

ObserverHandle PrometheusMetrics::attach() {
  // The count of attachments drops when the observer is destroyed, that is
  // once the handle has unregistered it.
  struct Held {
    explicit Held(std::shared_ptr<std::atomic<int>> c) : count(std::move(c)) { count->fetch_add(1); }
    ~Held() { count->fetch_sub(1); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    std::shared_ptr<std::atomic<int>> count;
  };
  auto held = std::make_shared<Held>(impl_->attached);
  return observe_lookups([held = std::move(held), this](const MatchEvent& e) {
    impl_->lookups.Add({{"site", std::string(to_string(e.site))}}).Increment();
    observe(e);
  });
}

void PrometheusMetrics::observe(const Decision& d) {
  using O = Decision::Outcome;
  impl_->decisions.Add({{"entry", d.entry_id}, {"outcome", std::string(to_string(d.outcome))}}).Increment();
  const char* ended = nullptr;
  switch (d.outcome) {
    case O::applied:
      impl_->attempts
          .Add({{"entry", d.entry_id}, {"safety", d.fix ? std::string(to_string(d.fix->safety)) : std::string("-")}})
          .Increment();
      break;
    case O::succeeded: ended = "succeeded"; break;
    case O::gave_up:
      // Decision::attempt counts calls of the build function: a give-up on
      // the first call came before any fix was applied.
      ended = d.attempt > 1 ? "failed" : "no_fix";
      break;
    default: break;
  }
  if (ended) impl_->remediations.Add({{"entry", d.entry_id}, {"outcome", ended}}).Increment();
}

void PrometheusMetrics::observe(const MatchEvent& e) {
  const double seconds = std::chrono::duration<double>(e.elapsed).count();
  if (e.diagnosis) {
    impl_->latency_recognised.Observe(seconds);
    return;
  }
  impl_->latency_unrecognised.Observe(seconds);
  impl_->bucket(unrecognised_labels(e.text)).Increment();
}

void PrometheusMetrics::observe(const ReloadReport& r) {
  if (r.outcome == ReloadReport::Outcome::unchanged) return;
  impl_->reloads.Add({{"outcome", r.outcome == ReloadReport::Outcome::swapped ? "swapped" : "refused"}}).Increment();
  impl_->generation.Set(static_cast<double>(r.generation));
  impl_->entries.Set(static_cast<double>(r.entries));
}

}  // namespace errshim
