#include "errshim/catalog.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "catalog_loader.hpp"
#include "embedded_catalog.hpp"
#include "matcher.hpp"
#include "pattern_risk.hpp"
#include "snapshot.hpp"
#include "errshim/version.hpp"

namespace errshim {

struct Catalog::Impl {
  Impl(std::vector<std::shared_ptr<const Entry>> entries, std::vector<Problem>& problems, detail::MatchPlan plan)
      : matcher(std::move(entries), problems, std::move(plan)) {
    for (std::size_t i = 0; i < matcher.entries().size(); ++i) by_id.emplace(matcher.entries()[i]->id, i);
  }
  detail::Matcher matcher;
  std::unordered_map<std::string_view, std::size_t> by_id;  // views into the entries' ids
};

std::string_view to_string(Safety s) noexcept {
  switch (s) {
    case Safety::safe: return "safe";
    case Safety::slower: return "slower";
    case Safety::changes_output: return "changes-output";
    case Safety::manual: return "manual";
  }
  return "manual";
}

std::optional<Safety> parse_safety(std::string_view s) noexcept {
  for (Safety v : {Safety::safe, Safety::slower, Safety::changes_output, Safety::manual})
    if (to_string(v) == s) return v;
  return std::nullopt;
}

std::string Problem::to_string() const {
  std::string out = where.file.empty() ? std::string("<catalog>") : where.file;
  if (where.line > 0) out += fmt::format(":{}:{}", where.line, where.column);
  out += ": ";
  if (!entry_id.empty()) out += fmt::format("entry '{}': ", entry_id);
  out += message;
  return out;
}

namespace {
std::string describe(const std::vector<Problem>& problems) {
  if (problems.empty()) return "catalog error";
  std::string s = problems.front().to_string();
  if (problems.size() > 1) s += fmt::format(" (and {} more problem{})", problems.size() - 1, problems.size() > 2 ? "s" : "");
  return s;
}
}  // namespace

catalog_error::catalog_error(std::vector<Problem> problems)
    : std::runtime_error(describe(problems)), problems_(std::move(problems)) {}

const std::string* Diagnosis::capture(std::string_view name) const noexcept {
  for (const Capture& c : captures)
    if (c.name == name) return &c.value;
  return nullptr;
}

const std::string& Diagnosis::id() const noexcept {
  static const std::string none;
  return entry ? entry->id : none;
}

Catalog::Catalog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Catalog::~Catalog() = default;

const std::vector<std::shared_ptr<const Entry>>& Catalog::entries() const noexcept { return impl_->matcher.entries(); }

const Entry* Catalog::find(std::string_view id) const noexcept {
  auto it = impl_->by_id.find(id);
  return it == impl_->by_id.end() ? nullptr : impl_->matcher.entries()[it->second].get();
}

MatchResult Catalog::match(std::string_view message, const Context& context, const MatchOptions& options) const noexcept {
  return impl_->matcher.match(message, context, options);
}

std::optional<Diagnosis> Catalog::diagnose(std::string_view message, const Context& context) const noexcept {
  return impl_->matcher.match(message, context).diagnosis;
}

bool Catalog::claims(std::string_view id, std::string_view message) const noexcept {
  auto it = impl_->by_id.find(id);
  return it != impl_->by_id.end() && impl_->matcher.claims(it->second, message);
}

std::vector<Problem> Catalog::compile_all() const { return impl_->matcher.compile_all(); }

std::string Catalog::snapshot() const { return detail::write_snapshot(entries(), detail::plan_matching(entries())); }

CatalogPtr Catalog::embedded() {
  // Built once; a broken embedded catalog is a build defect that the test
  // suite's lint of patterns/ catches, so this throwing is not a run-time case.
  static const CatalogPtr catalog = CatalogBuilder().add_embedded().build();
  return catalog;
}

CatalogBuilder& CatalogBuilder::add_embedded() {
  sources_.push_back({Source::Kind::embedded, {}, {}, "<embedded>"});
  return *this;
}

CatalogBuilder& CatalogBuilder::add_path(const std::filesystem::path& path) {
  sources_.push_back({Source::Kind::path, path, {}, path.string()});
  return *this;
}

CatalogBuilder& CatalogBuilder::add_yaml(std::string text, std::string name) {
  sources_.push_back({Source::Kind::text, {}, std::move(text), std::move(name)});
  return *this;
}

CatalogBuilder& CatalogBuilder::cache_in(std::filesystem::path dir) {
  cache_dir_ = std::move(dir);
  return *this;
}

CatalogBuilder& CatalogBuilder::add_snapshot(std::string bytes, std::string name) {
  sources_.push_back({Source::Kind::snapshot, {}, std::move(bytes), std::move(name)});
  return *this;
}

namespace {

// A catalog file's text: read into `owned`, or borrowed (embedded data, or
// text the builder holds), so a large catalog is not copied before parsing.
struct File {
  std::string name;
  std::string owned;
  std::string_view borrowed;
  std::string_view text() const { return borrowed.data() ? borrowed : std::string_view(owned); }
};

bool is_yaml(const std::filesystem::path& p) { return p.extension() == ".yaml" || p.extension() == ".yml"; }
// A file written from Catalog::snapshot() (`errshim snapshot`), named so a
// --catalog option or a reload can tell it from YAML.
bool is_snapshot(const std::filesystem::path& p) {
  std::error_code ec;
  return p.extension() == ".snapshot" && std::filesystem::is_regular_file(p, ec);
}

bool read_file(const std::filesystem::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  // A regular file is read in one piece at its size (a 100 MB snapshot
  // through a stringstream cost ~0.2 s of copies); anything else, or a file
  // that changes size meanwhile, as a stream to its end.
  std::error_code ec;
  const auto size = std::filesystem::is_regular_file(p, ec) ? std::filesystem::file_size(p, ec) : 0;
  if (!ec && size > 0) {
    out.resize(size);
    if (in.read(out.data(), static_cast<std::streamsize>(size)) && in.peek() == std::ifstream::traits_type::eof())
      return true;
    in.clear();
    in.seekg(0);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// The files of one layer. Problems reading them are catalog problems too.
std::vector<File> layer_files(const std::filesystem::path& path, std::vector<Problem>& problems) {
  namespace fs = std::filesystem;
  std::vector<File> files;
  std::error_code ec;
  const std::string name = path.string();
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> found;
    for (const auto& de : fs::directory_iterator(path, ec))
      if (de.is_regular_file() && is_yaml(de.path())) found.push_back(de.path());
    if (ec) problems.push_back({{name}, "", fmt::format("cannot list the folder: {}", ec.message())});
    std::sort(found.begin(), found.end());
    if (found.empty() && !ec)
      problems.push_back({{name}, "", "the folder holds no .yaml or .yml catalog files"});
    for (const fs::path& p : found) {
      File f{p.string(), {}, {}};
      if (read_file(p, f.owned))
        files.push_back(std::move(f));
      else
        problems.push_back({{f.name}, "", "cannot read the file"});
    }
  } else if (fs::exists(path, ec)) {
    File f{name, {}, {}};
    if (read_file(path, f.owned))
      files.push_back(std::move(f));
    else
      problems.push_back({{name}, "", "cannot read the file"});
  } else {
    problems.push_back({{name}, "", "no such catalog file or folder"});
  }
  return files;
}

}  // namespace

namespace {
// The cache entry of a layer: a hash of the errshim version and of each
// file's name and bytes.
std::string cache_name(const std::vector<File>& files) {
  std::uint64_t h = detail::snapshot_checksum(version());
  for (const File& f : files) {
    h = (h ^ detail::snapshot_checksum(f.name)) * 0x9E3779B97F4A7C15ull;
    h = (h ^ detail::snapshot_checksum(f.text())) * 0x9E3779B97F4A7C15ull;
  }
  return fmt::format("{:016x}.snapshot", h);
}

// Best effort, atomically (a temporary file renamed over the entry): a
// reader sees a whole snapshot or none, and a failure only costs the next
// build a YAML parse.
void write_cache(const std::filesystem::path& path, const std::vector<std::shared_ptr<const Entry>>& entries,
                 const detail::MatchPlan& plan) {
  try {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    const std::string bytes = detail::write_snapshot(entries, plan);
    std::filesystem::path tmp = path;
    // Unique per writer: processes sharing the cache may write one entry at once.
    tmp += fmt::format(".{:x}{:x}.tmp", std::random_device{}(),
                       std::chrono::steady_clock::now().time_since_epoch().count());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) || !out.flush()) {
        out.close();
        std::filesystem::remove(tmp, ec);
        return;
      }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) std::filesystem::remove(tmp, ec);
  } catch (const std::exception&) {
  }
}
}  // namespace

CatalogPtr CatalogBuilder::build() const {
  std::vector<Problem> problems;
  std::vector<std::shared_ptr<const Entry>> entries;
  // id -> position in entries. Keys view the ids of the entries stored there
  // (hashing, not a copy and an ordered tree per id: at 100,000 entries the
  // copies cost a tenth of a snapshot's load).
  std::unordered_map<std::string_view, std::size_t> index;
  // A snapshot's match plan, kept when the snapshot is the whole catalog
  // (other layers change the entries, and with them every key's rarity).
  detail::MatchPlan plan;

  for (const Source& src : sources_) {
    std::unordered_set<std::string_view> layer_ids;  // defined by this layer so far
    auto add_layer_entries = [&](const std::vector<std::shared_ptr<const Entry>>& parsed) {
      index.reserve(index.size() + parsed.size());
      layer_ids.reserve(layer_ids.size() + parsed.size());
      for (const std::shared_ptr<const Entry>& shared : parsed) {
        const Entry& e = *shared;
        if (layer_ids.count(e.id) != 0) {
          const Location& first = entries[index.at(e.id)]->where;
          problems.push_back({e.where, e.id,
                              fmt::format("duplicate id (first defined at {}:{}:{})", first.file, first.line, first.column)});
          continue;
        }
        const std::string_view id = shared->id;
        // A later layer replaces an earlier entry in place, keeping the order.
        if (auto it = index.find(id); it != index.end()) {
          const std::size_t at = it->second;
          index.erase(it);  // its key views the id of the entry replaced
          entries[at] = shared;
          index.emplace(id, at);
        } else {
          index.emplace(id, entries.size());
          entries.push_back(shared);
        }
        layer_ids.insert(id);
        // A user catalog gets the risk check a reload applies (lint).
        if (src.kind == Source::Kind::path) detail::append_backtracking_problems(e, problems);
      }
    };
    auto add_snapshot_entries = [&](detail::Snapshot snap) {
      if (sources_.size() == 1) plan = std::move(snap.plan);
      add_layer_entries(snap.entries);
    };
    std::vector<File> files;
    switch (src.kind) {
      case Source::Kind::embedded: {
        const detail::EmbeddedCatalog& embedded = detail::embedded_catalog();
        if (!embedded.snapshot.empty())
          add_snapshot_entries(detail::read_snapshot(embedded.snapshot, "<embedded catalog snapshot>", problems));
        for (const auto& [name, text] : embedded.files) files.push_back({std::string(name), {}, text});
        break;
      }
      case Source::Kind::path:
        if (is_snapshot(src.path)) {
          std::string bytes;
          if (read_file(src.path, bytes))
            add_snapshot_entries(detail::read_snapshot(bytes, src.name, problems));
          else
            problems.push_back({{src.name}, "", "cannot read the snapshot file"});
        } else {
          files = layer_files(src.path, problems);
        }
        break;
      case Source::Kind::text: files.push_back({src.name, {}, src.text}); break;
      case Source::Kind::snapshot: add_snapshot_entries(detail::read_snapshot(src.text, src.name, problems)); break;
    }
    if (files.empty()) continue;
    // A cached snapshot of exactly these bytes stands in for parsing them.
    std::filesystem::path cached;
    if (!cache_dir_.empty()) {
      cached = cache_dir_ / cache_name(files);
      std::string bytes;
      std::vector<Problem> unusable;  // a bad cache entry is parsed around, not reported
      if (read_file(cached, bytes)) {
        detail::Snapshot snap = detail::read_snapshot(bytes, cached.string(), unusable);
        if (unusable.empty()) {
          add_snapshot_entries(std::move(snap));
          continue;
        }
      }
    }
    const std::size_t problems_before = problems.size();
    std::vector<std::shared_ptr<const Entry>> layer;
    for (const File& f : files) {
      std::vector<Entry> parsed = detail::parse_catalog(f.text(), f.name, problems);
      layer.reserve(layer.size() + parsed.size());
      for (Entry& e : parsed) layer.push_back(std::make_shared<const Entry>(std::move(e)));
    }
    add_layer_entries(layer);
    if (!cached.empty() && problems.size() == problems_before) {
      detail::MatchPlan layer_plan = detail::plan_matching(layer);
      write_cache(cached, layer, layer_plan);
      // The layer is the whole catalog: the matcher need not plan it again.
      if (sources_.size() == 1) plan = std::move(layer_plan);
    }
  }
  auto impl = std::make_unique<Catalog::Impl>(std::move(entries), problems, std::move(plan));
  if (!problems.empty()) throw catalog_error(std::move(problems));
  return CatalogPtr(new Catalog(std::move(impl)));
}

}  // namespace errshim
