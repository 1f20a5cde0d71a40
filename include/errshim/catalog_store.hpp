// Hot reload: the catalog a running host matches with, replaced while it runs.
//
//   errshim::CatalogStore store;                                  // the embedded catalog
//   store.reload_paths({"/etc/errshim/patterns"});                // embedded + user files
//   ...
//   auto d = store.diagnose(message);                             // any thread, any time
//   auto v = errshim::guard([&] { return run(); }, *store.current());
//   ...
//   if (auto r = store.reload_if_changed(); !r.ok()) log(r.to_string());   // e.g. on a timer
//
// A reload builds the new catalog, compiles every regex and lints it, and
// only then swaps it in, atomically: a reader gets the old catalog or the new
// one, never a mix and never a half-built one. A reload that fails keeps the
// old catalog and says why. Readers never wait for a reload: they copy a
// shared_ptr (a few nanoseconds under a lock the reload holds only for the
// swap itself), and a catalog they hold stays valid after a swap.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/catalog.hpp"
#include "errshim/context.hpp"
#include "errshim/diagnosis.hpp"

namespace errshim {

struct ReloadOptions {
  // Swap in a catalog that builds but has lint problems (an example now won
  // by another entry, a pattern that may backtrack catastrophically). The
  // problems are still reported.
  bool accept_lint_problems = false;
};

struct ReloadReport {
  enum class Outcome {
    swapped,  // the new catalog is current
    refused,  // it did not build or did not lint clean: the old one stays
    unchanged,  // reload_if_changed: no file changed, nothing was loaded
  };
  Outcome outcome = Outcome::unchanged;
  std::uint64_t generation = 0;  // the store's generation after the call
  std::size_t entries = 0;  // entries of the catalog now current
  std::vector<Problem> problems;  // why it was refused, or lint problems accepted

  bool ok() const noexcept { return outcome != Outcome::refused; }
  // "catalog reload refused: 2 problem(s); the catalog of generation 3 stays\n  <problem>\n  ..."
  std::string to_string() const;
};

class CatalogStore {
 public:
  // Starts with `initial` (the embedded catalog when null) as generation 1.
  explicit CatalogStore(CatalogPtr initial = nullptr);
  ~CatalogStore();
  CatalogStore(const CatalogStore&) = delete;
  CatalogStore& operator=(const CatalogStore&) = delete;

  // The catalog current now. Never null; never blocks on a reload.
  CatalogPtr current() const noexcept;
  // Starts at 1, one more for each catalog swapped in.
  std::uint64_t generation() const noexcept;

  // Builds, compiles and lints the builder's catalog; swaps it in when all
  // of that is clean (see ReloadOptions). Reloads run one at a time; a
  // failed one changes nothing. Problems come back in the report: a bad
  // catalog never throws (only std::bad_alloc could).
  ReloadReport reload(const CatalogBuilder& builder, const ReloadOptions& options = {});

  // reload() of the embedded catalog (when `with_embedded`) overridden by
  // `paths` (files or folders, as CatalogBuilder::add_path), and remembers
  // them for reload_if_changed().
  ReloadReport reload_paths(std::vector<std::filesystem::path> paths, bool with_embedded = true,
                            const ReloadOptions& options = {});

  // Reloads the paths of the last reload_paths() when one of their files
  // changed since it ran (modification time, size, files added to or
  // removed from a folder); otherwise returns Outcome::unchanged. A change
  // that fails to load is reported once and tried again only after the next
  // change, so polling does not re-read a broken file.
  ReloadReport reload_if_changed(const ReloadOptions& options = {});

  // current()->match / diagnose. Never throw.
  [[nodiscard]] MatchResult match(std::string_view message, const Context& context = {}) const noexcept;
  [[nodiscard]] std::optional<Diagnosis> diagnose(std::string_view message, const Context& context = {}) const noexcept;

 private:
  struct Snapshot;
  struct Watched;

  ReloadReport load(const CatalogBuilder& builder, const ReloadOptions& options);
  // reload_paths() with reload_mutex_ held by the caller.
  ReloadReport reload_paths_locked(std::vector<std::filesystem::path> paths, bool with_embedded,
                                   const ReloadOptions& options);

  std::shared_ptr<const Snapshot> snapshot_;  // read and replaced with std::atomic_load / atomic_store
  std::mutex reload_mutex_;  // one reload at a time; readers never take it
  std::vector<std::filesystem::path> paths_;  // of the last reload_paths (under reload_mutex_)
  bool with_embedded_ = true;
  std::unique_ptr<Watched> watched_;  // their fingerprint when last loaded
};

}  // namespace errshim
