// Build step: builds the catalog of patterns/ (embedded as YAML in this
// program) and writes a C++ source holding its snapshot, which the library
// embeds instead of the YAML (src/catalog/embedded_catalog.hpp). A catalog with any
// problem fails the build here, with every problem listed.
//
//   errshim_embed_snapshot OUT.cpp
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <sys/stat.h>

#include <errshim/catalog.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: errshim_embed_snapshot OUT.cpp\n");
    return 2;
  }
  std::string snapshot;
  try {
    snapshot = errshim::CatalogBuilder().add_embedded().build()->snapshot();
  } catch (const errshim::catalog_error& e) {
    for (const errshim::Problem& p : e.problems()) std::fprintf(stderr, "%s\n", p.to_string().c_str());
    std::fprintf(stderr, "errshim_embed_snapshot: the catalog in patterns/ has %zu problem(s); fix them to build\n",
                 e.problems().size());
    return 1;
  }
  std::ostringstream out;
  out << "// Generated at build time by cmake/embed_snapshot.cpp from patterns/*.yaml. Do not edit.\n"
         "#include \"embedded_catalog.hpp\"\n"
         "namespace errshim::detail {\n"
         "namespace {\n"
         "const char snapshot[] = {";
  static const char hex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < snapshot.size(); ++i) {
    const auto b = static_cast<unsigned char>(snapshot[i]);
    out << (i % 24 == 0 ? "\n" : "") << "'\\x" << hex[b >> 4] << hex[b & 15] << "',";
  }
  out << "\n};\n"
         "}  // namespace\n"
         "const EmbeddedCatalog& embedded_catalog() {\n"
         "  static const EmbeddedCatalog catalog{{}, std::string_view(snapshot, sizeof snapshot)};\n"
         "  return catalog;\n"
         "}\n"
         "}  // namespace errshim::detail\n";
  const std::string text = out.str();
  // Rewritten only when it changed: the library is not recompiled for a
  // source change that leaves the catalog as it was.
  {
    std::ifstream old(argv[1], std::ios::binary);
    if (old && std::string(std::istreambuf_iterator<char>(old), {}) == text) return 0;
  }
  // A fresh file beside OUT (mkstemp: never through a name that exists,
  // such as a link planted at OUT.tmp), renamed over it.
  std::string tmp = std::string(argv[1]) + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  bool ok = fd >= 0 && ::fchmod(fd, 0644) == 0;  // a source file, not mkstemp's 0600
  FILE* f = fd >= 0 ? ::fdopen(fd, "wb") : nullptr;
  ok = ok && f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f && std::fclose(f) != 0) ok = false;
  if (!ok) {
    if (fd >= 0) std::remove(tmp.c_str());
    std::fprintf(stderr, "errshim_embed_snapshot: cannot write %s\n", tmp.c_str());
    return 1;
  }
  if (std::rename(tmp.c_str(), argv[1]) != 0) {
    std::remove(tmp.c_str());
    std::fprintf(stderr, "errshim_embed_snapshot: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
