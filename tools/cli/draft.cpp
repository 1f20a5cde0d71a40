// errshim draft.
#include <filesystem>
#include <memory>
#include <system_error>

#include <fmt/format.h>

#include "cli.hpp"
#include "errshim/draft.hpp"

namespace errshim_cli {

namespace {

struct DraftOpts {
  CatalogOptions catalog;
  std::vector<std::string> words;
  std::string from_scan;
  std::size_t top = 5;
  std::string library;
};

int draft(const DraftOpts& a) {
  errshim::DraftOptions options;
  options.library = a.library;
  if (a.from_scan.empty()) {
    const std::string message = message_of(a.words, "draft");
    if (message.find_first_not_of(" \t\r\n") == std::string::npos)
      throw usage_error("draft needs the error's text: the MESSAGE given is empty");
    fmt::print("{}", errshim::draft_entry(message, options));
    return kOk;
  }
  if (!a.words.empty()) throw usage_error("draft takes a MESSAGE or --from-scan FILE, not both");
  std::error_code ec;
  if (std::filesystem::is_directory(a.from_scan, ec))
    throw usage_error(fmt::format("'{}' is a directory", a.from_scan));
  const auto catalog = load_catalog(a.catalog);
  std::vector<errshim::DraftGroup> groups;
  try {
    groups = errshim::unrecognised_groups(a.from_scan, *catalog, a.top);
  } catch (const std::system_error& e) {
    throw usage_error(fmt::format("cannot read '{}': {}", a.from_scan, e.code().message()));
  }
  if (groups.empty()) {
    fmt::print(stderr, "errshim draft: every error block in '{}' is recognised: nothing to draft\n", a.from_scan);
    return kNoMatch;
  }
  fmt::print("{}", errshim::draft_entries(groups, options));
  return kOk;
}

}  // namespace

Command add_draft(CLI::App& root) {
  auto o = std::make_shared<DraftOpts>();
  CLI::App* cmd = add_command(
      root, "draft", "write a skeleton catalog entry for an unknown error",
      "Write a catalog file (YAML, to standard output) with a draft entry for MESSAGE ('-': standard input), or with "
      "--from-scan, one per most frequent unrecognised error of a log. The template has placeholders where the "
      "message holds values, the source is where the message says it was raised, examples.match holds the message; "
      "cause, trigger and remediation are TODO markers that 'errshim lint' refuses until they are written.");
  add_catalog_options(*cmd, o->catalog);
  cmd->add_option("--from-scan", o->from_scan, "draft the log FILE's unrecognised errors, one per fingerprint");
  cmd->add_option("--top", o->top, "with --from-scan: the N most frequent fingerprints (default 5)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}))
      ->needs("--from-scan");
  cmd->add_option("--library", o->library, "the entries' library (default: from the stated raise site, else unknown)");
  cmd->add_option("MESSAGE", o->words, "the error message ('-': standard input)");
  return {cmd, [o] { return draft(*o); }};
}

}  // namespace errshim_cli
