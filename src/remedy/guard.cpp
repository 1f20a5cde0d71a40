#include "errshim/guard.hpp"

#include <stdexcept>

#include "errshim/observer.hpp"
#include "errshim/catalog.hpp"
#include "observer_internal.hpp"

namespace errshim {

namespace {
// Appends what() of `error` and of every exception nested inside it.
void collect(std::exception_ptr error, std::string& out, int depth) {
  if (!error || depth > 16) return;  // bound a pathological nesting chain
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    if (depth == 0)
      out += e.what();
    else
      out += "\nCaused by: " + std::string(e.what());
    if (auto* nested = dynamic_cast<const std::nested_exception*>(&e)) collect(nested->nested_ptr(), out, depth + 1);
  } catch (...) {}
}
}  // namespace

std::string exception_text(std::exception_ptr error) {
  std::string out;
  try {
    collect(error, out, 0);
  } catch (...) {}
  return out;
}

void rethrow_translated(const Catalog& catalog) {
  detail::rethrow_translated_at(LookupSite::rethrow_translated, &catalog, Context{});
}

void rethrow_translated(const Catalog& catalog, const Context& context) {
  detail::rethrow_translated_at(LookupSite::rethrow_translated, &catalog, context);
}

void rethrow_translated() { detail::rethrow_translated_at(LookupSite::rethrow_translated, nullptr, Context{}); }

namespace detail {

void rethrow_translated_at(LookupSite site, const Catalog* catalog, const Context& context) {
  std::exception_ptr current = std::current_exception();
  if (!current) throw std::logic_error("errshim::rethrow_translated called outside a catch block");
  CatalogPtr embedded;
  if (catalog == nullptr) {
    try {
      embedded = Catalog::embedded();
    } catch (...) {
      // Never replace the host's error with one of ours.
    }
    if (!embedded) std::rethrow_exception(current);
    catalog = embedded.get();
  }
  std::optional<Diagnosis> d;
  try {
    std::rethrow_exception(current);
  } catch (const translated_error&) {
    throw;  // already explained; translating twice would bury the original
  } catch (const std::exception&) {
    const std::string text = exception_text(current);
    const LookupClock clock;
    MatchResult m = catalog->match(text, context);
    clock.report(site, text, m.diagnosis ? &*m.diagnosis : nullptr, &m.problems);
    d = std::move(m.diagnosis);
  } catch (...) {
    // Not a std::exception: errshim cannot read it, so it passes untouched.
  }
  if (!d) std::rethrow_exception(current);
  // Constructed while `current` is being handled by our caller, so
  // std::nested_exception captures it.
  throw translated_error(std::move(*d));
}

}  // namespace detail

std::optional<Diagnosis> diagnose(std::string_view message, const Catalog& catalog, const Context& context) noexcept {
  const detail::LookupClock clock;
  MatchResult m = catalog.match(message, context);
  clock.report(LookupSite::diagnose, message, m.diagnosis ? &*m.diagnosis : nullptr, &m.problems);
  return std::move(m.diagnosis);
}

std::optional<Diagnosis> diagnose(std::string_view message) noexcept {
  CatalogPtr catalog;
  try {
    catalog = Catalog::embedded();
  } catch (...) {
    return std::nullopt;
  }
  return diagnose(message, *catalog);
}

}  // namespace errshim
