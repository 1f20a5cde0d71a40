// Shared parts of the errshim command line: exit codes, the options several
// commands take, catalog loading, terminal detection, bounded reads.
// Each command lives in its own function (add_<command>), so a new command or
// option is a local change.
#pragma once

#include <cstddef>
#include <functional>
#include <istream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "errshim/errshim.hpp"
#include "errshim/render.hpp"

namespace errshim_cli {

// Exit codes, one table for every command (also in --help and README).
enum Exit : int { kOk = 0, kNoMatch = 1, kUsage = 2 };

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --catalog, --cache and --context, for the commands that read the catalog.
struct CatalogOptions {
  std::vector<std::string> catalogs;
  std::vector<std::string> generated;  // generated layers by library name; "all"
  std::string cache;
  std::vector<std::string> contexts;
};
void add_catalog_options(CLI::App& cmd, CatalogOptions& o);
errshim::CatalogPtr load_catalog(const CatalogOptions& o);
errshim::Context context_of(const CatalogOptions& o);  // throws usage_error

// --json, --color and --verbose, for the commands that print a report.
struct OutputOptions {
  bool json = false;
  std::string color = "auto";
  bool verbose = false;
};
void add_output_options(CLI::App& cmd, OutputOptions& o);
// Colour: --color=always/never, else NO_COLOR (set, not empty) turns it off,
// CLICOLOR_FORCE (set, not "0") on, else on when standard output is a
// terminal. Width: COLUMNS, else the terminal's, else 100.
errshim::TextOptions text_options(const OutputOptions& o);
bool color_wanted(std::string_view mode);
std::size_t output_width();

// errshim's version plus a content hash of the loaded catalog:
// "0.2.0+catalog.1a2b3c4d5e6f7a8b".
std::string catalog_version(const errshim::Catalog& catalog);
// `object` (a JSON object) with "catalog": {"version", "entries"} added last.
std::string with_catalog(std::string object, const errshim::Catalog& catalog);

// All of `in`, or a usage error past 16 MiB saying what to do instead.
std::string read_bounded(std::istream& in, const std::string& name, const std::string& instead);
// The MESSAGE words joined, or standard input for '-'.
std::string message_of(const std::vector<std::string>& words, const std::string& command);
// A config value as the CLI shows it: JSON spelling, "(absent)" for none.
std::string value_text(const std::optional<errshim::Value>& v);
// Replaces `path` with `bytes` through a fresh file beside it and a rename,
// so a reader never sees half a file. `mode`: the new file's permissions
// (default: what a file created in place gets).
void write_atomically(const std::string& path, const std::string& bytes, std::optional<unsigned> mode = std::nullopt);

// A subcommand: `summary` (one line) in the command list, `details` (a
// paragraph, wrapped to the output width) in its own --help.
CLI::App* add_command(CLI::App& root, const std::string& name, const std::string& summary, const std::string& details);

// A command: its subcommand, and what runs it once it was parsed.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command add_explain(CLI::App& root);
Command add_list(CLI::App& root);
Command add_lint(CLI::App& root);
Command add_fix(CLI::App& root);
Command add_check(CLI::App& root);
Command add_import(CLI::App& root);
Command add_scan(CLI::App& root);
Command add_snapshot(CLI::App& root);
Command add_draft(CLI::App& root);

}  // namespace errshim_cli
