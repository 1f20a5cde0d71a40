// The three ways to call errshim around an inference layer.
//
//   (1) auto model = errshim::guard([&] { return load_model(cfg); });
//   (2) try { step(); } catch (...) { errshim::rethrow_translated(); }
//   (3) if (auto d = errshim::diagnose(stderr_text)) { ... }
//
// (1) and (2) throw errshim::translated_error for a recognised message and
// rethrow anything else unchanged (same object, same type), including throws
// that are not std::exception. (3) never throws. Each lookup they make is
// reported to the observers of errshim/observer.hpp.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "errshim/context.hpp"
#include "errshim/diagnosis.hpp"
#include "errshim/error.hpp"
#include "errshim/observer.hpp"

namespace errshim {

class Catalog;  // errshim/catalog.hpp: a guard only passes it on

// Must be called while an exception is being handled (inside catch). Throws
// translated_error with the current exception nested, or rethrows the current
// exception unchanged when the catalog does not recognise it. An exception
// already translated is rethrown as it is. Outside a handler it throws
// std::logic_error.
[[noreturn]] void rethrow_translated(const Catalog& catalog, const Context& context);
[[noreturn]] void rethrow_translated(const Catalog& catalog);
[[noreturn]] void rethrow_translated();  // the embedded catalog

// The text errshim matches for an exception: what(), followed by the what()
// of each nested exception as a "Caused by:" chain. Empty when the exception
// is not a std::exception.
std::string exception_text(std::exception_ptr error);

namespace detail {
// rethrow_translated(), its lookup reported as made at `site`; a null
// catalog is the embedded one.
[[noreturn]] void rethrow_translated_at(LookupSite site, const Catalog* catalog, const Context& context);
}  // namespace detail

// Calls f() and returns its value; on a throw, translates as above.
// The happy path is the plain call inside a try block: no allocation, no lookup.
template <class F>
std::invoke_result_t<F&> guard(F&& f, const Catalog& catalog) {
  try {
    return std::invoke(f);
  } catch (...) {
    detail::rethrow_translated_at(LookupSite::guard, &catalog, Context{});
  }
}

// With what the host knows (library versions, device): entries scoped to it
// are preferred, entries it contradicts are passed over.
template <class F>
std::invoke_result_t<F&> guard(F&& f, const Catalog& catalog, const Context& context) {
  try {
    return std::invoke(f);
  } catch (...) {
    detail::rethrow_translated_at(LookupSite::guard, &catalog, context);
  }
}

template <class F>
std::invoke_result_t<F&> guard(F&& f) {
  try {
    return std::invoke(f);
  } catch (...) {
    detail::rethrow_translated_at(LookupSite::guard, nullptr, Context{});
  }
}

// Diagnoses an error string (from a C API, an FFI boundary, a worker's
// stderr). Never throws: a broken input is simply not matched.
[[nodiscard]] std::optional<Diagnosis> diagnose(std::string_view message, const Catalog& catalog,
                                                const Context& context = {}) noexcept;
[[nodiscard]] std::optional<Diagnosis> diagnose(std::string_view message) noexcept;  // the embedded catalog

}  // namespace errshim
