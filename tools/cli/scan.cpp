// errshim scan.
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cli.hpp"
#include "errshim/follow.hpp"
#include "errshim/scan.hpp"

namespace errshim_cli {

namespace {

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

// A log says the same error many times, and a repeated block's JSON line
// differs from the earlier one's only in its line number. Per thread, the
// line of a text seen twice is kept cut around that number, and later blocks
// of the same text, file, kind and size are written from the cut. The cut is
// checked when it is made: the block rendered again at another line number
// must differ in that number alone, whatever writes the JSON.
class RepeatCache {
 public:
  template <class Render>
  void append(const errshim::ScanBlock& b, std::string& out, const Render& render) {
    if (b.text.size() > kMaxText || b.line > kMaxLine) return render(b, out);
    std::string key = fmt::format("{}\n{}\n{}\n{}\n", b.file, errshim::to_string(b.kind), b.lines, b.truncated);
    key += b.text;
    auto it = known_.find(key);
    if (it != known_.end() && it->second.state == State::cut) {
      out += it->second.head;
      out += std::to_string(b.line);
      out += it->second.tail;
      return;
    }
    const std::size_t start = out.size();
    render(b, out);
    if (it == known_.end()) {
      if (known_.size() >= kMaxEntries) known_.clear();
      known_.emplace(std::move(key), Seen{});
      return;
    }
    if (it->second.state != State::once) return;
    it->second.state = State::uncut;
    errshim::ScanBlock other = b;
    other.line = b.line * 10 + 7;  // another number, of another length
    std::string again;
    render(other, again);
    const std::string_view one(out.data() + start, out.size() - start);
    const std::string a = std::to_string(b.line), o = std::to_string(other.line);
    std::size_t p = 0;
    while (p < one.size() && p < again.size() && one[p] == again[p]) ++p;
    while (p > 0 && one[p - 1] >= '0' && one[p - 1] <= '9') --p;
    if (one.compare(p, a.size(), a) != 0 || again.compare(p, o.size(), o) != 0 ||
        one.substr(p + a.size()) != std::string_view(again).substr(p + o.size()))
      return;
    it->second = Seen{State::cut, std::string(one.substr(0, p)), std::string(one.substr(p + a.size()))};
  }

 private:
  static constexpr std::size_t kMaxEntries = 128, kMaxText = 8u << 10;
  static constexpr std::uint64_t kMaxLine = std::uint64_t{1} << 58;
  enum class State { once, uncut, cut };
  struct Seen {
    State state = State::once;
    std::string head, tail;
  };
  std::unordered_map<std::string, Seen> known_;
};

struct ScanOpts {
  CatalogOptions catalog;
  bool json = false;
  unsigned jobs = 0;  // 0: ScanOptions' default
  bool no_mmap = false;
  std::vector<std::string> inputs;
  // --follow
  bool follow = false, confirm = false, syslog_escapes = false;
  long idle_ms = 500;
  std::string out;
};

volatile std::sig_atomic_t g_stop_follow = 0;
extern "C" void on_stop_signal(int) { g_stop_follow = 1; }

// scan --follow: one input, JSON lines out as blocks complete, until its end
// or SIGTERM/SIGINT (the open block is printed before exiting).
int scan_follow(const ScanOpts& a) {
  if (a.inputs.size() > 1) throw usage_error("scan --follow takes one FILE, or '-' for standard input");
  const std::string input = a.inputs.empty() ? "-" : a.inputs[0];
  const auto catalog = load_catalog(a.catalog);
  std::FILE* out = stdout;
  if (!a.out.empty() && (out = std::fopen(a.out.c_str(), "a")) == nullptr)
    throw usage_error(fmt::format("cannot write '{}': {}", a.out, std::strerror(errno)));
  errshim::FollowOptions options;
  options.scan.context = context_of(a.catalog);
  options.idle = std::chrono::milliseconds(a.idle_ms);
  options.syslog_escapes = a.syslog_escapes;
  errshim::BlockFollower follower(
      input == "-" ? "<stdin>" : input, catalog,
      [&](const errshim::ScanBlock& block) {
        fmt::print(out, "{}\n", with_catalog(errshim::to_json(block), *catalog));
        std::fflush(out);
      },
      options);
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
    errshim::follow(
        input, follower, [] { return g_stop_follow != 0; },
        a.confirm ? std::function<void(std::uint64_t)>(confirm) : nullptr);
  } catch (const std::runtime_error& e) {
    if (out != stdout) std::fclose(out);
    throw usage_error(e.what());
  }
  if (out != stdout) std::fclose(out);
  return kOk;
}

// A scan is a short run that ends with its peak: memory freed along the way
// is kept for reuse instead of given back to the kernel. With threads, each
// give-back (an arena's top trimmed, a large block unmapped) flushed the TLB
// of every core the process runs on, and the memory was faulted in again
// soon after (README.md, "Scanning logs").
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

int scan(const ScanOpts& a) {
  if (a.follow) return scan_follow(a);
  keep_freed_memory();
  constexpr std::uint64_t kProgressFrom = 32u << 20;
  const auto catalog = load_catalog(a.catalog);
  std::vector<std::string> inputs = a.inputs;
  if (inputs.empty()) inputs.push_back("-");
  // The bar goes to a terminal only, and not where it would tear JSON lines
  // printed to the same terminal.
  const bool bar_allowed = isatty(STDERR_FILENO) == 1 && !(a.json && isatty(STDOUT_FILENO) == 1);
  errshim::ScanSummary summary;
  errshim::ScanOptions options;
  options.context = context_of(a.catalog);
  options.threads = a.jobs;
  options.map_file = !a.no_mmap;
  std::uint64_t matched = 0;
  // A block's line is its JSON with the catalog named inside, as
  // with_catalog() writes it: the closing part is the same for every block,
  // so it is worked out once from a stand-in object.
  const std::string stand_in = "{\"x\": 0";
  const std::string catalog_tail = with_catalog(stand_in + "}", *catalog).substr(stand_in.size());
  errshim::BlockOutput json_out;
  const auto render = [&](const errshim::ScanBlock& block, std::string& out) {
    std::string object = errshim::to_json(block);
    if (!object.empty() && object.back() == '}') {
      out.append(object, 0, object.size() - 1);
      out += catalog_tail;
    } else {
      out += with_catalog(std::move(object), *catalog);
    }
    out += '\n';
  };
  json_out.render = [&](const errshim::ScanBlock& block, std::string& out) {
    thread_local RepeatCache repeats;  // render runs on the scanning threads
    repeats.append(block, out, render);
  };
  std::unique_ptr<ProgressBar> bar;
  std::mutex bar_mu;  // writes come from the scanning threads, progress from this one
  json_out.write = [&](std::string_view bytes) {
    {
      const std::lock_guard<std::mutex> lock(bar_mu);
      bar.reset();  // a JSON line never lands on top of the bar
    }
    // Whole blocks, as they are ready (per read of a stream, per piece of a
    // file's part): a reader (jq, a pipeline) sees them without waiting for
    // the end.
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0)
      throw std::system_error(errno, std::generic_category(), "cannot write standard output");
  };
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
    bar.reset();
    if (bar_allowed && size >= kProgressFrom) bar = std::make_unique<ProgressBar>(name, size);
    options.on_progress = nullptr;
    // Through the pointer: a JSON write takes the bar down for good.
    if (bar)
      options.on_progress = [&bar, &bar_mu](std::uint64_t done) {
        const std::lock_guard<std::mutex> lock(bar_mu);
        if (bar) (*bar)(done);
      };
    const auto visit = [&](const errshim::ScanBlock& block) { summary.add(block); };
    // A named file by path: split across threads when large.
    errshim::ScanStats stats;
    if (a.json) {
      stats = from_stdin ? errshim::scan(std::cin, name, *catalog, json_out, options)
                         : errshim::scan_file(input, *catalog, json_out, options);
    } else {
      stats = from_stdin ? errshim::scan(std::cin, name, *catalog, visit, options)
                         : errshim::scan_file(input, *catalog, visit, options);
    }
    bar.reset();
    matched += stats.matched;
  }
  if (!a.json) fmt::print("{}", summary.to_text());
  return matched > 0 ? kOk : kNoMatch;
}

}  // namespace

Command add_scan(CLI::App& root) {
  auto o = std::make_shared<ScanOpts>();
  CLI::App* cmd = add_command(
      root, "scan", "find and explain the error blocks in logs",
      "Find the error blocks in logs (standard input when no FILE, or '-'): Python tracebacks, Rust 'Error:' chains "
      "and panics, libtorch backtraces, ERROR/CRITICAL lines. Print how often each catalog entry occurred with its "
      "first example, then the blocks nothing matched. A progress bar is shown on a terminal for inputs over 32 MiB.");
  add_catalog_options(*cmd, o->catalog);
  cmd->add_flag("--json", o->json, "a JSON object per block: explain's fields plus file, line, lines, kind");
  cmd->add_option("-j,--jobs", o->jobs,
                  "scan each file with N threads (default: the core count for files of 64 MiB or more)")
      ->check(CLI::Range(1u, 256u));
  cmd->add_flag("--no-mmap", o->no_mmap,
                "read each file as a stream on one thread, whatever -j says (files are no longer memory-mapped, so "
                "a log truncated while scanned just ends the scan, with or without it; kept for scripts that pass "
                "it)");
  cmd->add_flag("--follow", o->follow,
                "stream: print each block's JSON line as soon as it is complete; FILE is followed as it grows and "
                "reopened when rotated or truncated, '-' is read to its end; ends cleanly on SIGTERM or SIGINT, "
                "printing the block still open");
  auto* idle = cmd->add_option("--idle-ms", o->idle_ms, "with --follow: a block is complete after N ms without input")
                   ->check(CLI::Range(1L, 3600000L));
  auto* out = cmd->add_option("--out", o->out, "with --follow: append the JSON lines to FILE");
  auto* confirm = cmd->add_flag(
      "--confirm", o->confirm, "with --follow: print OK at start and per line read (rsyslog omprog's confirmMessages)");
  auto* escapes =
      cmd->add_flag("--syslog-escapes", o->syslog_escapes,
                    "with --follow: '#012' in a line is a newline (rsyslog's escaping of multi-line records)");
  for (CLI::Option* opt : {idle, out, confirm, escapes}) opt->needs("--follow");
  cmd->add_option("FILE", o->inputs, "log files ('-': standard input)");
  return {cmd, [o] { return scan(*o); }};
}

}  // namespace errshim_cli
