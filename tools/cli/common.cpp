#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cli.hpp"
#include "json_writer.hpp"
#include "text_wrap.hpp"

namespace errshim_cli {

void add_catalog_options(CLI::App& cmd, CatalogOptions& o) {
  cmd.add_option("--catalog", o.catalogs, "a catalog (.yaml, .snapshot, folder) over the embedded one; repeatable")
      ->type_name("PATH")
      ->allow_extra_args(false);
  cmd.add_option("--generated", o.generated,
                 "a generated layer by library name (candle, torch-cpp, torch-cpp-csrc, torch-python, "
                 "transformers; 'all': every one found), from share/errshim/generated or $ERRSHIM_GENERATED_DIR, "
                 "under the --catalog layers; repeatable")
      ->type_name("LIBRARY")
      ->allow_extra_args(false);
  cmd.add_option("--cache", o.cache, "keep snapshots of the --catalog YAML layers in DIR (faster loads)")
      ->type_name("DIR");
  cmd.add_option("--context", o.contexts, "where it happened, e.g. transformers=4.57,device=metal; repeatable")
      ->type_name("K=V,...")
      ->allow_extra_args(false);
}

errshim::Context context_of(const CatalogOptions& o) {
  errshim::Context context;
  for (const std::string& c : o.contexts) {
    try {
      for (auto& [k, v] : errshim::Context::parse(c).values) context.values[k] = v;
    } catch (const std::invalid_argument& e) {
      throw usage_error(fmt::format("--context: {}", e.what()));
    }
  }
  return context;
}

errshim::CatalogPtr load_catalog(const CatalogOptions& o) {
  if (o.catalogs.empty() && o.generated.empty()) return errshim::Catalog::embedded();
  errshim::CatalogBuilder b;
  b.add_embedded();
  for (const std::string& g : o.generated) {
    if (g != "all") {
      b.add_generated(g);
      continue;
    }
    const std::vector<std::string> found = errshim::CatalogBuilder::generated_layers();
    if (found.empty())
      throw usage_error(
          "--generated all: no generated layer found (install errshim's data files, "
          "share/errshim/generated, or set ERRSHIM_GENERATED_DIR)");
    for (const std::string& name : found) b.add_generated(name);
  }
  for (const auto& c : o.catalogs) b.add_path(c);
  if (!o.cache.empty()) b.cache_in(o.cache);
  errshim::CatalogPtr catalog = b.build();
  for (const errshim::Problem& w : catalog->warnings()) fmt::print(stderr, "errshim: warning: {}\n", w.to_string());
  return catalog;
}

void add_output_options(CLI::App& cmd, OutputOptions& o) {
  cmd.add_flag("--json", o.json, "print JSON instead of text");
  cmd.add_option("--color", o.color, "colour: auto (a terminal, unless NO_COLOR), always, never")
      ->type_name("WHEN")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd.add_flag("--verbose,-v", o.verbose, "list every 'also at' place and example, not a count");
}

bool color_wanted(std::string_view mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* force = std::getenv("CLICOLOR_FORCE");
  if (force && *force && std::string_view(force) != "0") return true;
  return isatty(STDOUT_FILENO) == 1;
}

std::size_t output_width() {
  constexpr std::size_t kDefault = 100, kNarrowest = 40;
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    char* end = nullptr;
    const long n = std::strtol(c, &end, 10);
    if (end && *end == '\0' && n > 0) return std::max<std::size_t>(kNarrowest, static_cast<std::size_t>(n));
  }
  winsize ws{};
  if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return std::max<std::size_t>(kNarrowest, ws.ws_col);
  return kDefault;
}

CLI::App* add_command(CLI::App& root, const std::string& name, const std::string& summary, const std::string& details) {
  CLI::App* cmd = root.add_subcommand(name, summary);
  cmd->footer(errshim::detail::wrap("", details, 0, std::min<std::size_t>(output_width(), 100)) +
              "\nExit codes: 'errshim --help'.");
  return cmd;
}

errshim::TextOptions text_options(const OutputOptions& o) {
  errshim::TextOptions t;
  t.color = color_wanted(o.color);
  t.width = output_width();
  t.verbose = o.verbose;
  return t;
}

std::string catalog_version(const errshim::Catalog& catalog) {
  // Worked out once per catalog (`scan --json` names it in every block); a
  // command keeps its catalog to the end, so the address is a key. The
  // content hash reads a lazily loaded layer's index, not its entries.
  static std::mutex mutex;
  static std::map<const errshim::Catalog*, std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(&catalog); it != known.end()) return it->second;
  return known[&catalog] = fmt::format("{}+catalog.{:016x}", errshim::version(), catalog.content_hash());
}

std::string with_catalog(std::string object, const errshim::Catalog& catalog) {
  // The object's closing brace comes off and the catalog member goes last.
  while (!object.empty() && object.back() != '}') object.pop_back();
  if (object.empty()) return object;
  object.pop_back();
  if (object.find_last_not_of(" \n") != object.find('{')) object += ", ";
  errshim::detail::JsonWriter w(object);
  w.key("catalog").begin_object().field("version", catalog_version(catalog)).field("entries", catalog.size());
  w.end_object().end_object();
  return object;
}

// What explain, fix and import read whole (standard input, import's
// files): a pipe from /dev/zero or a runaway log would otherwise grow without
// end. The library reads at most 1 MiB of a message anyway (head and tail),
// and a catalog file may hold at most 16 MiB.
constexpr std::size_t kMaxReadBytes = 16u << 20;

std::string read_bounded(std::istream& in, const std::string& name, const std::string& instead) {
  std::string text;
  char buf[64 << 10];
  while (in.read(buf, sizeof buf), in.gcount() > 0) {
    const auto n = static_cast<std::size_t>(in.gcount());
    if (text.size() + n > kMaxReadBytes)
      throw usage_error(
          fmt::format("{} holds more than {} MiB, the most errshim reads; {}", name, kMaxReadBytes >> 20, instead));
    text.append(buf, n);
  }
  if (in.bad()) throw usage_error(fmt::format("cannot read {}", name));
  return text;
}

std::string message_of(const std::vector<std::string>& words, const std::string& command) {
  if (words.empty()) throw usage_error(fmt::format("{} needs a MESSAGE, or '-' to read standard input", command));
  if (words.size() == 1 && words[0] == "-")
    return read_bounded(std::cin, "standard input",
                        fmt::format("pass the error's last lines instead (e.g. 'tail -c 1M LOG | errshim {}{} -'), or "
                                    "find the errors in a whole log with 'errshim scan LOG'",
                                    command, command == "fix" ? " --config FILE" : ""));
  return fmt::format("{}", fmt::join(words, " "));
}

std::string value_text(const std::optional<errshim::Value>& v) {
  if (!v) return "(absent)";
  if (v->type == errshim::Value::Type::string) return errshim::detail::json_quote(v->text);
  return v->type == errshim::Value::Type::null ? "null" : v->text;
}

void write_atomically(const std::string& path, const std::string& bytes, std::optional<unsigned> mode) {
  // Written to a fresh file beside `path` (mkstemp: a new name, O_EXCL, so
  // never through a link planted there), then renamed over it.
  const std::filesystem::path out = path;
  const std::filesystem::path dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::string tmp = (dir / (out.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(fmt::format("cannot write in '{}': {}", dir.string(), std::strerror(errno)));
  if (!mode) {  // the mode a file created in place gets (mkstemp's is 0600)
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  bool written = ::fchmod(fd, static_cast<mode_t>(*mode)) == 0;
  for (std::size_t done = 0; written && done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    if (written) done += static_cast<std::size_t>(n);
  }
  const int error = errno;
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write '{}': {}", tmp, std::strerror(error)));
  }
  if (::rename(tmp.c_str(), out.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot replace '{}': {}", out.string(), std::strerror(e)));
  }
}

}  // namespace errshim_cli
