// The catalog compiled into the library (patterns/*.yaml): the default a
// host gets from Catalog::embedded() with no files at run time.
//
// A normal build embeds a snapshot of it, written at build time by
// cmake/embed_snapshot.cpp after the catalog built without a problem: a
// snapshot loads many times faster than the YAML parses (README,
// "Performance"), and every host process and CLI call pays that load once. The snapshot writer
// itself, fuzz builds and cross builds (which cannot run the writer) embed
// the YAML files and parse them.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace errshim::detail {

struct EmbeddedCatalog {
  // (name relative to the source tree, e.g. "patterns/candle.yaml", text);
  // one layer. Empty when `snapshot` is set.
  std::vector<std::pair<std::string_view, std::string_view>> files;
  std::string_view snapshot;  // Catalog::snapshot() of those files
};

// Defined in the generated source (build/generated/).
const EmbeddedCatalog& embedded_catalog();

}  // namespace errshim::detail
