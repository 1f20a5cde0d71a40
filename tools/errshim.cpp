// The errshim command-line tool. It uses only the public API, like any user.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "errshim/errshim.hpp"
#include "errshim/follow.hpp"
#include "errshim/scan.hpp"
#include "errshim/importer.hpp"

namespace {

// Exit codes, one table for every command (also in --help and README).
enum Exit : int { kOk = 0, kNoMatch = 1, kUsage = 2 };

constexpr const char* kHelp = R"(errshim - explains machine-learning inference errors

usage:
  errshim explain [--json] [--catalog PATH]... [--context K=V,...] MESSAGE | -
      Explain one error message. With '-', all of standard input (at most
      16 MiB) is the message (a whole traceback or log excerpt).
  errshim lint [--with-embedded] [PATH...]
      Check catalog files or folders (default: the embedded catalog): every
      entry compiles, each 'match' example is won by its entry with the
      captures it lists, no 'no_match' example is claimed by it.
  errshim list [--json | --patterns] [--catalog PATH]...
      Print the entries: id, source, first line of the cause. --patterns:
      each entry's Boost.Regex, one a line (for comparing other tools).
  errshim fix --config FILE [--allow CLASS[,CLASS...]] [--pin KEY]... [--dry-run]
              [--catalog PATH]... [--context K=V,...] MESSAGE | -
      Diagnose the message and apply the first fix the policy allows to the
      config (YAML or JSON); print the resulting config on standard output in
      the input's format. FILE is never modified. Classes: safe, slower,
      changes-output (default: safe,slower). With --dry-run, print the changes
      it would make instead.
  errshim check --config FILE [--model NAME] [--json] [--catalog PATH]... [--context K=V,...]
      Report the known errors this config will hit, before loading anything.
  errshim import FILE...
      Convert error-database records (JSON, schemaVersion 2; at most 16 MiB
      per FILE, '-' for standard input) into a catalog file on standard
      output; the text is marked imported.
  errshim scan [--json] [-j N] [--catalog PATH]... [--context K=V,...] [FILE...]
      Find the error blocks in logs (standard input when no FILE, or '-'):
      Python tracebacks, Rust 'Error:' chains and panics, libtorch
      backtraces, ERROR/CRITICAL lines. Print how often each catalog entry
      occurred with its first example, then the blocks nothing matched.
      --json: one JSON object per line and block, as 'explain --json' plus
      "file", "line" (where the block starts), "lines" and "kind".
      A progress bar is shown on a terminal for inputs over 32 MiB.
      -j N: scan each file with N threads (default: the core count for
      files of 64 MiB or more; -j 1: one thread).
  errshim scan --follow [--idle-ms N] [--out FILE] [--confirm] [--syslog-escapes]
               [--catalog PATH]... [--context K=V,...] [FILE | -]
      Stream: print each block's JSON line as soon as the block is complete
      (the next line it does not take, or N ms without input, default 500).
      FILE is followed as it grows and reopened when rotated or truncated;
      '-' (the default) is read to its end. Ends cleanly on SIGTERM or SIGINT,
      printing the block still open. --out: append the JSON lines to FILE.
      --confirm: print OK once at start and per line read, as rsyslog's
      omprog confirmMessages expects. --syslog-escapes: '#012' in a line is
      a newline (rsyslog's escaping of multi-line records). Exit code 0.
  errshim snapshot [--catalog PATH]... OUT.snapshot
      Write the catalog (embedded, plus the --catalog layers) as a snapshot:
      it loads without parsing YAML (large catalogs load ~15x faster) when
      given as '--catalog OUT.snapshot' or to CatalogBuilder::add_path. Only
      this errshim version reads it. OUT is replaced atomically.
  errshim --version | --help | COMMAND --help

options:
  --catalog PATH   add a catalog file (.yaml, .yml, .snapshot) or folder on top of the embedded one
                   (entries with an existing id replace it); repeatable
  --cache DIR      keep a snapshot of each --catalog YAML layer in DIR and read it back while the
                   layer's bytes are unchanged (large catalogs: no YAML parse after the first run)
  --context K=V,.. what you know of where the error happened, e.g.
                   transformers=4.57,device=metal: entries scoped to other
                   versions or devices are passed over
  --json           print JSON instead of text

exit codes:
  0  explain: recognised; lint: clean; list: done; fix: a fix was applied
     (or, with --dry-run, would be); check: no known error ahead;
     scan: at least one error block was recognised
  1  explain: nothing matched; lint: problems found; fix: nothing matched or
     no fix allowed; check: known errors ahead;
     scan: no error block was recognised (none found, or none known)
  2  usage error, a catalog that cannot be loaded, or a file that cannot be read
)";

struct Args {
  std::string command;
  bool json = false;
  bool with_embedded = false;
  bool help = false;
  bool dry_run = false;
  bool patterns = false;  // list --patterns
  unsigned jobs = 0;      // scan -j N; 0: ScanOptions' default
  std::string config;
  std::string model;
  std::string allow;
  std::vector<std::string> pins;
  std::vector<std::string> catalogs;
  std::string cache;  // --cache DIR
  bool follow = false, confirm = false, syslog_escapes = false;  // scan --follow
  long idle_ms = 500;
  std::string out;
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
    } else if (s == "--dry-run") {
      a.dry_run = true;
    } else if (s == "--patterns") {
      a.patterns = true;
    } else if (s == "-j" || s == "--jobs") {
      if (i + 1 >= args.size()) throw usage_error(fmt::format("{} needs a number of threads", s));
      const std::string& v = args[++i];
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n == 0 || n > 256)
        throw usage_error(fmt::format("{} needs a number of threads from 1 to 256, not '{}'", s, v));
      a.jobs = static_cast<unsigned>(n);
    } else if (s == "--config" || s == "--model" || s == "--allow" || s == "--pin") {
      if (i + 1 >= args.size()) throw usage_error(fmt::format("{} needs a value", s));
      const std::string& v = args[++i];
      if (s == "--config") a.config = v;
      else if (s == "--model") a.model = v;
      else if (s == "--allow") a.allow = v;
      else a.pins.push_back(v);
    } else if (s == "--follow" || s == "--confirm" || s == "--syslog-escapes") {
      (s == "--follow" ? a.follow : s == "--confirm" ? a.confirm : a.syslog_escapes) = true;
    } else if (s == "--idle-ms" || s == "--out") {
      if (i + 1 >= args.size()) throw usage_error(fmt::format("{} needs a value", s));
      const std::string& v = args[++i];
      if (s == "--out") {
        a.out = v;
      } else {
        char* end = nullptr;
        a.idle_ms = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || a.idle_ms < 1 || a.idle_ms > 3600000)
          throw usage_error(fmt::format("--idle-ms: '{}' is not a number of milliseconds from 1 to 3600000", v));
      }
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
    } else if (s == "--cache" || s.rfind("--cache=", 0) == 0) {
      if (s == "--cache" && i + 1 >= args.size()) throw usage_error("--cache needs a DIR");
      a.cache = s == "--cache" ? args[++i] : s.substr(8);
      if (a.cache.empty()) throw usage_error("--cache needs a DIR");
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
  if (!a.cache.empty()) b.cache_in(a.cache);
  errshim::CatalogPtr catalog = b.build();
  for (const errshim::Problem& w : catalog->warnings()) fmt::print(stderr, "errshim: warning: {}\n", w.to_string());
  return catalog;
}

// What explain, fix and import read whole (standard input, import's
// files): a pipe from /dev/zero or a runaway log would otherwise grow without
// end. The library reads at most 1 MiB of a message anyway (head and tail),
// and a catalog file may hold at most 16 MiB.
constexpr std::size_t kMaxReadBytes = 16u << 20;

// All of `in`, or a usage error past kMaxReadBytes saying what to do instead.
std::string read_bounded(std::istream& in, const std::string& name, const std::string& instead) {
  std::string text;
  char buf[64 << 10];
  while (in.read(buf, sizeof buf), in.gcount() > 0) {
    const auto n = static_cast<std::size_t>(in.gcount());
    if (text.size() + n > kMaxReadBytes)
      throw usage_error(fmt::format("{} holds more than {} MiB, the most errshim reads; {}", name, kMaxReadBytes >> 20,
                                    instead));
    text.append(buf, n);
  }
  if (in.bad()) throw usage_error(fmt::format("cannot read {}", name));
  return text;
}

std::string message_of(const Args& a) {
  if (a.positional.empty()) throw usage_error(fmt::format("{} needs a MESSAGE, or '-' to read standard input", a.command));
  if (a.positional.size() == 1 && a.positional[0] == "-")
    return read_bounded(std::cin, "standard input",
                        fmt::format("pass the error's last lines instead (e.g. 'tail -c 1M LOG | errshim {}{} -'), or "
                                    "find the errors in a whole log with 'errshim scan LOG'",
                                    a.command, a.command == "fix" ? " --config FILE" : ""));
  return fmt::format("{}", fmt::join(a.positional, " "));
}

std::string value_text(const std::optional<errshim::Value>& v) {
  if (!v) return "(absent)";
  if (v->type == errshim::Value::Type::string) return errshim::json_quote(v->text);
  return v->type == errshim::Value::Type::null ? "null" : v->text;
}

int fix(const Args& a) {
  if (a.config.empty()) throw usage_error("fix needs --config FILE");
  const std::string message = message_of(a);
  errshim::Policy policy;
  policy.context = a.context;
  policy.mode = a.dry_run ? errshim::Mode::suggest : errshim::Mode::automatic;
  policy.pinned_keys.insert(a.pins.begin(), a.pins.end());
  if (!a.allow.empty()) {
    policy.allowed.clear();
    std::string cur;
    for (char c : a.allow + ",") {
      if (c != ',') {
        cur += c;
        continue;
      }
      const auto s = errshim::parse_safety(cur);
      if (!s || *s == errshim::Safety::manual)
        throw usage_error(fmt::format("--allow: unknown class '{}' (safe, slower, changes-output)", cur));
      policy.allowed.insert(*s);
      cur.clear();
    }
  }
  errshim::ConfigTree config = errshim::ConfigTree::load(a.config);
  const auto catalog = catalog_for(a);
  auto d = catalog->diagnose(message, a.context);
  if (!d) {
    fmt::print(stderr, "errshim: no catalog entry matches this message; {} is unchanged\n", a.config);
    return kNoMatch;
  }
  // As remediate() does: when text elsewhere in the message (a quoted or
  // echoed error) won the match, the root-cause message alone is fixed.
  if (auto root = errshim::root_cause_diagnosis(*catalog, *d, a.context)) d = std::move(root);
  errshim::ConfigTree scratch = config;
  const errshim::FixChoice choice = errshim::choose_fix(*d, scratch, policy);
  for (const auto& x : choice.decisions)
    if (x.outcome == errshim::Decision::Outcome::refused || x.outcome == errshim::Decision::Outcome::failed)
      fmt::print(stderr, "errshim: {} step {} {}: {}\n", d->id(), *x.step + 1, errshim::to_string(x.outcome), x.reason);
  if (!choice.step) {
    fmt::print(stderr, "errshim: {} recognised, but no fix is allowed on this config; it is unchanged\n", d->id());
    return kNoMatch;
  }
  const auto& step = d->entry->remediation[*choice.step];
  fmt::print(stderr, "errshim: {}: {} step {} ({}): {}\n", d->id(), a.dry_run ? "would apply" : "applied",
             *choice.step + 1, errshim::to_string(step.fix->safety), step.text);
  if (a.dry_run) {
    for (const auto& c : choice.changes)
      fmt::print("{}: {} -> {}\n", errshim::to_string(c.path), value_text(c.before), value_text(c.after));
  } else {
    fmt::print("{}", scratch.dump());
  }
  return kOk;
}

int check(const Args& a) {
  if (a.config.empty()) throw usage_error("check needs --config FILE");
  errshim::Context context = a.context;
  if (!a.model.empty()) context.values["model"] = a.model;
  // The config the user has: a model folder gives config.json and
  // generation_config.json (either may be missing); a file named like one of
  // them is that kind; any other file is the host's own, of no stated kind.
  std::optional<errshim::ConfigTree> own, model, generation;
  const std::filesystem::path path(a.config);
  if (std::filesystem::is_directory(path)) {
    if (std::filesystem::exists(path / "config.json")) model = errshim::ConfigTree::load(path / "config.json");
    if (std::filesystem::exists(path / "generation_config.json"))
      generation = errshim::ConfigTree::load(path / "generation_config.json");
    if (!model && !generation)
      throw usage_error(fmt::format("{} holds neither config.json nor generation_config.json", a.config));
  } else if (path.filename() == "config.json") {
    model = errshim::ConfigTree::load(path);
  } else if (path.filename() == "generation_config.json") {
    generation = errshim::ConfigTree::load(path);
  } else {
    own = errshim::ConfigTree::load(path);
  }
  errshim::PreflightConfigs configs;
  configs.config = own ? &*own : nullptr;
  configs.model = model ? &*model : nullptr;
  configs.generation = generation ? &*generation : nullptr;
  const auto catalog = catalog_for(a);
  const auto findings = errshim::check(configs, *catalog, context);
  for (const auto& f : findings) {
    std::vector<std::string> because;
    for (const auto& [path, v] : f.because) because.push_back(fmt::format("{} = {}", errshim::to_string(path), value_text(v)));
    if (a.json) {
      std::vector<std::string> quoted;
      for (const auto& b : because) quoted.push_back(errshim::json_quote(b));
      std::vector<std::string> steps;
      for (const auto& r : f.entry->remediation) steps.push_back(errshim::json_quote(r.text));
      fmt::print("{{\"id\": {}, \"because\": [{}], \"remediation\": [{}]}}\n", errshim::json_quote(f.entry->id),
                 fmt::join(quoted, ", "), fmt::join(steps, ", "));
      continue;
    }
    fmt::print("{} will fail: {}\n  because: {}\n", a.config, f.entry->id, fmt::join(because, ", "));
    fmt::print("  cause:   {}\n", f.entry->cause.substr(0, f.entry->cause.find('\n')));
    for (std::size_t i = 0; i < f.entry->remediation.size(); ++i)
      fmt::print("  {}. {}\n", i + 1, f.entry->remediation[i].text.substr(0, f.entry->remediation[i].text.find('\n')));
  }
  if (findings.empty() && !a.json) fmt::print(stderr, "errshim: no known error ahead for {}\n", a.config);
  return findings.empty() ? kOk : kNoMatch;
}

int import_files(const Args& a) {
  if (a.positional.empty()) throw usage_error("import needs at least one FILE ('-' for standard input)");
  std::string all;
  for (const std::string& f : a.positional) {
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
  return kOk;
}

int explain(const Args& a) {
  const std::string message = message_of(a);
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
  } catch (const errshim::import_error& e) {
    fmt::print(stderr, "errshim import: {}\n", e.what());
    return kUsage;
  } catch (const errshim::config_error& e) {
    fmt::print(stderr, "errshim: {}\n", e.what());
    return kUsage;
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

// A progress bar on standard error for one input, drawn only when the
// percentage changes, and wiped when done so the report starts clean.
class ProgressBar {
 public:
  ProgressBar(std::string name, std::uint64_t total) : name_(std::move(name)), total_(total) {}
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() {
    if (drawn_ >= 0) fmt::print(stderr, "\r\033[K");
  }
  void operator()(std::uint64_t done) {
    const int percent = static_cast<int>(std::min<std::uint64_t>(100, total_ > 0 ? done * 100 / total_ : 100));
    if (percent == drawn_) return;
    drawn_ = percent;
    constexpr int kWidth = 32;
    const int filled = percent * kWidth / 100;
    fmt::print(stderr, "\rerrshim scan: {} [{}{}] {:>3}%", name_, std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(kWidth - filled), '.'), percent);
    std::fflush(stderr);
  }

 private:
  std::string name_;
  std::uint64_t total_;
  int drawn_ = -1;
};

// Bytes in a file or redirected standard input; 0 when unknown (a pipe).
std::uint64_t input_size(const std::string& input) {
  struct stat st {};
  const int rc = input == "-" ? fstat(STDIN_FILENO, &st) : stat(input.c_str(), &st);
  return (rc == 0 && S_ISREG(st.st_mode)) ? static_cast<std::uint64_t>(st.st_size) : 0;
}

volatile std::sig_atomic_t g_stop_follow = 0;
extern "C" void on_stop_signal(int) { g_stop_follow = 1; }

// scan --follow: one input, JSON lines out as blocks complete, until its end
// or SIGTERM/SIGINT (the open block is printed before exiting).
int scan_follow(const Args& a) {
  if (a.positional.size() > 1) throw usage_error("scan --follow takes one FILE, or '-' for standard input");
  const std::string input = a.positional.empty() ? "-" : a.positional[0];
  const auto catalog = catalog_for(a);
  std::FILE* out = stdout;
  if (!a.out.empty() && (out = std::fopen(a.out.c_str(), "a")) == nullptr)
    throw usage_error(fmt::format("cannot write '{}': {}", a.out, std::strerror(errno)));
  errshim::FollowOptions options;
  options.scan.context = a.context;
  options.idle = std::chrono::milliseconds(a.idle_ms);
  options.syslog_escapes = a.syslog_escapes;
  errshim::BlockFollower follower(input == "-" ? "<stdin>" : input, catalog, [&](const errshim::ScanBlock& block) {
    fmt::print(out, "{}\n", errshim::to_json(block));
    std::fflush(out);
  }, options);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;  // no SA_RESTART: a blocked read or poll returns at once
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  const auto confirm = [](std::uint64_t lines) {
    for (; lines > 0; --lines) std::fputs("OK\n", stdout);
    std::fflush(stdout);
  };
  if (a.confirm) confirm(1);  // omprog waits for a new instance to say it is ready
  try {
    errshim::follow(input, follower, [] { return g_stop_follow != 0; },
                    a.confirm ? std::function<void(std::uint64_t)>(confirm) : nullptr);
  } catch (const std::runtime_error& e) {
    if (out != stdout) std::fclose(out);
    throw usage_error(e.what());
  }
  if (out != stdout) std::fclose(out);
  return kOk;
}

int scan(const Args& a) {
  if (a.follow) return scan_follow(a);
  constexpr std::uint64_t kProgressFrom = 32u << 20;
  const auto catalog = catalog_for(a);
  std::vector<std::string> inputs = a.positional;
  if (inputs.empty()) inputs.push_back("-");
  // The bar goes to a terminal only, and not where it would tear JSON lines
  // printed to the same terminal.
  const bool bar_allowed = isatty(STDERR_FILENO) == 1 && !(a.json && isatty(STDOUT_FILENO) == 1);
  errshim::ScanSummary summary;
  errshim::ScanOptions options;
  options.context = a.context;
  options.threads = a.jobs;
  std::uint64_t matched = 0;
  for (const std::string& input : inputs) {
    const bool from_stdin = input == "-";
    std::ifstream file;
    if (!from_stdin) {
      std::error_code ec;
      if (std::filesystem::is_directory(input, ec)) throw usage_error(fmt::format("'{}' is a directory", input));
      file.open(input, std::ios::binary);
      if (!file) throw usage_error(fmt::format("cannot read '{}'", input));
    }
    const std::string name = from_stdin ? "<stdin>" : input;
    const std::uint64_t size = input_size(input);
    std::optional<ProgressBar> bar;
    if (bar_allowed && size >= kProgressFrom) bar.emplace(name, size);
    options.on_progress = nullptr;
    if (bar) options.on_progress = std::ref(*bar);
    const auto visit = [&](const errshim::ScanBlock& block) {
      if (!a.json) return summary.add(block);
      bar.reset();  // a JSON line never lands on top of the bar
      fmt::print("{}\n", errshim::to_json(block));
      std::fflush(stdout);  // streaming: a reader (jq, a tail -f pipeline) sees each block as it ends
    };
    // A named file by path: mapped, and split across threads when large.
    const errshim::ScanStats stats = from_stdin ? errshim::scan(std::cin, name, *catalog, visit, options)
                                                : errshim::scan_file(input, *catalog, visit, options);
    matched += stats.matched;
  }
  if (!a.json) fmt::print("{}", summary.to_text());
  return matched > 0 ? kOk : kNoMatch;
}

int list(const Args& a) {
  const auto catalog = catalog_for(a);
  if (a.patterns) {
    for (const auto& e : catalog->entries()) {
      std::string re = e->pattern;  // one a line: a raw newline becomes the escape matching it
      for (std::size_t at = re.find('\n'); at != std::string::npos; at = re.find('\n', at + 2)) re.replace(at, 1, "\\n");
      fmt::print("{}\n", re);
    }
    return kOk;
  }
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

int snapshot(const Args& a) {
  if (a.positional.size() != 1) throw usage_error("snapshot needs one OUT path");
  const std::filesystem::path out = a.positional[0];
  if (out.extension() != ".snapshot")
    throw usage_error(fmt::format("'{}': name the snapshot *.snapshot, so --catalog reads it as one", out.string()));
  const errshim::CatalogPtr catalog = catalog_for(a);
  const std::string bytes = catalog->snapshot();
  // Written to a fresh file beside OUT (mkstemp: a new name, O_EXCL, so
  // never through a link planted there), then renamed over it: a server
  // watching OUT never reads half a snapshot.
  const std::filesystem::path dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  std::string tmp = (dir / (out.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(fmt::format("cannot write in '{}': {}", dir.string(), std::strerror(errno)));
  // The mode a file created in place gets (mkstemp's is 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  bool written = ::fchmod(fd, 0666 & ~mask) == 0;
  for (std::size_t done = 0; written && done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    if (written) done += static_cast<std::size_t>(n);
  }
  const int error = errno;
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot write '{}': {}", tmp, std::strerror(error)));
  }
  if (::rename(tmp.c_str(), out.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot replace '{}': {}", out.string(), std::strerror(e)));
  }
  fmt::print(stderr, "errshim snapshot: {} entries, {} bytes written to {}\n", catalog->size(), bytes.size(), out.string());
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
    if (a.command == "scan") return scan(a);
    if (a.command == "fix") return fix(a);
    if (a.command == "check") return check(a);
    if (a.command == "import") return import_files(a);
    if (a.command == "snapshot") return snapshot(a);
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
