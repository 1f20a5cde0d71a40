// Acting on a diagnosis: apply a catalog fix to a copy of the user's config
// and try again, under a policy the host controls.
//
//   errshim::Policy policy;                       // auto for safe and slower fixes
//   policy.pinned_keys = {"dtype"};               // the user chose this: never override
//   auto r = errshim::remediate(cfg, [](const errshim::ConfigTree& c) { return build(c); }, policy);
//   use(r.value); save(r.config); log(r.report.to_json());
//
// The caller's config is never modified: every fix goes to a copy, and the
// copy that worked is returned. A bundle of changes applies whole or not at all.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "errshim/catalog.hpp"
#include "errshim/config.hpp"
#include "errshim/context.hpp"
#include "errshim/diagnosis.hpp"
#include "errshim/error.hpp"
#include "errshim/observer.hpp"  // MatchEvent

namespace errshim {

class Metrics;

enum class Mode {
  off,  // errshim stays out of the way: errors pass through untouched
  explain,  // enrich errors, change nothing
  suggest,  // dry run: report the fix that would be applied, change nothing
  automatic,  // apply allowed fixes and retry
};
std::string_view to_string(Mode) noexcept;
std::optional<Mode> parse_mode(std::string_view) noexcept;

// A remedy that is not a config key (fall back to manual attention, move to
// CPU): registered by the host under the name catalog fixes use in `action`.
// It may change the config copy it is given; throwing refuses the step.
using Action = std::function<void(ConfigAccess& config, const Diagnosis& diagnosis)>;

class ActionRegistry {
 public:
  ActionRegistry& add(std::string name, Action action);
  const Action* find(std::string_view name) const noexcept;

 private:
  std::map<std::string, Action, std::less<>> actions_;
};

// One change a fix made (or would make) to a config.
struct Change {
  KeyPath path;
  std::optional<Value> before;  // nullopt: the key was absent
  std::optional<Value> after;  // nullopt: the key was removed
  // The config lacked the key and the fix created it (allowed only where the
  // fix says `create`); a change of its own, worth telling the user.
  bool created = false;
};
// {"path", "before", "after", "created"}: the one JSON shape of a change (the
// audit record, errshim_fix_json, the CLI's --json).
std::string to_json(const Change& change);
std::string to_json(const std::vector<Change>& changes);  // a JSON list of those

// What errshim decided about one remediation step, or about an error.
struct Decision {
  enum class Outcome {
    applied,  // the fix was made on a config copy, the call is retried
    suggested,  // suggest mode, or a fix the policy may only suggest
    refused,  // the policy, the config or the catalog ruled the step out
    failed,  // the fix could not be made (config or host action threw)
    explained,  // explain mode, or no step was usable: the error is enriched
    succeeded,  // the call worked after the fixes so far
    gave_up,  // retry bound reached, same error again, or nothing left
    passed_through,  // not recognised (or mode off): the error went on unchanged
  };
  std::chrono::system_clock::time_point time;
  std::string entry_id;
  std::optional<std::size_t> step;  // index into the entry's remediation list
  std::optional<Fix> fix;
  Mode mode = Mode::automatic;
  Outcome outcome = Outcome::explained;
  std::string reason;  // why refused / failed / gave up
  std::vector<Change> changes;  // applied, or would apply in suggest mode
  int attempt = 0;  // which call of the build function this answers (1-based)

  // The audit record: {"time", "attempt", "entry", "step", "fix", "safety",
  // "mode", "outcome", "reason", "changes": [{"path", "before", "after", "created"}]}.
  std::string to_json() const;
};
std::string_view to_string(Decision::Outcome) noexcept;

struct Policy {
  Mode mode = Mode::automatic;
  std::map<std::string, Mode> entry_modes;  // per entry id, overrides `mode`
  // Fixes of these classes may be applied; `manual` never is (it needs a person).
  std::set<Safety> allowed = {Safety::safe, Safety::slower};
  // Fixes of these classes (not allowed above) are reported as suggestions,
  // with the changes they would make, instead of being refused.
  std::set<Safety> suggest_classes;
  std::set<std::string> allow_entries, deny_entries;  // empty allow = all
  std::set<std::string> allow_keys, deny_keys;  // key names or dotted paths; empty allow = all
  // Keys the user set on purpose: a fix that would change one is refused
  // (an explicit choice raises; only defaults may be degraded).
  std::set<std::string> pinned_keys;
  int max_retries = 3;  // fixes applied per remediate() call, at most
  const ActionRegistry* actions = nullptr;
  Context context;
  std::function<void(const Decision&)> on_decision;  // every decision, as it is made
  Metrics* metrics = nullptr;  // counters per entry and outcome
  // Every lookup of a failed call's error (site remediate; an error a guard
  // further in already translated needs none). The process-wide observers of
  // errshim/observer.hpp get the same lookups as well.
  std::function<void(const MatchEvent&)> on_match;

  Mode mode_for(std::string_view entry_id) const;
};

// The first step of `diagnosis` the policy lets errshim take on `config`.
struct FixChoice {
  std::optional<std::size_t> step;  // none: nothing usable
  std::vector<Change> changes;  // what it changes (already resolved to paths)
  std::vector<Decision> decisions;  // one per step considered, refusals with reasons
  bool suggest_only = false;  // allowed only as a suggestion (suggest mode, manual)
};

// Looks at the entry's remediation steps in catalog order and picks the first
// whose fix the policy allows and the config can take. Works on `scratch`
// (a copy the caller owns), which holds the changes when a step is chosen.
[[nodiscard]] FixChoice choose_fix(const Diagnosis& diagnosis, ConfigAccess& scratch, const Policy& policy);
// The same, never choosing the steps in `skip_steps` (0-based, of the
// diagnosis' entry): those applied before in a loop the host runs itself,
// as remediate() never applies a step twice and goes on to the next one.
[[nodiscard]] FixChoice choose_fix(const Diagnosis& diagnosis, ConfigAccess& scratch, const Policy& policy,
                                   const std::set<std::size_t>& skip_steps);

// Why a fix may not be applied automatically for `diagnosis`: its text is not
// the root cause of what the layer raised (a later chained error, a later
// line, or text after a label, quote or bracket: an echoed prompt). Empty
// when it is the root cause. choose_fix refuses every step in auto mode then.
std::string root_cause_problem(const Diagnosis& diagnosis);

// When `diagnosis` is not the root cause (a more specific text elsewhere in
// the message won), the diagnosis of the root-cause message alone, if the
// catalog knows it and it passes root_cause_problem(); else nullopt. Auto
// mode fixes that error instead of refusing outright.
std::optional<Diagnosis> root_cause_diagnosis(const Catalog& catalog, const Diagnosis& diagnosis,
                                              const Context& context = {});

// Every attempt of one remediate() call, in order.
struct RemediationReport {
  std::vector<Decision> decisions;
  std::vector<std::exception_ptr> errors;  // the error each failed attempt threw; [0] is the original
  int calls = 0;  // times the build function ran

  std::vector<Change> applied_changes() const;  // all changes, in the order made
  std::string to_json() const;  // {"calls": n, "decisions": [...]}
};

// Thrown when remediation ends without success on a recognised error: the
// enriched error of the last recognised failure, the whole history, and the
// last error nested (report().errors.front() is the first one).
class remediation_error : public translated_error {
 public:
  remediation_error(Diagnosis diagnosis, RemediationReport report, std::string summary);
  const RemediationReport& report() const noexcept { return *report_; }
  const char* what() const noexcept override { return summary_.c_str(); }

 private:
  std::shared_ptr<const RemediationReport> report_;
  std::string summary_;
};

template <class Config, class R>
struct Remediated {
  R value;
  Config config;  // the config that worked (equal to the input when no fix was needed)
  RemediationReport report;
};

template <class Config>
struct Remediated<Config, void> {
  Config config;
  RemediationReport report;
};

namespace detail {
// The non-template core of the retry loop.
class RemediationSession {
 public:
  RemediationSession(const Catalog& catalog, const Policy& policy);
  // Call inside a catch block. Returns true when `next` (a copy of the
  // config that just failed) now holds a fix worth retrying; otherwise
  // throws: the error unchanged, translated_error, or remediation_error.
  bool on_failure(ConfigAccess& next);
  void on_call() { ++report_.calls; }
  void on_success();
  RemediationReport take_report() { return std::move(report_); }

 private:
  void record(Decision d);
  [[noreturn]] void give_up(const Diagnosis& d, std::string reason);

  const Catalog& catalog_;
  const Policy& policy_;
  RemediationReport report_;
  std::set<std::pair<std::string, std::size_t>> tried_;  // (entry, step) never applied twice
  std::optional<Diagnosis> last_;  // the last recognised failure
  bool last_was_fixed_ = false;  // a fix was applied after `last_`
  int applied_ = 0;
};
}  // namespace detail

// Calls build(config); on a recognised error picks a fix (policy permitting),
// applies it to a copy and calls again, at most policy.max_retries times,
// never the same fix twice, stopping when a fix brings the same error back.
// `Config` is ConfigTree, TypedConfig<T> or any copyable ConfigAccess.
template <class Config, class F>
auto remediate(const Config& config, F&& build, const Policy& policy, const Catalog& catalog)
    -> Remediated<Config, std::invoke_result_t<F&, const Config&>> {
  static_assert(std::is_base_of_v<ConfigAccess, Config>,
                "remediate() needs a ConfigAccess (ConfigTree, TypedConfig<T>)");
  using R = std::invoke_result_t<F&, const Config&>;
  detail::RemediationSession session(catalog, policy);
  Config current = config;
  for (;;) {
    try {
      session.on_call();
      if constexpr (std::is_void_v<R>) {
        std::invoke(build, std::as_const(current));
        session.on_success();
        return {std::move(current), session.take_report()};
      } else {
        R value = std::invoke(build, std::as_const(current));
        session.on_success();
        return {std::move(value), std::move(current), session.take_report()};
      }
    } catch (...) {
      Config next = current;
      if (session.on_failure(next)) current = std::move(next);
    }
  }
}

template <class Config, class F>
auto remediate(const Config& config, F&& build, const Policy& policy = {}) {
  return remediate(config, std::forward<F>(build), policy, *Catalog::embedded());
}

}  // namespace errshim
