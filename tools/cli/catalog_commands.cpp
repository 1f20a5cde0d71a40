// errshim lint, import and snapshot: commands on catalog files.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli.hpp"
#include "errshim/lint.hpp"
#include "errshim/importer.hpp"

namespace errshim_cli {

Command add_lint(CLI::App& root) {
  struct Opts {
    bool with_embedded = false;
    std::vector<std::string> paths;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = add_command(
      root, "lint", "check catalog files against their examples",
      "Check catalog files or folders (default: the embedded catalog): every entry compiles, each 'match' example is "
      "won by its entry with the captures it lists, no 'no_match' example is claimed by it, and the prose shown to "
      "users holds no authoring notes.");
  cmd->add_flag("--with-embedded", o->with_embedded, "lint PATH... on top of the embedded catalog");
  cmd->add_option("PATH", o->paths, "catalog files or folders");
  return {cmd, [o] {
            errshim::CatalogBuilder b;
            if (o->paths.empty() || o->with_embedded) b.add_embedded();
            for (const auto& p : o->paths) b.add_path(p);
            errshim::CatalogPtr catalog;
            try {
              catalog = b.build();
            } catch (const errshim::import_error& e) {
              fmt::print(stderr, "errshim import: {}\n", e.what());
              return static_cast<int>(kUsage);
            } catch (const errshim::config_error& e) {
              fmt::print(stderr, "errshim: {}\n", e.what());
              return static_cast<int>(kUsage);
            } catch (const errshim::catalog_error& e) {
              for (const auto& p : e.problems()) fmt::print("{}\n", p.to_string());
              fmt::print(stderr, "errshim lint: {} problem(s); the catalog does not load\n", e.problems().size());
              return static_cast<int>(kNoMatch);
            }
            const auto problems = errshim::lint(*catalog);
            for (const auto& p : problems) fmt::print("{}\n", p.to_string());
            std::size_t examples = 0;
            for (const auto& e : catalog->entries()) examples += e->match_examples.size() + e->no_match_examples.size();
            fmt::print(stderr, "errshim lint: {} entries, {} examples, {} problem(s)\n", catalog->size(), examples,
                       problems.size());
            return static_cast<int>(problems.empty() ? kOk : kNoMatch);
          }};
}

Command add_import(CLI::App& root) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = add_command(
      root, "import", "convert error-database records to catalog YAML",
      "Convert error-database records (JSON, schemaVersion 2; at most 16 MiB per FILE, '-' for standard input) into "
      "a catalog file on standard output; the text is marked imported.");
  cmd->add_option("FILE", *files, "record files ('-': standard input)");
  return {cmd, [files] {
            if (files->empty()) throw usage_error("import needs at least one FILE ('-' for standard input)");
            std::string all;
            for (const std::string& f : *files) {
              constexpr const char* kSplit = "split the records into several files and import them one by one";
              std::string json;
              if (f == "-") {
                json = read_bounded(std::cin, "standard input", kSplit);
              } else {
                std::ifstream in(f, std::ios::binary);
                if (!in) throw usage_error(fmt::format("cannot read {}", f));
                json = read_bounded(in, fmt::format("'{}'", f), kSplit);
              }
              std::string yaml = errshim::import_records(json, f);
              if (!all.empty()) {  // one catalog file: append the next file's entries
                const std::size_t at = yaml.find("entries:\n");
                yaml = at == std::string::npos ? std::string() : yaml.substr(at + 9);
              }
              all += yaml;
            }
            fmt::print("{}", all);
            return static_cast<int>(kOk);
          }};
}

Command add_snapshot(CLI::App& root) {
  struct Opts {
    CatalogOptions catalog;
    std::vector<std::string> out;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = add_command(
      root, "snapshot", "write the catalog as a snapshot that loads without YAML",
      "Write the catalog (embedded, plus the --catalog layers) as a snapshot: it loads without parsing YAML when "
      "given as '--catalog OUT.snapshot' or to CatalogBuilder::add_snapshot. Only this errshim version reads it. OUT "
      "is replaced atomically.");
  add_catalog_options(*cmd, o->catalog);
  cmd->add_option("OUT", o->out, "the snapshot file to write, named *.snapshot");
  return {cmd, [o] {
            if (o->out.size() != 1) throw usage_error("snapshot needs one OUT path");
            const std::filesystem::path out = o->out[0];
            if (out.extension() != ".snapshot")
              throw usage_error(
                  fmt::format("'{}': name the snapshot *.snapshot, so --catalog reads it as one", out.string()));
            const errshim::CatalogPtr catalog = load_catalog(o->catalog);
            const std::string bytes = catalog->snapshot();
            // A server watching OUT never reads half a snapshot.
            write_atomically(out.string(), bytes);
            fmt::print(stderr, "errshim snapshot: {} entries, {} bytes written to {}\n", catalog->size(), bytes.size(),
                       out.string());
            return static_cast<int>(kOk);
          }};
}

}  // namespace errshim_cli
