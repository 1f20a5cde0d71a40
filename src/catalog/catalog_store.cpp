#include "errshim/catalog_store.hpp"

#include <algorithm>
#include <atomic>
#include <new>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "catalog_store_hooks.hpp"
#include "errshim/lint.hpp"
#include "problem.hpp"

namespace errshim {

namespace detail {
std::atomic<StoreHook> catalog_store_hook{nullptr};
}  // namespace detail

namespace {

void hook(detail::StoreHookPoint point) {
  if (const detail::StoreHook h = detail::catalog_store_hook.load(std::memory_order_acquire)) h(point);
}

// The reload lock; a test hears when a reload has to wait for another.
std::unique_lock<std::mutex> lock_reloads(std::mutex& m) {
  std::unique_lock<std::mutex> lock(m, std::try_to_lock);
  if (!lock.owns_lock()) {
    hook(detail::StoreHookPoint::lock_contended);
    lock.lock();
  }
  return lock;
}

}  // namespace

// A catalog and its generation, swapped as one so a reader never pairs a
// catalog with another one's number.
struct CatalogStore::Snapshot {
  CatalogPtr catalog;
  std::uint64_t generation = 0;
};

// What the watched files looked like: one row per path, and per catalog file
// inside a watched folder.
struct CatalogStore::Watched {
  struct Row {
    std::string path;
    bool exists = false;
    std::filesystem::file_time_type mtime{};
    std::uintmax_t size = 0;
    bool operator==(const Row& o) const {
      return path == o.path && exists == o.exists && mtime == o.mtime && size == o.size;
    }
  };
  std::vector<Row> rows;

  static Watched of(const std::vector<std::filesystem::path>& paths) {
    namespace fs = std::filesystem;
    Watched w;
    auto add = [&w](const fs::path& p) {
      std::error_code ec;
      Row row;
      row.path = p.string();
      row.exists = fs::exists(p, ec);
      if (row.exists) {
        row.mtime = fs::last_write_time(p, ec);
        if (fs::is_regular_file(p, ec)) row.size = fs::file_size(p, ec);
      }
      w.rows.push_back(std::move(row));
    };
    for (const fs::path& p : paths) {
      add(p);  // a folder's own time changes when a file is added or removed
      std::error_code ec;
      if (!fs::is_directory(p, ec)) continue;
      std::vector<fs::path> files;
      for (const auto& de : fs::directory_iterator(p, ec)) {
        const auto ext = de.path().extension();
        if (ext == ".yaml" || ext == ".yml") files.push_back(de.path());
      }
      std::sort(files.begin(), files.end());
      for (const fs::path& f : files) add(f);
    }
    return w;
  }
};

std::string ReloadReport::to_string() const {
  std::string out;
  switch (outcome) {
    case Outcome::swapped:
      out = fmt::format("catalog reloaded: generation {}, {} entries", generation, entries);
      if (!problems.empty()) out += fmt::format(", {} lint problem(s) accepted", problems.size());
      break;
    case Outcome::refused:
      out = fmt::format("catalog reload refused ({} problem(s)); generation {} stays current", problems.size(),
                        generation);
      break;
    case Outcome::unchanged:
      out = fmt::format("catalog files unchanged; generation {} stays current", generation);
      break;
  }
  for (const Problem& p : problems) out += "\n  " + p.to_string();
  return out;
}

CatalogStore::CatalogStore(CatalogPtr initial)
    : snapshot_(std::make_shared<const Snapshot>(Snapshot{initial ? std::move(initial) : Catalog::embedded(), 1})) {}

CatalogStore::~CatalogStore() = default;

CatalogPtr CatalogStore::current() const noexcept { return std::atomic_load(&snapshot_)->catalog; }

std::uint64_t CatalogStore::generation() const noexcept { return std::atomic_load(&snapshot_)->generation; }

MatchResult CatalogStore::match(std::string_view message, const Context& context) const noexcept {
  // The catalog is held for the whole call, so a swap during it is harmless.
  return current()->match(message, context);
}

std::optional<Diagnosis> CatalogStore::diagnose(std::string_view message, const Context& context) const noexcept {
  return current()->diagnose(message, context);
}

ReloadReport CatalogStore::load(const CatalogBuilder& builder, const ReloadOptions& options) {
  ReloadReport report;
  report.outcome = ReloadReport::Outcome::refused;
  const std::shared_ptr<const Snapshot> old = std::atomic_load(&snapshot_);
  report.generation = old->generation;
  report.entries = old->catalog->size();

  CatalogPtr next;
  try {
    next = builder.build();
  } catch (const catalog_error& e) {
    report.problems = e.problems();
    return report;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    report.problems.push_back(detail::file_problem({}, fmt::format("the catalog could not be built: {}", e.what())));
    return report;
  }
  // Every regex compiled now: a broken one refuses the reload, and requests
  // after the swap do not pay for compiling.
  report.problems = next->compile_all();
  if (!report.problems.empty()) return report;
  report.problems = lint(*next);
  if (!report.problems.empty() && !options.accept_lint_problems) return report;

  std::atomic_store(&snapshot_, std::shared_ptr<const Snapshot>(
                                    std::make_shared<const Snapshot>(Snapshot{next, old->generation + 1})));
  report.outcome = ReloadReport::Outcome::swapped;
  report.generation = old->generation + 1;
  report.entries = next->size();
  return report;
}

ReloadReport CatalogStore::reload(const CatalogBuilder& builder, const ReloadOptions& options) {
  const auto lock = lock_reloads(reload_mutex_);
  return load(builder, options);
}

ReloadReport CatalogStore::reload_paths(std::vector<std::filesystem::path> paths, bool with_embedded,
                                        const ReloadOptions& options) {
  const auto lock = lock_reloads(reload_mutex_);
  return reload_paths_locked(std::move(paths), with_embedded, options);
}

ReloadReport CatalogStore::reload_paths_locked(std::vector<std::filesystem::path> paths, bool with_embedded,
                                               const ReloadOptions& options) {
  // The fingerprint is taken before reading: a file written during the load
  // changes again afterwards, so the next reload_if_changed() picks it up.
  watched_ = std::make_unique<Watched>(Watched::of(paths));
  paths_ = std::move(paths);
  with_embedded_ = with_embedded;
  CatalogBuilder builder;
  if (with_embedded_) builder.add_embedded();
  for (const auto& p : paths_) builder.add_path(p);
  return load(builder, options);
}

ReloadReport CatalogStore::reload_if_changed(const ReloadOptions& options) {
  // One critical section from the check to the swap: were the lock let go
  // in between, a reload_paths() running then would be undone by this
  // reload of the paths it replaced.
  const auto lock = lock_reloads(reload_mutex_);
  if (!watched_ || Watched::of(paths_).rows == watched_->rows) {
    ReloadReport report;
    const std::shared_ptr<const Snapshot> now = std::atomic_load(&snapshot_);
    report.generation = now->generation;
    report.entries = now->catalog->size();
    return report;
  }
  hook(detail::StoreHookPoint::reload_decided);
  return reload_paths_locked(paths_, with_embedded_, options);
}

}  // namespace errshim
