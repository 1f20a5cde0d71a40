#include "errshim/catalog.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "catalog_loader.hpp"
#include "embedded_catalog.hpp"
#include "generated_layers.hpp"
#include "matcher.hpp"
#include "pattern_risk.hpp"
#include "problem.hpp"
#include "snapshot.hpp"
#include "errshim/version.hpp"

namespace errshim {

struct Catalog::Impl {
  // `ids` maps each entry's id (viewing storage the entries keep) to its position.
  Impl(detail::EntryTable entries, std::vector<Problem>& problems,
       const std::vector<const detail::MatchPlan::Item*>& plan, std::vector<std::shared_ptr<const char[]>> key_bytes,
       detail::ViewMap ids)
      : matcher(std::move(entries), problems, plan, std::move(key_bytes)), by_id(std::move(ids)) {}
  detail::Matcher matcher;
  detail::ViewMap by_id;  // views into the entries' ids
  std::vector<Problem> warnings;  // Catalog::warnings()
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
  if (problems.size() > 1)
    s += fmt::format(" (and {} more problem{})", problems.size() - 1, problems.size() > 2 ? "s" : "");
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

const std::vector<Problem>& Catalog::warnings() const noexcept { return impl_->warnings; }

std::size_t Catalog::size() const noexcept { return impl_->matcher.table().size(); }

std::uint64_t Catalog::content_hash() const { return impl_->matcher.table().content_hash(); }

const Entry* Catalog::find(std::string_view id) const noexcept {
  const detail::ViewMap::Item* it = impl_->by_id.find(id);
  if (!it) return nullptr;
  try {
    return impl_->matcher.table().get(it->value).get();
  } catch (...) {
    return nullptr;  // out of memory decoding it
  }
}

MatchResult Catalog::match(std::string_view message, const Context& context,
                           const MatchOptions& options) const noexcept {
  return impl_->matcher.match(message, context, options);
}

std::optional<Diagnosis> Catalog::diagnose(std::string_view message, const Context& context) const noexcept {
  return impl_->matcher.match(message, context).diagnosis;
}

bool Catalog::claims(std::string_view id, std::string_view message) const noexcept {
  const detail::ViewMap::Item* it = impl_->by_id.find(id);
  return it && impl_->matcher.claims(it->value, message);
}

std::vector<std::string_view> Catalog::claimants(std::string_view message) const {
  std::vector<std::string_view> ids;
  for (std::size_t i : impl_->matcher.claimants(message)) ids.push_back(impl_->matcher.table().id(i));
  return ids;
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

CatalogBuilder& CatalogBuilder::add_generated(std::string library) {
  sources_.push_back({Source::Kind::generated, {}, {}, std::move(library)});
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
  // A regular file is read in one piece at its size (a large snapshot
  // through a stringstream is copied twice over); anything else, or a file
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
    if (ec) problems.push_back(detail::file_problem(name, fmt::format("cannot list the folder: {}", ec.message())));
    std::sort(found.begin(), found.end());
    if (found.empty() && !ec)
      problems.push_back(detail::file_problem(name, "the folder holds no .yaml or .yml catalog files"));
    for (const fs::path& p : found) {
      File f{p.string(), {}, {}};
      if (read_file(p, f.owned))
        files.push_back(std::move(f));
      else
        problems.push_back(detail::file_problem(f.name, "cannot read the file"));
    }
  } else if (fs::exists(path, ec)) {
    File f{name, {}, {}};
    if (read_file(path, f.owned))
      files.push_back(std::move(f));
    else
      problems.push_back(detail::file_problem(name, "cannot read the file"));
  } else {
    problems.push_back(detail::file_problem(name, "no such catalog file or folder"));
  }
  return files;
}

}  // namespace

namespace {

namespace fs = std::filesystem;

// A cache entry is a snapshot of its layer's entries, which name their file
// in every location: never more than this many bytes per byte of the
// layer's files and names, so a larger file at an entry's name is refused
// unread (and a snapshot that would be larger is not written).
constexpr std::uintmax_t kCacheBytesPerLayerByte = 16;
constexpr std::uintmax_t kCacheBytesBase = std::uintmax_t{1} << 20;

std::uintmax_t cache_entry_limit(const std::vector<File>& files) {
  std::uintmax_t n = 0;
  for (const File& f : files) n += f.name.size() + f.text().size();
  return kCacheBytesBase + kCacheBytesPerLayerByte * n;
}

// The layer's hash: of the errshim version and of each file's name and
// bytes. It names the cache entry and is recorded in it, so an entry built
// from other bytes is told apart from one of this layer.
std::uint64_t layer_hash(const std::vector<File>& files) {
  std::uint64_t h = detail::snapshot_checksum(version());
  for (const File& f : files) {
    h = (h ^ detail::snapshot_checksum(f.name)) * 0x9E3779B97F4A7C15ull;
    h = (h ^ detail::snapshot_checksum(f.text())) * 0x9E3779B97F4A7C15ull;
  }
  return h;
}

std::string file_kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The cache folder of one build. Whoever can write it decides what the
// catalog holds, so it is used only when it belongs to this user and no one
// else can write it; entries are looked at without following links or
// opening anything but regular files of a bounded size, and written to a
// fresh file (O_EXCL) renamed over the entry, so a reader sees a whole
// snapshot or none. A folder or entry that is not used only costs a YAML
// parse, and says why in `warnings`.
class CacheDir {
 public:
  CacheDir(fs::path dir, std::vector<Problem>& warnings) : dir_(std::move(dir)) {
    auto open_dir = [this] { return ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); };
    fd_ = open_dir();
    if (fd_ < 0 && errno == ENOENT) {
      // Made private: nobody else may write it, or it would be refused.
      std::error_code ec;
      if (dir_.has_parent_path()) fs::create_directories(dir_.parent_path(), ec);
      if (::mkdir(dir_.c_str(), 0700) == 0 || errno == EEXIST) fd_ = open_dir();
    }
    if (fd_ < 0) {
      const int error = errno;
      warn(warnings, fmt::format("cannot open the catalog cache folder: {}; catalogs are parsed without it",
                                 std::strerror(error)));
      return;
    }
    struct stat st {};
    std::string why;
    if (::fstat(fd_, &st) != 0)
      why = fmt::format("cannot examine it: {}", std::strerror(errno));
    else if (st.st_uid != ::geteuid())
      why = fmt::format("it belongs to user {}, not to this user ({})", st.st_uid, ::geteuid());
    else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
      why = fmt::format("others can write it (mode {:04o})", st.st_mode & 07777);
    if (!why.empty()) {
      warn(warnings, fmt::format("catalog cache folder not used: {}; whoever can write it decides what the catalog "
                                 "holds. The YAML is parsed instead (use a folder of your own that only you can "
                                 "write, e.g. chmod go-w)",
                                 why));
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~CacheDir() {
    if (fd_ >= 0) ::close(fd_);
  }
  CacheDir(const CacheDir&) = delete;
  CacheDir& operator=(const CacheDir&) = delete;

  bool usable() const { return fd_ >= 0; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The bytes of entry `name`: false when there is none (quietly) or it is
  // refused (with a warning).
  bool read(const std::string& name, std::uintmax_t limit, std::string& out, std::vector<Problem>& warnings) const {
    auto refuse = [&](const std::string& why) {
      warn(warnings, fmt::format("catalog cache entry not used: {}; the layer's YAML is parsed instead", why), name);
      return false;
    };
    // Looked at before it is opened, so a FIFO or device is never opened.
    struct stat st {};
    if (::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return errno == ENOENT ? false : refuse(fmt::format("cannot examine it: {}", std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) return refuse(fmt::format("it is {}, not a regular file", file_kind(st.st_mode)));
    auto too_big = [&](const struct stat& s) { return static_cast<std::uintmax_t>(s.st_size) > limit; };
    const auto size_problem = [&](const struct stat& s) {
      return fmt::format("it holds {} bytes, more than a snapshot of this layer can ({})", s.st_size, limit);
    };
    if (too_big(st)) return refuse(size_problem(st));
    // O_NONBLOCK and a second look: the name may be replaced meanwhile.
    const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return refuse(fmt::format("cannot open it: {}", std::strerror(errno)));
    std::string why;
    if (::fstat(fd, &st) != 0)
      why = fmt::format("cannot examine it: {}", std::strerror(errno));
    else if (!S_ISREG(st.st_mode))
      why = fmt::format("it is {}, not a regular file", file_kind(st.st_mode));
    else if (too_big(st))
      why = size_problem(st);
    if (why.empty()) {
      // One byte more than its size is asked for, to see that it ended there.
      out.resize(static_cast<std::size_t>(st.st_size) + 1);
      std::size_t got = 0;
      while (got < out.size()) {
        const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) why = fmt::format("cannot read it: {}", std::strerror(errno));
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
      if (why.empty() && got != static_cast<std::size_t>(st.st_size)) why = "it changed size while it was read";
      out.resize(got);
    }
    ::close(fd);
    return why.empty() ? true : refuse(why);
  }

  // Best effort: a failure costs the next build a YAML parse.
  void write(const std::string& name, const std::string& bytes) const {
    std::random_device rd;
    for (int attempt = 0; attempt < 8; ++attempt) {
      // Unique per writer: processes sharing the cache may write one entry at once.
      const std::string tmp = fmt::format("{}.{:08x}{:08x}.tmp", name, rd(), rd());
      const int fd = ::openat(fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) {
        if (errno == EEXIST) continue;
        return;
      }
      bool ok = true;
      for (std::size_t done = 0; ok && done < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) done += static_cast<std::size_t>(n);
      }
      ok = ::close(fd) == 0 && ok;
      if (!ok || ::renameat(fd_, tmp.c_str(), fd_, name.c_str()) != 0) ::unlinkat(fd_, tmp.c_str(), 0);
      return;
    }
  }

 private:
  void warn(std::vector<Problem>& warnings, std::string message, const std::string& name = {}) const {
    warnings.push_back(detail::file_problem(name.empty() ? dir_.string() : path(name), std::move(message)));
  }

  fs::path dir_;
  int fd_ = -1;
};

// One source's entries, read before the layers are put together.
struct Layer {
  std::vector<File> files;  // a YAML layer's files; none for a snapshot
  std::vector<std::shared_ptr<const Entry>> entries;
  std::shared_ptr<detail::LazySnapshot> lazy;  // else its entries are decoded on first use from here
  detail::MatchPlan plan;  // from a snapshot or the cache; for a cached layer, planned here
  std::string cache_entry;  // the entry's name in the cache folder; empty: not cached
  std::uint64_t hash = 0;  // layer_hash(files), when cached
  bool from_cache = false;
  bool read_problems = false;  // finding or reading its files
  bool had_problems = false;  // reading or parsing its files (a layer with problems is never cached)
  bool from_path = false;  // a user catalog (add_path): gets the risk check a reload applies
};

void parse_layer(Layer& layer, std::vector<Problem>& problems) {
  const std::size_t before = problems.size();
  layer.entries.clear();
  layer.lazy.reset();
  layer.plan = {};
  layer.from_cache = false;
  for (const File& f : layer.files) {
    std::vector<Entry> parsed = detail::parse_catalog(f.text(), f.name, problems);
    layer.entries.reserve(layer.entries.size() + parsed.size());
    for (Entry& e : parsed) layer.entries.push_back(std::make_shared<const Entry>(std::move(e)));
  }
  layer.had_problems = layer.read_problems || problems.size() != before;
}

// Reads the layer from its cache entry, if there is a sound one: a
// snapshot that says it was built from these very bytes.
bool read_cached(const CacheDir& cache, Layer& layer, std::vector<Problem>& warnings) {
  std::string bytes;
  if (!cache.read(layer.cache_entry, cache_entry_limit(layer.files), bytes, warnings)) return false;
  const std::string path = cache.path(layer.cache_entry);
  std::vector<Problem> unusable;
  detail::Snapshot snap = detail::read_snapshot(bytes, path, unusable);
  std::string why;
  if (!unusable.empty())
    why = unusable.front().message;
  else if (snap.source != layer.hash)
    why = fmt::format("it is a snapshot of other bytes than this layer's (source {:016x}, the layer is {:016x})",
                      snap.source, layer.hash);
  if (!why.empty()) {
    warnings.push_back(detail::file_problem(
        path, fmt::format("catalog cache entry not used: {}; the layer's YAML is parsed instead", why)));
    return false;
  }
  layer.entries = std::move(snap.entries);
  layer.plan = std::move(snap.plan);
  layer.from_cache = true;
  return true;
}

}  // namespace

CatalogPtr CatalogBuilder::build() const {
  std::vector<Problem> problems;  // of reading and parsing the sources
  std::vector<Problem> warnings;  // what was worked around: the cache
  std::optional<CacheDir> cache;  // opened for the first YAML layer
  std::vector<Layer> layers(sources_.size());
  for (std::size_t s = 0; s < sources_.size(); ++s) {
    const Source& src = sources_[s];
    Layer& layer = layers[s];
    layer.from_path = src.kind == Source::Kind::path;
    const std::size_t before = problems.size();
    auto take = [&layer](detail::Snapshot snap) {
      layer.entries = std::move(snap.entries);
      layer.plan = std::move(snap.plan);
    };
    switch (src.kind) {
      case Source::Kind::embedded: {
        // The library embeds a snapshot; builds without one (the fuzz
        // targets, the build step that writes it) embed the YAML.
        const detail::EmbeddedCatalog& embedded = detail::embedded_catalog();
        if (!embedded.snapshot.empty())
          layer.lazy = detail::LazySnapshot::read(embedded.snapshot, "<embedded catalog snapshot>", problems,
                                                  detail::LazySnapshot::Regexes::compiled_when_written);
        else
          for (const auto& [name, text] : embedded.files) layer.files.push_back({std::string(name), {}, text});
        break;
      }
      case Source::Kind::generated: {
        std::optional<std::filesystem::path> yaml;
        const std::optional<std::filesystem::path> found = detail::find_generated_layer(src.name, &yaml);
        if (!found) {
          std::string searched;
          for (const std::filesystem::path& d : detail::generated_layer_dirs())
            searched += (searched.empty() ? "" : ", ") + d.string();
          problems.push_back(detail::file_problem(
              "<generated:" + src.name + ">",
              fmt::format("no generated layer '{}' in {}: install errshim's data files (share/errshim/generated), "
                          "or set ERRSHIM_GENERATED_DIR to a folder holding {}.snapshot or {}.yaml",
                          src.name, searched.empty() ? "any folder (none configured)" : searched, src.name, src.name)));
          break;
        }
        layer.from_path = detail::generated_dir_from_environment();
        if (is_snapshot(*found)) {
          // Decoded entry by entry on first use: a process pays for the
          // generated entries it meets, not for every one.
          std::vector<Problem> snap_problems;
          layer.lazy = detail::LazySnapshot::open(*found, snap_problems);
          // A snapshot another errshim version wrote: its YAML, when beside it, stands in.
          if (!snap_problems.empty() && yaml) {
            warnings.push_back(detail::file_problem(
                found->string(),
                fmt::format("not used ({}); parsing {} instead", snap_problems.front().message, yaml->string())));
            layer = Layer{};
            layer.from_path = detail::generated_dir_from_environment();
            layer.files = layer_files(*yaml, problems);
          } else {
            problems.insert(problems.end(), snap_problems.begin(), snap_problems.end());
          }
        } else {
          layer.files = layer_files(*found, problems);
        }
        break;
      }
      case Source::Kind::path:
        if (is_snapshot(src.path)) {
          std::string bytes;
          if (read_file(src.path, bytes))
            take(detail::read_snapshot(bytes, src.name, problems));
          else
            problems.push_back(detail::file_problem(src.name, "cannot read the snapshot file"));
        } else {
          layer.files = layer_files(src.path, problems);
        }
        break;
      case Source::Kind::text: layer.files.push_back({src.name, {}, src.text}); break;
      case Source::Kind::snapshot: take(detail::read_snapshot(src.text, src.name, problems)); break;
    }
    if (layer.lazy) layer.plan = std::move(layer.lazy->plan());
    if (layer.files.empty()) continue;
    layer.read_problems = problems.size() != before;
    // A cached snapshot of exactly these bytes stands in for parsing them.
    if (!cache_dir_.empty()) {
      if (!cache) cache.emplace(cache_dir_, warnings);
      if (cache->usable()) {
        layer.hash = layer_hash(layer.files);
        layer.cache_entry = fmt::format("{:016x}.snapshot", layer.hash);
        if (read_cached(*cache, layer, warnings)) continue;
      }
    }
    parse_layer(layer, problems);
  }

  // The layers put together. A cached layer is checked by the rules of a
  // parsed one (unique ids, patterns that compile), and one that breaks
  // them is parsed from its YAML instead and the whole is put together
  // again: the cache never fails a build its YAML would pass.
  for (;;) {
    std::vector<Problem> all = problems;
    std::vector<std::size_t> origin;  // entry -> its layer
    std::vector<std::size_t> origin_pos;  // entry -> its position in that layer
    // id -> position in the catalog. Keys view the ids the layers hold
    // (hashing, not a copy and an ordered tree per id: at 100,000 entries
    // the copies cost a tenth of a snapshot's load).
    detail::ViewMap index;
    std::vector<std::optional<Problem>> blamed(layers.size());  // a layer's first problem here
    auto blame = [&](std::size_t layer, const Problem& p) {
      if (!blamed[layer]) blamed[layer] = p;
    };
    auto where = [&](std::size_t l, std::size_t pos) {
      const Layer& layer = layers[l];
      return layer.lazy ? detail::file_problem(layer.lazy->name(), "").where : layer.entries[pos]->where;
    };
    {
      std::size_t total = 0;
      for (const Layer& layer : layers) total += layer.lazy ? layer.lazy->size() : layer.entries.size();
      index.reserve(total);
    }
    std::vector<std::uint32_t> hashes;  // of a layer's ids, worked out ahead to prefetch their slots
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const Layer& layer = layers[l];
      const std::size_t count = layer.lazy ? layer.lazy->size() : layer.entries.size();
      auto id_at = [&layer](std::size_t pos) {
        return layer.lazy ? std::string_view(layer.lazy->id(pos)) : std::string_view(layer.entries[pos]->id);
      };
      hashes.resize(count);
      for (std::size_t pos = 0; pos < count; ++pos) hashes[pos] = detail::ViewMap::hash(id_at(pos));
      for (std::size_t pos = 0; pos < count; ++pos) {
        if (pos + detail::ViewMap::kPrefetchAhead < count)
          index.prefetch(hashes[pos + detail::ViewMap::kPrefetchAhead]);
        const std::string_view id = id_at(pos);
        bool fresh = false;
        detail::ViewMap::Item& it = index.insert(id, hashes[pos], static_cast<std::uint32_t>(origin.size()), fresh);
        if (!fresh && origin[it.value] == l) {  // this layer defined it already
          const Location at = where(l, origin_pos[it.value]);
          all.push_back({where(l, pos), std::string(id),
                         fmt::format("duplicate id (first defined at {}:{}:{})", at.file, at.line, at.column)});
          blame(l, all.back());
          continue;
        }
        if (fresh) {
          origin.push_back(l);
          origin_pos.push_back(pos);
        } else {
          // A later layer replaces an earlier entry in place, keeping the
          // order; the key views this layer's id from now on.
          const std::size_t at = it.value;
          it.set_key(id);
          origin[at] = l;
          origin_pos[at] = pos;
        }
        // A user catalog gets the risk check a reload applies (lint), be it
        // parsed or read from the cache; a lazily read one when each entry
        // is decoded (EntryTable), before its regex ever runs.
        if (layer.from_path && !layer.lazy) {
          const std::size_t n = all.size();
          detail::append_backtracking_problems(*layer.entries[pos], all);
          if (all.size() != n) blame(l, all.back());
        }
      }
    }
    // Each entry keeps the plan item its own layer chose: a key is text
    // every match of the entry contains whatever else the catalog holds,
    // so layers put together need no plan across all of them (planning
    // every generated entry again was most of a build). A key chosen
    // within its layer may be less rare in the whole; that costs candidates,
    // never a match. A layer without a plan (parsed YAML) is planned here,
    // once, for the catalog and for its cache entry.
    for (Layer& layer : layers)
      if (!layer.lazy && layer.plan.items.size() != layer.entries.size())
        layer.plan = detail::plan_matching(layer.entries);
    // The matcher reads each item where its layer holds it (a copy of every
    // item was megabytes of fresh memory).
    std::vector<const detail::MatchPlan::Item*> plan;
    detail::EntryTable entries;
    entries.reserve(origin.size());
    plan.reserve(origin.size());
    for (std::size_t i = 0; i < origin.size(); ++i) {
      const Layer& layer = layers[origin[i]];
      if (layer.lazy)
        entries.add(layer.lazy, origin_pos[i], layer.from_path);
      else
        entries.add(layer.entries[origin_pos[i]]);
      plan.push_back(&layer.plan.items[origin_pos[i]]);
    }
    std::vector<std::shared_ptr<const char[]>>
        key_bytes;  // a lazy layer's keys view its snapshot, which `entries` keeps
    for (const Layer& layer : layers)
      if (layer.plan.bytes) key_bytes.push_back(layer.plan.bytes);
    const std::size_t before_matcher = all.size();
    auto impl = std::make_unique<Catalog::Impl>(std::move(entries), all, plan, std::move(key_bytes), std::move(index));
    plan = {};
    for (std::size_t i = before_matcher; i < all.size(); ++i)
      if (const detail::ViewMap::Item* it = impl->by_id.find(all[i].entry_id)) blame(origin[it->value], all[i]);

    bool again = false;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      Layer& layer = layers[l];
      if (!blamed[l] || !layer.from_cache) continue;
      warnings.push_back(detail::file_problem(
          cache->path(layer.cache_entry),
          fmt::format("catalog cache entry not used: {}; the layer's YAML is parsed instead", blamed[l]->to_string())));
      parse_layer(layer, problems);
      again = true;
    }
    if (again) continue;

    for (std::size_t l = 0; l < layers.size(); ++l) {
      Layer& layer = layers[l];
      if (layer.cache_entry.empty() || layer.from_cache || layer.had_problems || blamed[l]) continue;
      try {
        const std::string bytes = detail::write_snapshot(layer.entries, layer.plan, layer.hash);
        if (bytes.size() <= cache_entry_limit(layer.files)) cache->write(layer.cache_entry, bytes);
      } catch (const std::exception&) {
        // Out of memory writing a cache entry costs the next build a parse, nothing more.
      }
    }
    if (!all.empty()) throw catalog_error(std::move(all));
    impl->warnings = std::move(warnings);
    return CatalogPtr(new Catalog(std::move(impl)));
  }
}

}  // namespace errshim
