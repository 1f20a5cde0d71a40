// errshim scan.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cli.hpp"
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

struct ScanOpts {
  CatalogOptions catalog;
  bool json = false;
  std::vector<std::string> inputs;
};

int scan(const ScanOpts& a) {
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
    const errshim::ScanStats stats = errshim::scan(
        from_stdin ? std::cin : file, name, *catalog,
        [&](const errshim::ScanBlock& block) {
          if (!a.json) return summary.add(block);
          bar.reset();  // a JSON line never lands on top of the bar
          fmt::print("{}\n", with_catalog(errshim::to_json(block), *catalog));
          std::fflush(stdout);  // streaming: a reader (jq, a tail -f pipeline) sees each block as it ends
        },
        options);
    matched += stats.matched;
  }
  if (!a.json) fmt::print("{}", summary.to_text());
  return matched > 0 ? kOk : kNoMatch;
}

}  // namespace

Command add_scan(CLI::App& root) {
  auto o = std::make_shared<ScanOpts>();
  CLI::App* cmd = add_command(root, "scan", "find and explain the error blocks in logs",
      "Find the error blocks in logs (standard input when no FILE, or '-'): Python tracebacks, Rust 'Error:' chains "
      "and panics, libtorch backtraces, ERROR/CRITICAL lines. Print how often each catalog entry occurred with its "
      "first example, then the blocks nothing matched. A progress bar is shown on a terminal for inputs over 32 MiB.");
  add_catalog_options(*cmd, o->catalog);
  cmd->add_flag("--json", o->json,
                "a JSON object per block: explain's fields plus file, line, lines, kind");
  cmd->add_option("FILE", o->inputs, "log files ('-': standard input)");
  return {cmd, [o] { return scan(*o); }};
}

}  // namespace errshim_cli
