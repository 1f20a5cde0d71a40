// errshim_layers_bench: what a generated layer costs on top of the embedded
// catalog, each figure beside its baseline (the embedded catalog alone) in
// the same run:
//
//   layers/match/<catalog>/<short-hit|short-miss|generated-hit|20k-hit|20k-generated-hit>
//   layers/build/<catalog>              CatalogBuilder::build() (snapshots)
//   layers/first_diagnosis/<catalog>    a new process: start, build, one diagnosis (the time to
//                                       its answer; to the process's end as exit_ms)
//   layers/first_diagnosis/<catalog>/generated   the same, the message a generated entry's
//   layers/rss/<catalog>                resident memory the build adds, then with every regex compiled
//
// <catalog> is "embedded", "embedded+candle" or "embedded+all" (every
// generated layer found). The layers are read from ERRSHIM_GENERATED_DIR,
// else from this build's generated/layers.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <errshim/catalog.hpp>

extern char** environ;

namespace {

bool with_layer(const std::string& catalog) { return catalog != "embedded"; }

errshim::CatalogPtr build(const std::string& catalog) {
  errshim::CatalogBuilder b;
  b.add_embedded();
  if (catalog == "embedded+candle") b.add_generated("candle");
  if (catalog == "embedded+all")
    for (const std::string& layer : errshim::CatalogBuilder::generated_layers()) b.add_generated(layer);
  return b.build();
}

// A candle error behind an anyhow chain and a 20 KB Rust backtrace.
std::string twenty_kb(const std::string& error) {
  std::string s = "Error: failed to run the model\n\nCaused by:\n    " + error + "\n\nStack backtrace:\n";
  for (int i = 0; s.size() < 20000; ++i)
    s += "  " + std::to_string(i) +
         ": candle_transformers::models::llama::Block::forward::h0123456789abcdef\n"
         "             at /root/.cargo/registry/src/candle-transformers-0.8.0/src/models/llama.rs:" +
         std::to_string(100 + i) + ":9\n";
  return s;
}

long rss_kib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

void match(benchmark::State& state, const std::string& catalog, const std::string& message, bool hit) {
  const errshim::CatalogPtr c = build(catalog);
  if (c->diagnose(message).has_value() != hit) {
    state.SkipWithError(hit ? "expected a match" : "expected no match");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(c->diagnose(message));
  state.counters["entries"] = static_cast<double>(c->size());
}

void build_time(benchmark::State& state, const std::string& catalog) {
  for (auto _ : state) benchmark::DoNotOptimize(build(catalog));
}

// A message only the candle layer explains, and the embedded catalog's own.
constexpr const char* kGeneratedMessage = "Metal contiguous elu F16 not implemented";
constexpr const char* kEmbeddedMessage = "kv_cache_enabled=true is not supported";

// `catalog` may end in "/generated": the first message is kGeneratedMessage.
// The time is to the child's answer, which it reports on a pipe (the
// monotonic clock is the machine's, not the process's): a process that
// built a large catalog then spends milliseconds giving its memory back at
// exit, after its first answer; that is exit_ms.
void first_diagnosis(benchmark::State& state, const std::string& self, const std::string& catalog) {
  double cpu_ms = 0, exit_ms = 0;
  int runs = 0;
  for (auto _ : state) {
    const std::string flag = "--errshim-first-diagnosis=" + catalog;
    char* argv[] = {const_cast<char*>(self.c_str()), const_cast<char*>(flag.c_str()), nullptr};
    int out[2];
    if (pipe(out) != 0) {
      state.SkipWithError("cannot make a pipe");
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    const auto t0 = std::chrono::steady_clock::now();
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (spawned != 0) {
      close(out[0]);
      state.SkipWithError("cannot start the child process");
      return;
    }
    char said[64] = {};
    std::size_t got = 0;
    for (ssize_t r; got + 1 < sizeof said && (r = read(out[0], said + got, sizeof said - 1 - got)) > 0;)
      got += static_cast<std::size_t>(r);
    close(out[0]);
    int status = 0;
    struct rusage usage {};
    wait4(pid, &status, 0, &usage);
    const auto t1 = std::chrono::steady_clock::now();
    const std::chrono::steady_clock::time_point answered{std::chrono::steady_clock::duration{std::atoll(said)}};
    // The child's own CPU time too: on a busy machine the wall time also
    // counts waiting for a core.
    cpu_ms +=
        (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
    exit_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    ++runs;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || answered <= t0 || answered > t1) {
      state.SkipWithError("the child process failed");
      return;
    }
    state.SetIterationTime(std::chrono::duration<double>(answered - t0).count());
  }
  if (runs > 0) {
    state.counters["child_cpu_ms"] = cpu_ms / runs;
    state.counters["exit_ms"] = exit_ms / runs;
  }
}

// In a child process, so that memory an earlier row freed is not reused.
void rss(benchmark::State& state, const std::string& self, const std::string& catalog) {
  for (auto _ : state) {
    const std::string command = self + " --errshim-rss=" + catalog;
    FILE* child = popen(command.c_str(), "r");
    long loaded = -1, compiled = -1;
    if (!child || std::fscanf(child, "%ld %ld", &loaded, &compiled) != 2 || pclose(child) != 0 || loaded < 0) {
      state.SkipWithError("the child process failed");
      return;
    }
    state.counters["loaded_mb"] = static_cast<double>(loaded) / 1024.0;
    state.counters["compiled_mb"] = static_cast<double>(compiled) / 1024.0;
  }
}

int rss_child(const std::string& catalog) {
  const long before = rss_kib();
  const errshim::CatalogPtr c = build(catalog);
  const long loaded = rss_kib();
  (void)c->compile_all();
  std::printf("%ld %ld\n", loaded - before, rss_kib() - before);
  return 0;
}

// Whether `catalog` ends in "/generated" (the first message is then
// kGeneratedMessage), which it no longer does after.
bool take_generated_suffix(std::string& catalog) {
  const std::string suffix = "/generated";
  const bool generated =
      catalog.size() > suffix.size() && catalog.compare(catalog.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (generated) catalog.resize(catalog.size() - suffix.size());
  return generated;
}

// The child of layers/first_diagnosis: what a new process pays before its first answer.
int first_diagnosis_child(std::string catalog) {
  const bool generated = take_generated_suffix(catalog);
  try {
    const errshim::CatalogPtr c = build(catalog);
    const bool found = c->diagnose(generated ? kGeneratedMessage : kEmbeddedMessage).has_value();
    std::printf("%lld\n", static_cast<long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::fflush(stdout);
    return found ? 0 : 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 4;
  }
}

// The child bench/hit_instructions.py runs under callgrind: builds the
// catalog, diagnoses its message `count` times and exits; the difference
// between two counts is the cost of that many hits.
int hits_child(std::string spec) {
  const std::size_t colon = spec.rfind(':');
  if (colon == std::string::npos) return 2;
  const long count = std::atol(spec.c_str() + colon + 1);
  spec.resize(colon);
  const bool generated = take_generated_suffix(spec);
  const errshim::CatalogPtr c = build(spec);
  const std::string message = generated ? kGeneratedMessage : kEmbeddedMessage;
  long found = 0;
  for (long i = 0; i <= count; ++i) found += c->diagnose(message).has_value();
  return found == count + 1 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef ERRSHIM_GENERATED_LAYER_DIR
  ::setenv("ERRSHIM_GENERATED_DIR", ERRSHIM_GENERATED_LAYER_DIR, 0);  // an ERRSHIM_GENERATED_DIR given wins
#endif
  constexpr const char* kFlag = "--errshim-first-diagnosis=";
  constexpr const char* kRss = "--errshim-rss=";
  constexpr const char* kHits = "--errshim-hits=";
  if (argc == 2 && std::strncmp(argv[1], kFlag, std::strlen(kFlag)) == 0)
    return first_diagnosis_child(argv[1] + std::strlen(kFlag));
  if (argc == 2 && std::strncmp(argv[1], kRss, std::strlen(kRss)) == 0) return rss_child(argv[1] + std::strlen(kRss));
  if (argc == 2 && std::strncmp(argv[1], kHits, std::strlen(kHits)) == 0)
    return hits_child(argv[1] + std::strlen(kHits));
  const std::string self = "/proc/self/exe";
  char path[4096] = {};
  const ssize_t n = readlink(self.c_str(), path, sizeof path - 1);
  const std::string exe = n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string(argv[0]);

  static const std::string kTwentyKb = twenty_kb(kEmbeddedMessage);
  static const std::string kTwentyKbGenerated = twenty_kb(kGeneratedMessage);
  for (const std::string catalog : {"embedded", "embedded+candle", "embedded+all"}) {
    const std::string m = "layers/match/" + catalog + "/";
    benchmark::RegisterBenchmark((m + "short-hit").c_str(), match, catalog, std::string(kEmbeddedMessage), true);
    benchmark::RegisterBenchmark((m + "short-miss").c_str(), match, catalog,
                                 std::string("request 42 served in 12 ms, all fine"), false);
    if (with_layer(catalog)) {
      benchmark::RegisterBenchmark((m + "generated-hit").c_str(), match, catalog, std::string(kGeneratedMessage), true);
      benchmark::RegisterBenchmark((m + "20k-generated-hit").c_str(), match, catalog, kTwentyKbGenerated, true);
    }
    benchmark::RegisterBenchmark((m + "20k-hit").c_str(), match, catalog, kTwentyKb, true);
    benchmark::RegisterBenchmark(("layers/build/" + catalog).c_str(), build_time, catalog)
        ->Unit(benchmark::kMillisecond);
    for (const std::string& row : {catalog, catalog + "/generated"}) {
      if (row != catalog && !with_layer(catalog)) continue;
      benchmark::RegisterBenchmark(("layers/first_diagnosis/" + row).c_str(), first_diagnosis, exe, row)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(10);
    }
    benchmark::RegisterBenchmark(("layers/rss/" + catalog).c_str(), rss, exe, catalog)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
