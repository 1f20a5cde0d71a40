// The errshim command-line tool. It uses only the public API, like any user,
// and CLI11 for its command line.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"

namespace errshim_cli {
namespace {

constexpr const char* kExitCodes = R"(exit codes:
  0  explain: recognised (or an entry id); lint: clean; list: entries shown;
     fix: a fix was applied (or, with --dry-run, would be); check: no known
     error ahead; scan: at least one error block was recognised; import,
     snapshot: written
  1  explain: nothing matched; lint: problems found; list: no entry fits the
     filters; fix: nothing matched, no fix allowed, or nothing confirmed;
     check: known errors ahead; scan: no error block was recognised
  2  usage error, a catalog that cannot be loaded, or a file that cannot be
     read or written

Run 'errshim COMMAND --help' for a command's options. Text goes in colour to
a terminal (--color=never, or NO_COLOR=1, turns it off; CLICOLOR_FORCE=1 or
--color=always turns it on) and is wrapped to COLUMNS (else the terminal's
width, else 100 columns).)";

int run(int argc, char** argv) {
  CLI::App app{"errshim - explains machine-learning inference errors", "errshim"};
  app.footer(kExitCodes);
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "print errshim's version and the catalog's");
  std::vector<Command> commands = {add_explain(app), add_list(app), add_lint(app),     add_fix(app),  add_check(app),
                                   add_import(app),  add_scan(app), add_snapshot(app), add_draft(app)};
  CLI::App* help = app.add_subcommand("help", "Print this help");
  std::string current = "errshim";
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);
      for (const Command& c : commands)
        if (c.app->parsed()) current = "errshim " + c.app->get_name();
      throw usage_error(e.what());
    }
    if (version) {
      fmt::print("errshim {} (catalog {}, {} entries)\n", errshim::version(),
                 catalog_version(*errshim::Catalog::embedded()), errshim::Catalog::embedded()->size());
      return kOk;
    }
    if (help->parsed()) {
      fmt::print("{}", app.help());
      return kOk;
    }
    for (const Command& c : commands) {
      if (!c.app->parsed()) continue;
      current = "errshim " + c.app->get_name();
      return c.run();
    }
    throw usage_error("no command given");
  } catch (const usage_error& e) {
    fmt::print(stderr, "errshim: {}\nrun '{} --help' for usage\n", e.what(), current);
    return kUsage;
  } catch (const errshim::catalog_error& e) {
    for (const auto& p : e.problems()) fmt::print(stderr, "{}\n", p.to_string());
    fmt::print(stderr, "errshim: the catalog cannot be loaded ({} problem(s))\n", e.problems().size());
    return kUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "errshim: {}\n", e.what());
    return kUsage;
  }
}

}  // namespace
}  // namespace errshim_cli

int main(int argc, char** argv) { return errshim_cli::run(argc, argv); }
