// Build step: writes the snapshot of one generated layer (patterns/generated/X.yaml),
// installed beside it so add_generated() loads it without parsing YAML.
//
//   errshim_layer_snapshot OUT.snapshot IN.yaml
#include <cstdio>
#include <fstream>
#include <string>

#include <errshim/catalog.hpp>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: errshim_layer_snapshot OUT.snapshot IN.yaml\n");
    return 2;
  }
  std::string snapshot;
  try {
    snapshot = errshim::CatalogBuilder().add_path(argv[2]).build()->snapshot();
  } catch (const errshim::catalog_error& e) {
    for (const errshim::Problem& p : e.problems()) std::fprintf(stderr, "%s\n", p.to_string().c_str());
    std::fprintf(stderr, "errshim_layer_snapshot: %s has %zu problem(s); fix them (or regenerate it) to build\n",
                 argv[2], e.problems().size());
    return 1;
  }
  const std::string tmp = std::string(argv[1]) + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out.write(snapshot.data(), static_cast<std::streamsize>(snapshot.size()));
  out.close();
  if (!out || std::rename(tmp.c_str(), argv[1]) != 0) {
    std::fprintf(stderr, "errshim_layer_snapshot: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
