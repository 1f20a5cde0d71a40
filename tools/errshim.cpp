// The errshim command-line tool. It uses only the public API, like any user.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "errshim/errshim.hpp"

namespace {

// Exit codes, one table for every command (also in --help and README).
enum Exit : int { kOk = 0, kNoMatch = 1, kUsage = 2 };

constexpr const char* kHelp = R"(errshim - explains machine-learning inference errors

usage:
  errshim explain [--json] [--catalog PATH]... [--context K=V,...] MESSAGE | -
      Explain one error message. With '-', all of standard input is the
      message (a whole traceback or log excerpt).
  errshim lint [--with-embedded] [PATH...]
      Check catalog files or folders (default: the embedded catalog): every
      entry compiles, each 'match' example is won by its entry with the
      captures it lists, no 'no_match' example is claimed by it.
  errshim list [--json] [--catalog PATH]...
      Print the entries: id, source, first line of the cause.
  errshim --version | --help | COMMAND --help

options:
  --catalog PATH   add a catalog file or folder on top of the embedded one
                   (entries with an existing id replace it); repeatable
  --context K=V,.. what you know of where the error happened, e.g.
                   transformers=4.57,device=metal: entries scoped to other
                   versions or devices are passed over
  --json           print JSON instead of text

exit codes:
  0  explain: the message was recognised; lint: clean; list: done
  1  explain: nothing matched; lint: problems found
  2  usage error, or a catalog that cannot be loaded
)";

struct Args {
  std::string command;
  bool json = false;
  bool with_embedded = false;
  bool help = false;
  std::vector<std::string> catalogs;
  errshim::Context context;
  std::vector<std::string> positional;
};

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Args parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) throw usage_error("no command given");
  std::size_t i = 0;
  a.command = args[i++];
  bool options_done = false;
  for (; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (options_done || s == "-" || s.empty() || s[0] != '-') {
      a.positional.push_back(s);
    } else if (s == "--") {
      options_done = true;
    } else if (s == "--json") {
      a.json = true;
    } else if (s == "--with-embedded") {
      a.with_embedded = true;
    } else if (s == "--help" || s == "-h") {
      a.help = true;
    } else if (s == "--context" || s.rfind("--context=", 0) == 0) {
      if (s == "--context" && i + 1 >= args.size()) throw usage_error("--context needs KEY=VALUE[,KEY=VALUE...]");
      try {
        for (auto& [k, v] : errshim::Context::parse(s == "--context" ? args[++i] : s.substr(10)).values) a.context.values[k] = v;
      } catch (const std::invalid_argument& e) {
        throw usage_error(e.what());
      }
    } else if (s == "--catalog" || s.rfind("--catalog=", 0) == 0) {
      if (s == "--catalog") {
        if (i + 1 >= args.size()) throw usage_error("--catalog needs a PATH");
        a.catalogs.push_back(args[++i]);
      } else {
        a.catalogs.push_back(s.substr(10));
      }
    } else {
      throw usage_error(fmt::format("unknown option '{}'", s));
    }
  }
  return a;
}

errshim::CatalogPtr catalog_for(const Args& a) {
  if (a.catalogs.empty()) return errshim::Catalog::embedded();
  errshim::CatalogBuilder b;
  b.add_embedded();
  for (const auto& c : a.catalogs) b.add_path(c);
  return b.build();
}

int explain(const Args& a) {
  if (a.positional.empty()) throw usage_error("explain needs a MESSAGE, or '-' to read standard input");
  std::string message;
  if (a.positional.size() == 1 && a.positional[0] == "-") {
    message.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    message = fmt::format("{}", fmt::join(a.positional, " "));
  }
  const auto catalog = catalog_for(a);
  const errshim::MatchResult r = catalog->match(message, a.context);
  for (const auto& p : r.problems) fmt::print(stderr, "errshim: warning: {}\n", p);
  if (!r.diagnosis) {
    if (a.json)
      fmt::print("{}\n", errshim::unmatched_json());
    else
      fmt::print(stderr, "errshim: no catalog entry matches this message\n");
    return kNoMatch;
  }
  fmt::print(a.json ? "{:j}\n" : "{}", *r.diagnosis);
  return kOk;
}

int lint(const Args& a) {
  errshim::CatalogBuilder b;
  if (a.positional.empty() || a.with_embedded) b.add_embedded();
  for (const auto& p : a.positional) b.add_path(p);
  errshim::CatalogPtr catalog;
  try {
    catalog = b.build();
  } catch (const errshim::catalog_error& e) {
    for (const auto& p : e.problems()) fmt::print("{}\n", p.to_string());
    fmt::print(stderr, "errshim lint: {} problem(s); the catalog does not load\n", e.problems().size());
    return kNoMatch;
  }
  const auto problems = errshim::lint(*catalog);
  for (const auto& p : problems) fmt::print("{}\n", p.to_string());
  std::size_t examples = 0;
  for (const auto& e : catalog->entries()) examples += e->match_examples.size() + e->no_match_examples.size();
  fmt::print(stderr, "errshim lint: {} entries, {} examples, {} problem(s)\n", catalog->size(), examples,
             problems.size());
  return problems.empty() ? kOk : kNoMatch;
}

int list(const Args& a) {
  const auto catalog = catalog_for(a);
  for (const auto& e : catalog->entries()) {
    const std::string cause = e->cause.substr(0, e->cause.find('\n'));
    if (a.json) {
      fmt::print("{{\"id\": {}, \"library\": {}, \"source\": {{\"repo\": {}, \"path\": {}, \"line\": {}, \"commit\": {}}}, "
                 "\"cause\": {}}}\n",
                 errshim::json_quote(e->id), errshim::json_quote(e->library), errshim::json_quote(e->source.repo),
                 errshim::json_quote(e->source.path), e->source.line, errshim::json_quote(e->source.commit),
                 errshim::json_quote(cause));
    } else {
      fmt::print("{:<48} {}:{}  {}\n", e->id, e->source.path, e->source.line, cause);
    }
  }
  return kOk;
}

int run(int argc, char** argv) {
  try {
    if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" || std::string(argv[1]) == "help")) {
      fmt::print("{}", kHelp);
      return kOk;
    }
    if (argc >= 2 && std::string(argv[1]) == "--version") {
      fmt::print("errshim {}\n", errshim::version());
      return kOk;
    }
    const Args a = parse(argc, argv);
    if (a.help) {
      fmt::print("{}", kHelp);
      return kOk;
    }
    if (a.command == "explain") return explain(a);
    if (a.command == "lint") return lint(a);
    if (a.command == "list") return list(a);
    throw usage_error(fmt::format("unknown command '{}'", a.command));
  } catch (const usage_error& e) {
    fmt::print(stderr, "errshim: {}\nrun 'errshim --help' for usage\n", e.what());
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

int main(int argc, char** argv) { return run(argc, argv); }
