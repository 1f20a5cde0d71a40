// Where the generated catalog layers are found (CatalogBuilder::add_generated).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace errshim::detail {

// The folders searched, in order: $ERRSHIM_GENERATED_DIR when set, else the
// install folder this library was built for.
std::vector<std::filesystem::path> generated_layer_dirs();

// Whether the environment chose the folder: then its files get the checks
// of any file a caller names (a planted pattern's backtracking risk); the
// install folder is trusted like the library itself.
bool generated_dir_from_environment();

// `library`'s layer in the first folder that holds one: its snapshot when
// present, else its YAML (`yaml` gets the YAML's path when both exist, for a
// snapshot another errshim version wrote). Empty when none has it, or when
// `library` is not a plain name ([a-z0-9_-]+).
std::optional<std::filesystem::path> find_generated_layer(std::string_view library,
                                                          std::optional<std::filesystem::path>* yaml = nullptr);

}  // namespace errshim::detail
