#include "generated_layers.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <system_error>

#include "chars.hpp"
#include "errshim/catalog.hpp"

#ifndef ERRSHIM_GENERATED_INSTALL_DIR
#define ERRSHIM_GENERATED_INSTALL_DIR ""
#endif

namespace errshim {
namespace detail {
namespace {

bool plain_name(std::string_view s) {
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return is_lower(c) || is_digit(c) || c == '_' || c == '-'; });
}

bool regular(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace

bool generated_dir_from_environment() {
  const char* env = std::getenv("ERRSHIM_GENERATED_DIR");
  return env && *env;
}

std::vector<std::filesystem::path> generated_layer_dirs() {
  // Read on each call, never cached: a host may set it before building.
  if (generated_dir_from_environment()) return {std::filesystem::path(std::getenv("ERRSHIM_GENERATED_DIR"))};
  const std::string_view installed = ERRSHIM_GENERATED_INSTALL_DIR;
  if (installed.empty()) return {};
  return {std::filesystem::path(std::string(installed))};
}

std::optional<std::filesystem::path> find_generated_layer(std::string_view library,
                                                          std::optional<std::filesystem::path>* yaml) {
  if (!plain_name(library)) return std::nullopt;
  for (const std::filesystem::path& dir : generated_layer_dirs()) {
    const std::filesystem::path snap = dir / (std::string(library) + ".snapshot");
    const std::filesystem::path text = dir / (std::string(library) + ".yaml");
    const bool has_snap = regular(snap), has_text = regular(text);
    if (yaml && has_text) *yaml = text;
    if (has_snap) return snap;
    if (has_text) return text;
  }
  return std::nullopt;
}

}  // namespace detail

std::vector<std::string> CatalogBuilder::generated_layers() {
  std::set<std::string> names;
  for (const std::filesystem::path& dir : detail::generated_layer_dirs()) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::filesystem::path& p = it->path();
      const std::string stem = p.stem().string();
      if ((p.extension() == ".snapshot" || p.extension() == ".yaml") && detail::plain_name(stem) && detail::regular(p))
        names.insert(stem);
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace errshim
