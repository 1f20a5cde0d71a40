// The C interface (include/errshim/c_api.h) over the C++ API.
//
// Every exported function is noexcept and funnels its work through
// boundary(), which turns each exception into a status and a message: a C,
// Rust or Python caller cannot unwind a C++ exception, so none may escape.

#include "errshim/c_api.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "errshim/catalog.hpp"
#include "errshim/catalog_store.hpp"
#include "errshim/config.hpp"
#include "errshim/context.hpp"
#include "errshim/fingerprint.hpp"
#include "errshim/observer.hpp"
#include "errshim/remediation.hpp"
#include "errshim/render.hpp"
#include "errshim/version.hpp"
#include "json.hpp"
#include "observer_internal.hpp"
#include "render_internal.hpp"

// The handles. They live outside any namespace because the C header declares
// them as global incomplete structs.

struct errshim_catalog {
  // An add is a CatalogStore reload: built, compiled and linted before the
  // swap, and a catalog that fails any of that leaves the current one in
  // place. Adds are serialised; readers take the store's current catalog
  // and never wait for an add nor see half of one.
  explicit errshim_catalog(errshim::CatalogPtr initial) : store(std::move(initial)) {}
  std::mutex add_mutex;
  errshim::CatalogBuilder builder;  // every layer so far: an add rebuilds from all of them
  errshim::CatalogStore store;
};

struct errshim_diagnosis {
  std::optional<errshim::Diagnosis> diagnosis;
  std::vector<std::string> problems;
};

struct errshim_observer {
  errshim::ObserverHandle handle;
};

struct errshim_fix {
  errshim_diagnosis diagnosis;
  bool applied = false;
  std::string config;
  std::string format;
  int step = -1;
  std::string step_text;
  std::string safety;
  std::vector<errshim::Change> changes;
  std::vector<errshim::Decision> decisions;
};

namespace {

// A failure whose status is known where it is detected (bad input, a
// refused policy), as opposed to one mapped from a library exception.
struct c_api_failure {
  errshim_status status;
  std::string message;
};

// malloc so that a failure to copy can be reported as NULL without throwing.
char* copy_string(std::string_view s) noexcept {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out == nullptr) return nullptr;
  if (!s.empty()) std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  return out;
}

void set_error(char** error, std::string_view message) noexcept {
  if (error != nullptr) *error = copy_string(message);
}

std::string problems_text(const errshim::catalog_error& e) {
  std::string out;
  for (const auto& p : e.problems()) {
    if (!out.empty()) out += '\n';
    out += p.to_string();
  }
  return out.empty() ? std::string(e.what()) : out;
}

template <class F>
errshim_status boundary(char** error, F&& body) noexcept {
  if (error != nullptr) *error = nullptr;
  try {
    return body();
  } catch (const c_api_failure& e) {
    set_error(error, e.message);
    return e.status;
  } catch (const errshim::catalog_error& e) {
    try {
      set_error(error, problems_text(e));
    } catch (...) {
      set_error(error, e.what());
    }
    return ERRSHIM_CATALOG_ERROR;
  } catch (const errshim::config_error& e) {
    set_error(error, e.what());
    return ERRSHIM_CONFIG_ERROR;
  } catch (const std::bad_alloc&) {
    set_error(error, "out of memory");
    return ERRSHIM_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_error(error, e.what());
    return ERRSHIM_INTERNAL_ERROR;
  } catch (...) {
    set_error(error, "unknown exception inside errshim");
    return ERRSHIM_INTERNAL_ERROR;
  }
}

std::string_view text_of(const char* text, std::size_t length) {
  if (text == nullptr) return {};
  return length == ERRSHIM_NUL_TERMINATED ? std::string_view(text) : std::string_view(text, length);
}

void require(bool ok, const char* what) {
  if (!ok) throw c_api_failure{ERRSHIM_INVALID_ARGUMENT, what};
}

errshim::Context parse_context(const char* text) {
  if (text == nullptr || *text == '\0') return {};
  try {
    return errshim::Context::parse(text);
  } catch (const std::invalid_argument& e) {
    throw c_api_failure{ERRSHIM_INVALID_ARGUMENT, fmt::format("context: {}", e.what())};
  }
}

// "a, b,,c" -> {"a", "b", "c"}: blanks around items and empty items are
// forgiven, since these lists are typed by people.
std::vector<std::string> comma_list(const char* text) {
  std::vector<std::string> out;
  if (text == nullptr) return out;
  std::string_view rest(text);
  while (true) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) return out;
    rest.remove_prefix(comma + 1);
  }
}

std::shared_ptr<const errshim::Catalog> catalog_of(const errshim_catalog* c) {
  if (c == nullptr) return errshim::Catalog::embedded();
  return c->store.current();
}

// Swaps in `next` (the catalog's layers plus one) when it builds and lints
// clean; else the catalog stays as it was and the problems are the error.
errshim_status add_layer(errshim_catalog& catalog, errshim::CatalogBuilder next) {
  const errshim::ReloadReport report = catalog.store.reload(next);
  if (!report.ok()) throw errshim::catalog_error(report.problems);
  catalog.builder = std::move(next);
  return ERRSHIM_OK;
}

// Literals, so the pointers handed out are NUL-terminated and static.
const char* safety_name(errshim::Safety s) noexcept {
  switch (s) {
    case errshim::Safety::safe: return "safe";
    case errshim::Safety::slower: return "slower";
    case errshim::Safety::changes_output: return "changes-output";
    case errshim::Safety::manual: return "manual";
  }
  return "manual";
}

const errshim::Entry* entry_of(const errshim_diagnosis* d) noexcept {
  return (d != nullptr && d->diagnosis && d->diagnosis->entry) ? d->diagnosis->entry.get() : nullptr;
}

// A lent field of the matched entry: "" when unmatched, NULL for no handle.
template <class Get>
const char* entry_field(const errshim_diagnosis* d, Get get) noexcept {
  if (d == nullptr) return nullptr;
  const errshim::Entry* e = entry_of(d);
  return e != nullptr ? get(*e).c_str() : "";
}

errshim::Policy parse_policy(const char* allowed, const char* pinned, errshim::Context context) {
  errshim::Policy policy;
  policy.mode = errshim::Mode::automatic;
  policy.context = std::move(context);
  const std::vector<std::string> classes = comma_list(allowed);
  if (!classes.empty()) {
    policy.allowed.clear();
    for (const std::string& name : classes) {
      const auto s = errshim::parse_safety(name);
      if (!s)
        throw c_api_failure{ERRSHIM_INVALID_ARGUMENT,
                            fmt::format("allowed: unknown safety class '{}' (safe, slower, changes-output)", name)};
      if (*s == errshim::Safety::manual)
        throw c_api_failure{ERRSHIM_INVALID_ARGUMENT, "allowed: 'manual' fixes need a person and are never applied"};
      policy.allowed.insert(*s);
    }
  }
  for (std::string& key : comma_list(pinned)) policy.pinned_keys.insert(std::move(key));
  return policy;
}

}  // namespace

extern "C" {

const char* errshim_status_name(errshim_status status) {
  switch (status) {
    case ERRSHIM_OK: return "ok";
    case ERRSHIM_NO_MATCH: return "no-match";
    case ERRSHIM_NO_FIX: return "no-fix";
    case ERRSHIM_INVALID_ARGUMENT: return "invalid-argument";
    case ERRSHIM_CATALOG_ERROR: return "catalog-error";
    case ERRSHIM_CONFIG_ERROR: return "config-error";
    case ERRSHIM_OUT_OF_MEMORY: return "out-of-memory";
    case ERRSHIM_INTERNAL_ERROR: return "internal-error";
    case ERRSHIM_STATUS_MAX_ENUM: break;
  }
  return "unknown";
}

const char* errshim_version(void) { return errshim::version(); }

void errshim_string_free(char* text) { std::free(text); }

// ------------------------------------------------------------------ catalogs

errshim_status errshim_catalog_new(int with_embedded, errshim_catalog** out, char** error) {
  if (out != nullptr) *out = nullptr;
  return boundary(error, [&] {
    require(out != nullptr, "errshim_catalog_new: out is NULL");
    errshim::CatalogBuilder builder;
    if (with_embedded != 0) builder.add_embedded();
    // The embedded catalog is built once per process: shared, not rebuilt.
    auto c = std::make_unique<errshim_catalog>(with_embedded != 0 ? errshim::Catalog::embedded() : builder.build());
    c->builder = std::move(builder);
    *out = c.release();
    return ERRSHIM_OK;
  });
}

errshim_status errshim_catalog_add_path(errshim_catalog* catalog, const char* path, char** error) {
  return boundary(error, [&] {
    require(catalog != nullptr, "errshim_catalog_add_path: catalog is NULL");
    require(path != nullptr && *path != '\0', "errshim_catalog_add_path: path is NULL or empty");
    const std::lock_guard<std::mutex> lock(catalog->add_mutex);
    errshim::CatalogBuilder next = catalog->builder;
    next.add_path(path);
    return add_layer(*catalog, std::move(next));
  });
}

errshim_status errshim_catalog_add_yaml(errshim_catalog* catalog, const char* yaml, size_t length, const char* name,
                                        char** error) {
  return boundary(error, [&] {
    require(catalog != nullptr, "errshim_catalog_add_yaml: catalog is NULL");
    require(yaml != nullptr, "errshim_catalog_add_yaml: yaml is NULL");
    const std::lock_guard<std::mutex> lock(catalog->add_mutex);
    errshim::CatalogBuilder next = catalog->builder;
    next.add_yaml(std::string(text_of(yaml, length)), name != nullptr && *name != '\0' ? name : "<string>");
    return add_layer(*catalog, std::move(next));
  });
}

size_t errshim_catalog_size(const errshim_catalog* catalog) {
  if (catalog == nullptr) return 0;
  return catalog->store.current()->size();
}

void errshim_catalog_free(errshim_catalog* catalog) { delete catalog; }

// ----------------------------------------------------------------- diagnosis

errshim_status errshim_diagnose(const errshim_catalog* catalog, const char* message, size_t length, const char* context,
                                errshim_diagnosis** out, char** error) {
  if (out != nullptr) *out = nullptr;
  return boundary(error, [&] {
    require(out != nullptr, "errshim_diagnose: out is NULL");
    require(message != nullptr || length == 0, "errshim_diagnose: message is NULL");
    const errshim::Context ctx = parse_context(context);
    const auto c = catalog_of(catalog);
    const std::string_view text = text_of(message, length);
    const errshim::detail::LookupClock clock;
    errshim::MatchResult r = c->match(text, ctx);
    clock.report(errshim::LookupSite::c_api_diagnose, text, r.diagnosis ? &*r.diagnosis : nullptr, &r.problems);
    auto d = std::make_unique<errshim_diagnosis>();
    d->diagnosis = std::move(r.diagnosis);
    d->problems = std::move(r.problems);
    const bool matched = d->diagnosis.has_value();
    *out = d.release();
    return matched ? ERRSHIM_OK : ERRSHIM_NO_MATCH;
  });
}

void errshim_diagnosis_free(errshim_diagnosis* diagnosis) { delete diagnosis; }

int errshim_diagnosis_matched(const errshim_diagnosis* diagnosis) { return entry_of(diagnosis) != nullptr ? 1 : 0; }

char* errshim_diagnosis_json(const errshim_diagnosis* diagnosis) {
  try {
    if (entry_of(diagnosis) == nullptr) return copy_string(errshim::unmatched_json());
    return copy_string(errshim::to_json(*diagnosis->diagnosis));
  } catch (...) {
    return nullptr;  // to_json only throws bad_alloc
  }
}

const char* errshim_diagnosis_id(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.id; });
}
const char* errshim_diagnosis_cause(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.cause; });
}
const char* errshim_diagnosis_trigger(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.trigger; });
}
const char* errshim_diagnosis_library(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.library; });
}
const char* errshim_diagnosis_kind(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.kind; });
}
const char* errshim_diagnosis_severity(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.severity; });
}
const char* errshim_diagnosis_source_repo(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.source.repo; });
}
const char* errshim_diagnosis_source_path(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.source.path; });
}
const char* errshim_diagnosis_source_commit(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.source.commit; });
}
const char* errshim_diagnosis_source_symbol(const errshim_diagnosis* d) {
  return entry_field(d, [](const errshim::Entry& e) -> const std::string& { return e.source.symbol; });
}
int errshim_diagnosis_source_line(const errshim_diagnosis* d) {
  const errshim::Entry* e = entry_of(d);
  return e != nullptr ? e->source.line : 0;
}

const char* errshim_diagnosis_message(const errshim_diagnosis* d) {
  if (d == nullptr) return nullptr;
  return d->diagnosis ? d->diagnosis->segment.c_str() : "";
}
const char* errshim_diagnosis_exception_class(const errshim_diagnosis* d) {
  if (d == nullptr) return nullptr;
  return d->diagnosis ? d->diagnosis->exception_class.c_str() : "";
}

size_t errshim_diagnosis_remediation_count(const errshim_diagnosis* d) {
  const errshim::Entry* e = entry_of(d);
  return e != nullptr ? e->remediation.size() : 0;
}
const char* errshim_diagnosis_remediation(const errshim_diagnosis* d, size_t index) {
  const errshim::Entry* e = entry_of(d);
  return (e != nullptr && index < e->remediation.size()) ? e->remediation[index].text.c_str() : nullptr;
}
const char* errshim_diagnosis_remediation_safety(const errshim_diagnosis* d, size_t index) {
  const errshim::Entry* e = entry_of(d);
  if (e == nullptr || index >= e->remediation.size() || !e->remediation[index].fix) return nullptr;
  return safety_name(e->remediation[index].fix->safety);
}

size_t errshim_diagnosis_capture_count(const errshim_diagnosis* d) {
  return entry_of(d) != nullptr ? d->diagnosis->captures.size() : 0;
}
const char* errshim_diagnosis_capture_name(const errshim_diagnosis* d, size_t index) {
  if (entry_of(d) == nullptr || index >= d->diagnosis->captures.size()) return nullptr;
  return d->diagnosis->captures[index].name.c_str();
}
const char* errshim_diagnosis_capture_value(const errshim_diagnosis* d, size_t index) {
  if (entry_of(d) == nullptr || index >= d->diagnosis->captures.size()) return nullptr;
  return d->diagnosis->captures[index].value.c_str();
}
const char* errshim_diagnosis_capture(const errshim_diagnosis* d, const char* name) {
  if (entry_of(d) == nullptr || name == nullptr) return nullptr;
  const std::string* v = d->diagnosis->capture(name);
  return v != nullptr ? v->c_str() : nullptr;
}

size_t errshim_diagnosis_problem_count(const errshim_diagnosis* d) { return d != nullptr ? d->problems.size() : 0; }
const char* errshim_diagnosis_problem(const errshim_diagnosis* d, size_t index) {
  return (d != nullptr && index < d->problems.size()) ? d->problems[index].c_str() : nullptr;
}

// ---------------------------------------------------------------- config fix

errshim_status errshim_fix_config(const errshim_catalog* catalog, const char* message, size_t message_length,
                                  const char* context, const char* config, size_t config_length, const char* allowed,
                                  const char* pinned, errshim_fix** out, char** error) {
  return errshim_fix_config_skipping(catalog, message, message_length, context, config, config_length, allowed, pinned,
                                     nullptr, out, error);
}

errshim_status errshim_fix_config_skipping(const errshim_catalog* catalog, const char* message, size_t message_length,
                                           const char* context, const char* config, size_t config_length,
                                           const char* allowed, const char* pinned, const char* skip, errshim_fix** out,
                                           char** error) {
  if (out != nullptr) *out = nullptr;
  return boundary(error, [&] {
    require(out != nullptr, "errshim_fix_config: out is NULL");
    std::set<std::size_t> skip_steps;
    for (const std::string& part : comma_list(skip)) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(part.c_str(), &end, 10);
      if (part[0] < '0' || part[0] > '9' || *end != '\0')
        throw c_api_failure{
            ERRSHIM_INVALID_ARGUMENT,
            fmt::format("errshim_fix_config_skipping: skip lists 0-based step numbers, not '{}'", part)};
      skip_steps.insert(n);
    }
    require(message != nullptr || message_length == 0, "errshim_fix_config: message is NULL");
    require(config != nullptr, "errshim_fix_config: config is NULL");
    const errshim::Context ctx = parse_context(context);
    const errshim::Policy policy = parse_policy(allowed, pinned, ctx);
    // Parse first: a config that cannot be read is the caller's first problem,
    // whatever the message says.
    const errshim::ConfigTree tree = errshim::ConfigTree::parse(text_of(config, config_length), "<config>");
    auto r = std::make_unique<errshim_fix>();
    r->format = tree.format() == errshim::ConfigTree::Format::json ? "json" : "yaml";
    r->config = std::string(text_of(config, config_length));

    const std::string_view text = text_of(message, message_length);
    const errshim::detail::LookupClock clock;
    errshim::MatchResult m = catalog_of(catalog)->match(text, ctx);
    clock.report(errshim::LookupSite::c_api_fix_config, text, m.diagnosis ? &*m.diagnosis : nullptr, &m.problems);
    r->diagnosis.diagnosis = std::move(m.diagnosis);
    r->diagnosis.problems = std::move(m.problems);
    if (!r->diagnosis.diagnosis) {
      *out = r.release();
      return ERRSHIM_NO_MATCH;
    }
    // As remediate() does: when text elsewhere in the message (a quoted or
    // echoed error) won the match, the root-cause message alone is fixed.
    if (auto root = errshim::root_cause_diagnosis(*catalog_of(catalog), *r->diagnosis.diagnosis, ctx))
      r->diagnosis.diagnosis = std::move(root);
    const errshim::Diagnosis& d = *r->diagnosis.diagnosis;
    errshim::ConfigTree scratch = tree;
    errshim::FixChoice choice = errshim::choose_fix(d, scratch, policy, skip_steps);
    r->decisions = std::move(choice.decisions);
    // suggest_only cannot come back with mode automatic and no suggest
    // classes, but a suggestion is not an application either way.
    if (choice.step && !choice.suggest_only) {
      const errshim::Remediation& step = d.entry->remediation.at(*choice.step);
      r->applied = true;
      r->step = static_cast<int>(*choice.step);
      r->step_text = step.text;
      r->safety = step.fix ? safety_name(step.fix->safety) : "";
      r->changes = std::move(choice.changes);
      r->config = scratch.dump();
    }
    const bool applied = r->applied;
    *out = r.release();
    return applied ? ERRSHIM_OK : ERRSHIM_NO_FIX;
  });
}

void errshim_fix_free(errshim_fix* fix) { delete fix; }

int errshim_fix_applied(const errshim_fix* fix) { return (fix != nullptr && fix->applied) ? 1 : 0; }
const char* errshim_fix_config_text(const errshim_fix* fix) { return fix != nullptr ? fix->config.c_str() : nullptr; }
const char* errshim_fix_format(const errshim_fix* fix) { return fix != nullptr ? fix->format.c_str() : nullptr; }
const char* errshim_fix_entry_id(const errshim_fix* fix) {
  return fix != nullptr ? errshim_diagnosis_id(&fix->diagnosis) : nullptr;
}
int errshim_fix_step(const errshim_fix* fix) { return fix != nullptr ? fix->step : -1; }
const char* errshim_fix_step_text(const errshim_fix* fix) { return fix != nullptr ? fix->step_text.c_str() : nullptr; }
const char* errshim_fix_safety(const errshim_fix* fix) { return fix != nullptr ? fix->safety.c_str() : nullptr; }
const errshim_diagnosis* errshim_fix_diagnosis(const errshim_fix* fix) {
  return entry_of(fix != nullptr ? &fix->diagnosis : nullptr) != nullptr ? &fix->diagnosis : nullptr;
}

char* errshim_fix_json(const errshim_fix* fix) {
  if (fix == nullptr) return nullptr;
  try {
    const errshim::Entry* e = entry_of(&fix->diagnosis);
    std::string out;
    errshim::detail::JsonWriter w(out);
    w.begin_object().field("applied", fix->applied);
    if (e != nullptr)
      w.field("entry", e->id);
    else
      w.key("entry").null();
    if (fix->applied)
      w.field("step", fix->step).field("safety", fix->safety);
    else
      w.key("step").null().key("safety").null();
    errshim::detail::write_json(w.key("changes"), fix->changes);
    w.key("decisions").begin_array();
    for (const errshim::Decision& d : fix->decisions) errshim::detail::write_json(w, d);
    w.end_array().end_object();
    return copy_string(out);
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"

// ------------------------------------------------------------ observing lookups

namespace {

int site_value(errshim::LookupSite site) noexcept {
  switch (site) {
    case errshim::LookupSite::guard: return ERRSHIM_SITE_GUARD;
    case errshim::LookupSite::rethrow_translated: return ERRSHIM_SITE_RETHROW_TRANSLATED;
    case errshim::LookupSite::remediate: return ERRSHIM_SITE_REMEDIATE;
    case errshim::LookupSite::diagnose: return ERRSHIM_SITE_DIAGNOSE;
    case errshim::LookupSite::c_api_diagnose: return ERRSHIM_SITE_C_DIAGNOSE;
    case errshim::LookupSite::c_api_fix_config: return ERRSHIM_SITE_C_FIX_CONFIG;
  }
  return ERRSHIM_SITE_C_DIAGNOSE;
}

}  // namespace

errshim_status errshim_observe(errshim_lookup_callback callback, void* user_data, errshim_observer** out,
                               char** error) {
  if (out != nullptr) *out = nullptr;
  return boundary(error, [&] {
    require(out != nullptr, "errshim_observe: out is NULL");
    require(callback != nullptr, "errshim_observe: callback is NULL");
    auto o = std::make_unique<errshim_observer>();
    o->handle = errshim::observe_lookups([callback, user_data](const errshim::MatchEvent& e) {
      errshim_lookup lookup{};
      lookup.message = e.text.empty() ? "" : e.text.data();
      lookup.message_length = e.text.size();
      errshim::Fingerprint fingerprint;
      if (e.diagnosis != nullptr) {
        lookup.entry_id = e.diagnosis->id().c_str();
      } else {
        fingerprint = errshim::fingerprint(e.text);
        lookup.fingerprint = fingerprint.id.c_str();
        lookup.fingerprint_text = fingerprint.text.c_str();
      }
      lookup.site = site_value(e.site);
      lookup.elapsed_ns = static_cast<long long>(e.elapsed.count());
      callback(&lookup, user_data);
    });
    *out = o.release();
    return ERRSHIM_OK;
  });
}

void errshim_observer_free(errshim_observer* observer) { delete observer; }
