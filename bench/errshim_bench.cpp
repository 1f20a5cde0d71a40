// errshim benchmarks. Run through bench/run, which prints the table and
// writes the JSON; by hand: build/bench/errshim_bench [--quick] [--sizes=10,100]
// [Google Benchmark flags].
//
//  latency/<impl>/<N>/<short|medium|long>/<hit|miss>: one message per call,
//    cycling through 32 different messages; per-call samples give the median
//    and p99 (clock overhead subtracted). impl: errshim (the prefiltered
//    matcher), naive (every Boost regex on every segment, the baseline; few
//    iterations at large N), hyperscan and re2set (their multi-pattern scan
//    gives the candidate ids, Boost confirms them and reads captures: the
//    same normalisation, winner rule and Diagnosis as errshim).
//  load/<impl>/<N>: building the matcher from parsed entries (ms, MB of
//    allocations still live); for errshim also the whole CatalogBuilder
//    path from YAML text (yaml_ms, yaml_mb: parse + templates + index), and
//    yaml-cpp's event parser alone over the same text with a handler that
//    does nothing (yamlcpp_ms): the floor of any loader built on yaml-cpp;
//    and CatalogBuilder from that catalog's snapshot (snapshot_ms,
//    snapshot_mb: Catalog::snapshot() bytes read back, then the index).
//  scan/errshim/<N>/log16k/<hit|miss>: a 16 KB log that stays one segment,
//    so the literal scan covers all of it.
//  normalize/<short|medium|long>: normalise() alone, on messages of each size.
//  guard/interleaved: the happy-path cost of errshim::guard against a direct
//    call, alternating rounds of each (direct_ns, guarded_ns, ratio).
//  candidates/shipped: mean candidates per message over the shipped
//    catalog's examples.
//  adversarial/near_miss_1mib/<shipped|runaway_user>: 1 MiB of near misses
//    of the shipped entries that backtracked worst (issue 13), per match()
//    call (median_cpu_ms, max_cpu_ms: thread CPU time) and the regex steps
//    spent against the budget;
//    runaway_user adds a user entry that backtracks exponentially on them.
//  bounds/<case>: the hostile inputs of tests/bounds_test.cpp (a 50 MiB
//    message, a 50 MiB log, 8 MiB of random bytes, a traceback of 100,000
//    frames, a Caused-by chain of 100,000 links) through match() on the
//    embedded catalog, per call (median_cpu_ms, thread CPU time), beside a
//    short known message in the same rounds (short_cpu_us) and their ratio.
//  scale/errshim/<N>/<size>/<case>: N = 100 and the largest N measured in
//    one interleaved run (robust to the machine's load changing), ratio.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <errshim/errshim.hpp>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "matcher.hpp"
#include "pattern_risk.hpp"
#include "synthetic_catalog.hpp"

#ifdef ERRSHIM_BENCH_HYPERSCAN
#include <hs.h>
#endif
#ifdef ERRSHIM_BENCH_RE2
#include <re2/re2.h>
#include <re2/set.h>
#endif

// ------------------------------------------------------- allocation counting
// Live bytes allocated while a load is measured. Counting is switched on
// only around loads, so latency runs pay one predictable branch.
namespace {
bool g_counting = false;
long long g_live = 0;

void* counted_malloc(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p && g_counting) g_live += static_cast<long long>(malloc_usable_size(p));
  return p;
}
void counted_free(void* p) {
  if (p && g_counting) g_live -= static_cast<long long>(malloc_usable_size(p));
  std::free(p);
}
void* counted_aligned(std::size_t n, std::size_t align) {
  void* p = std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p && g_counting) g_live += static_cast<long long>(malloc_usable_size(p));
  return p;
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }

namespace {

using errshim::MatchResult;
using errshim::detail::Matcher;
namespace synth = errshim::synth;
using Clock = std::chrono::steady_clock;

bool g_quick = false;
std::vector<std::size_t> g_sizes = {10, 100, 1000, 10000, 100000};
constexpr std::size_t kMessagesPerSet = 32;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Measures time and live allocations of `build` (which keeps its result).
template <class F>
std::pair<double, double> measure_load(F&& build) {
  g_live = 0;
  g_counting = true;
  const auto t0 = Clock::now();
  build();
  const double ms = ms_since(t0);
  g_counting = false;
  return {ms, static_cast<double>(g_live) / (1024.0 * 1024.0)};
}

double clock_overhead_ns() {
  static const double overhead = [] {
    std::vector<double> d;
    for (int i = 0; i < 20001; ++i) {
      const auto a = Clock::now();
      const auto b = Clock::now();
      d.push_back(std::chrono::duration<double, std::nano>(b - a).count());
    }
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    return d[d.size() / 2];
  }();
  return overhead;
}

#if defined(ERRSHIM_BENCH_HYPERSCAN) || defined(ERRSHIM_BENCH_RE2)
// The ')' closing a look-around ("(?!" or "(?<=") whose body, an escaped
// literal, starts at `body`; npos if there is none.
std::size_t look_around_end(const std::string& re, std::size_t body) {
  for (std::size_t j = body; j < re.size(); ++j) {
    if (re[j] == '\\') {
      ++j;
    } else if (re[j] == ')') {
      return j;
    }
  }
  return std::string::npos;
}

// Boost perl syntax as the catalog writes it -> what Hyperscan / RE2 read.
// Captures are Boost's job here, so groups become non-capturing; a
// backreference becomes "any text on the line", and the template
// compiler's bounded runs (a tempered possessive run, the start anchor of
// a leading one) plain runs: supersets Boost then checks. Neither engine
// reads look-arounds or possessive quantifiers.
std::string for_comparator(const std::string& re) {
  std::string out;
  for (std::size_t i = 0; i < re.size(); ++i) {
    if (re.compare(i, 6, "(?:(?!") == 0) {  // (?:(?!LIT)[^\n])++ -> [^\n]+
      const std::size_t close = look_around_end(re, i + 6);
      for (const char* one : {"[^\\n])++", "[\\s\\S])++"}) {
        const std::string tail(one);
        if (close != std::string::npos && re.compare(close + 1, tail.size(), tail) == 0) {
          out += tail.substr(0, tail.size() - 3) + "+";
          i = close + tail.size();
          break;
        }
      }
      if (i < close) out += re[i];  // not a tempered run: copied as it is
      continue;
    }
    if (re.compare(i, 9, "(?:^|(?<=") == 0) {  // a leading run's anchor: dropped
      const std::size_t close = look_around_end(re, i + 9);
      if (close != std::string::npos && close + 1 < re.size() && re[close + 1] == ')') {
        i = close + 1;
        continue;
      }
    }
    if (re.compare(i, 3, "(?<") == 0 && i + 3 < re.size() && re[i + 3] != '=' && re[i + 3] != '!') {
      out += "(?:";
      i = re.find('>', i);
      continue;
    }
    if (re.compare(i, 3, "\\k<") == 0) {
      out += "[^\\n]*?";
      i = re.find('>', i);
      continue;
    }
    if (re[i] == '\\' && i + 1 < re.size()) {
      out += re.substr(i, 2);
      ++i;
      continue;
    }
    out += re[i];
  }
  return out;
}
#endif

// ------------------------------------------------------------------ fixtures

struct LoadFigures {
  double ms = 0, mb = 0, yaml_ms = 0, yaml_mb = 0, yamlcpp_ms = 0, snapshot_ms = 0, snapshot_mb = 0, cached_ms = 0;
  std::string error;
};

struct Fixture {
  std::size_t n = 0;
  synth::SynthCatalog cat;
  std::vector<std::shared_ptr<const errshim::Entry>> entries;
  std::unique_ptr<Matcher> matcher;  // errshim: lazily compiled
  std::unique_ptr<Matcher> naive;  // every regex compiled up front
  LoadFigures errshim_load, naive_load, hs_load, re2_load;
  std::map<std::string, std::vector<std::string>> messages;  // "short/hit" ...

#ifdef ERRSHIM_BENCH_HYPERSCAN
  bool hs_built = false;
  hs_database_t* hs_db = nullptr;
  hs_scratch_t* hs_scratch = nullptr;
  ~Fixture() {
    if (hs_scratch) hs_free_scratch(hs_scratch);
    if (hs_db) hs_free_database(hs_db);
  }
  void build_hyperscan() {
    if (hs_built) return;
    hs_built = true;
    std::vector<std::string> patterns;
    for (const auto& e : entries) patterns.push_back(for_comparator(e->pattern));
    std::vector<const char*> ptrs;
    std::vector<unsigned> flags, ids;
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      ptrs.push_back(patterns[i].c_str());
      flags.push_back(HS_FLAG_SINGLEMATCH | HS_FLAG_MULTILINE);
      ids.push_back(static_cast<unsigned>(i));
    }
    std::fprintf(stderr, "errshim_bench: compiling %zu patterns with Hyperscan...\n", patterns.size());
    hs_compile_error_t* err = nullptr;
    const auto [ms, mb] = measure_load([&] {
      if (hs_compile_multi(ptrs.data(), flags.data(), ids.data(), static_cast<unsigned>(ptrs.size()), HS_MODE_BLOCK,
                           nullptr, &hs_db, &err) == HS_SUCCESS)
        hs_alloc_scratch(hs_db, &hs_scratch);
    });
    hs_load.ms = ms;
    hs_load.mb = mb;
    if (err) {
      hs_load.error = err->message;
      hs_free_compile_error(err);
    }
  }
#endif

#ifdef ERRSHIM_BENCH_RE2
  std::unique_ptr<re2::RE2::Set> re2;
  std::vector<std::uint32_t> re2_always;  // patterns RE2 cannot read: always candidates
  void build_re2() {
    if (re2 || !re2_load.error.empty()) return;
    const auto [ms, mb] = measure_load([&] {
      re2::RE2::Options o;
      o.set_max_mem(std::int64_t{4} << 30);
      o.set_log_errors(false);
      re2 = std::make_unique<re2::RE2::Set>(o, re2::RE2::UNANCHORED);
      for (std::size_t i = 0; i < entries.size(); ++i)
        if (re2->Add("(?m)" + for_comparator(entries[i]->pattern), nullptr) < 0)
          re2_always.push_back(static_cast<std::uint32_t>(i));
      if (!re2->Compile()) re2_load.error = "RE2::Set::Compile failed (memory budget)";
    });
    re2_load.ms = ms;
    re2_load.mb = mb;
    if (!re2_load.error.empty()) re2.reset();
  }
#endif

  void build_naive() {
    if (naive) return;
    std::vector<errshim::Problem> problems;
    const auto [ms, mb] = measure_load([&] {
      naive = std::make_unique<Matcher>(entries, problems);
      naive->compile_all();
    });
    naive_load.ms = ms;
    naive_load.mb = mb;
  }
};

// Receives yaml-cpp's parse events and keeps nothing.
class IgnoreEvents final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

std::string set_name(synth::Size s, bool hit) {
  return std::string(s == synth::Size::short_   ? "short"
                     : s == synth::Size::medium ? "medium"
                                                : "long") +
         (hit ? "/hit" : "/miss");
}

// A 16 KB log that normalisation keeps as one segment.
std::string log16k(const std::string& message, synth::Rng& r) {
  std::string s;
  while (s.size() < 16000) s += synth::wrap("x", synth::Size::medium, r).substr(0, 1800);
  s.resize(s.rfind('\n', 16000 - message.size() - 60) + 1);
  return s + "2026-03-09 10:09:59,999 ERROR worker-3 | " + message + "\n";
}

std::unique_ptr<Fixture> g_fixture;

Fixture& fixture(std::size_t n) {
  if (g_fixture && g_fixture->n == n) return *g_fixture;
  g_fixture.reset();  // one catalog size in memory at a time
  auto f = std::make_unique<Fixture>();
  f->n = n;
  f->cat = synth::generate_catalog(n, 42);
  f->entries = synth::to_entries(f->cat);
  std::vector<errshim::Problem> problems;
  const auto [ms, mb] = measure_load([&] { f->matcher = std::make_unique<Matcher>(f->entries, problems); });
  f->errshim_load.ms = ms;
  f->errshim_load.mb = mb;
  {
    const std::vector<std::string> files = synth::to_yaml_files(f->cat);
    errshim::CatalogPtr cat;
    auto yaml_builder = [&files] {
      errshim::CatalogBuilder b;
      for (std::size_t i = 0; i < files.size(); ++i) b.add_yaml(files[i], "synthetic-" + std::to_string(i) + ".yaml");
      return b;
    };
    const auto [yms, ymb] = measure_load([&] {
      try {
        cat = yaml_builder().build();
      } catch (const errshim::catalog_error& e) {
        f->errshim_load.error = e.what();
      }
    });
    f->errshim_load.yaml_ms = yms;
    f->errshim_load.yaml_mb = ymb;
    if (cat) {
      // The same YAML through CatalogBuilder::cache_in, the second time
      // (the first parses and writes the cache entry).
      const std::filesystem::path cache =
          std::filesystem::temp_directory_path() / ("errshim_bench_cache_" + std::to_string(n));
      std::filesystem::remove_all(cache);
      auto cached_build = [&] { return yaml_builder().cache_in(cache).build(); };
      cat.reset();
      cat = cached_build();
      cat.reset();
      f->errshim_load.cached_ms = measure_load([&] { cat = cached_build(); }).first;
      std::filesystem::remove_all(cache);
      const std::string snapshot = cat->snapshot();
      cat.reset();
      const auto [sms, smb] = measure_load([&] { cat = errshim::CatalogBuilder().add_snapshot(snapshot).build(); });
      f->errshim_load.snapshot_ms = sms;
      f->errshim_load.snapshot_mb = smb;
      cat.reset();
    }
    const auto t0 = Clock::now();
    for (const std::string& text : files) {
      std::istringstream in(text);
      YAML::Parser parser(in);
      IgnoreEvents ignore;
      parser.HandleNextDocument(ignore);
    }
    f->errshim_load.yamlcpp_ms = ms_since(t0);
  }
  // Messages: hits are checked to match, misses not to.
  synth::Rng r(n * 7 + 1);
  for (synth::Size size : {synth::Size::short_, synth::Size::medium, synth::Size::long_}) {
    for (bool hit : {true, false}) {
      std::vector<std::string>& set = f->messages[set_name(size, hit)];
      for (int attempts = 0; set.size() < kMessagesPerSet && attempts < 1000; ++attempts) {
        const std::string bare = hit ? synth::message_for(f->cat.entries[r.below(n)], r) : synth::unknown_message(r);
        std::string m = synth::wrap(bare, size, r);
        if (f->matcher->match(m, {}).diagnosis.has_value() == hit) set.push_back(std::move(m));
      }
    }
  }
  for (bool hit : {true, false}) {
    std::vector<std::string>& set = f->messages[std::string("log16k") + (hit ? "/hit" : "/miss")];
    for (int attempts = 0; set.size() < kMessagesPerSet / 4 && attempts < 100; ++attempts) {
      std::string m = log16k(hit ? synth::message_for(f->cat.entries[r.below(n)], r) : synth::unknown_message(r), r);
      if (f->matcher->match(m, {}).diagnosis.has_value() == hit) set.push_back(std::move(m));
    }
  }
  g_fixture = std::move(f);
  return *g_fixture;
}

// ------------------------------------------------------------- benchmarks

using MatchFn = std::function<MatchResult(const std::string&)>;

MatchFn match_fn(Fixture& f, const std::string& impl) {
  if (impl == "errshim") return [&f](const std::string& m) { return f.matcher->match(m, {}); };
  if (impl == "naive") {
    f.build_naive();
    return [&f](const std::string& m) { return f.naive->match_naive(m, {}); };
  }
#ifdef ERRSHIM_BENCH_HYPERSCAN
  if (impl == "hyperscan") {
    f.build_hyperscan();
    if (!f.hs_scratch) return nullptr;
    return [&f](const std::string& m) {
      return f.naive->match_prefiltered(m, {}, [&f](std::string_view text, std::vector<std::uint32_t>& ids) {
        hs_scan(
            f.hs_db, text.data(), static_cast<unsigned>(text.size()), 0, f.hs_scratch,
            [](unsigned id, unsigned long long, unsigned long long, unsigned, void* ctx) {
              static_cast<std::vector<std::uint32_t>*>(ctx)->push_back(id);
              return 0;
            },
            &ids);
      });
    };
  }
#endif
#ifdef ERRSHIM_BENCH_RE2
  if (impl == "re2set") {
    f.build_re2();
    if (!f.re2) return nullptr;
    return [&f](const std::string& m) {
      return f.naive->match_prefiltered(m, {}, [&f](std::string_view text, std::vector<std::uint32_t>& ids) {
        std::vector<int> v;
        f.re2->Match(re2::StringPiece(text.data(), text.size()), &v);
        for (int i : v) ids.push_back(static_cast<std::uint32_t>(i));
        ids.insert(ids.end(), f.re2_always.begin(), f.re2_always.end());
      });
    };
  }
#endif
  return nullptr;
}

void report_samples(benchmark::State& state, std::vector<double>& samples) {
  if (samples.empty()) return;
  std::sort(samples.begin(), samples.end());
  const double overhead = clock_overhead_ns();
  const double median = samples[samples.size() / 2] - overhead;
  const double p99 = samples[std::min(samples.size() - 1, samples.size() * 99 / 100)] - overhead;
  state.counters["median_ns"] = std::max(0.0, median);
  state.counters["p99_ns"] = std::max(0.0, p99);
  state.counters["samples"] = static_cast<double>(samples.size());
}

void latency(benchmark::State& state, std::string impl, std::size_t n, std::string set) {
  Fixture& f = fixture(n);
  if (impl != "errshim") f.build_naive();  // comparators confirm with the compiled regexes
  const MatchFn fn = match_fn(f, impl);
  const std::vector<std::string>& msgs = f.messages[set];
  if (!fn || msgs.empty()) {
    state.SkipWithError("not available");
    for (auto _ : state) {}
    return;
  }
  // Warm up: lazy compilation and caches (a couple of messages for slow impls).
  const std::size_t warm = (impl == "naive" && n >= 10000) ? 1 : msgs.size();
  for (std::size_t i = 0; i < warm; ++i) benchmark::DoNotOptimize(fn(msgs[i]));
  std::vector<double> samples;
  std::size_t i = 0;
  for (auto _ : state) {
    const std::string& m = msgs[i++ % msgs.size()];
    const auto t0 = Clock::now();
    MatchResult r = fn(m);
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(r);
    samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  report_samples(state, samples);
  if (impl == "errshim") {
    double c = 0;
    for (const std::string& m : msgs) c += static_cast<double>(f.matcher->candidate_count(m));
    state.counters["candidates"] = c / static_cast<double>(msgs.size());
  }
}

// Latency at a large N against N = 100 in one interleaved run: rounds of
// calls alternate between the two catalogs, so a change in the machine's
// load (other processes) hits both alike. Counters: medians and p99 of
// each, and their ratio.
void scale(benchmark::State& state, std::size_t big, std::string set) {
  struct Side {
    synth::SynthCatalog cat;
    std::unique_ptr<Matcher> matcher;
    std::vector<std::string> msgs;
    std::vector<double> samples;
  };
  static std::map<std::size_t, std::unique_ptr<Side>> sides;  // built once per size
  const std::size_t sizes[2] = {100, big};
  Side* s[2];
  for (int k = 0; k < 2; ++k) {
    std::unique_ptr<Side>& side = sides[sizes[k]];
    if (!side) {
      side = std::make_unique<Side>();
      side->cat = synth::generate_catalog(sizes[k], 42);
      std::vector<errshim::Problem> problems;
      side->matcher = std::make_unique<Matcher>(synth::to_entries(side->cat), problems);
    }
    s[k] = side.get();
    s[k]->samples.clear();
    s[k]->msgs.clear();
    const bool hit = set.find("hit") != std::string::npos;
    const synth::Size size = set.rfind("short", 0) == 0    ? synth::Size::short_
                             : set.rfind("medium", 0) == 0 ? synth::Size::medium
                                                           : synth::Size::long_;
    synth::Rng r(sizes[k] * 7 + 3);
    for (int attempts = 0; s[k]->msgs.size() < kMessagesPerSet && attempts < 1000; ++attempts) {
      const std::string bare =
          hit ? synth::message_for(s[k]->cat.entries[r.below(sizes[k])], r) : synth::unknown_message(r);
      std::string m = synth::wrap(bare, size, r);
      if (s[k]->matcher->match(m, {}).diagnosis.has_value() == hit) s[k]->msgs.push_back(std::move(m));
    }
    for (const std::string& m : s[k]->msgs) benchmark::DoNotOptimize(s[k]->matcher->match(m, {}));
  }
  std::size_t i = 0;
  for (auto _ : state) {
    Side& side = *s[(i / 64) % 2];  // 64 calls on one side, then 64 on the other
    const std::string& m = side.msgs[i++ % side.msgs.size()];
    const auto t0 = Clock::now();
    MatchResult r = side.matcher->match(m, {});
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(r);
    side.samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  const double overhead = clock_overhead_ns();
  double median[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    std::vector<double>& v = s[k]->samples;
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    median[k] = v[v.size() / 2] - overhead;
    const std::string name = k == 0 ? "small" : "big";
    state.counters[name + "_median_ns"] = median[k];
    state.counters[name + "_p99_ns"] = v[std::min(v.size() - 1, v.size() * 99 / 100)] - overhead;
  }
  state.counters["ratio"] = median[1] / median[0];
}

void load(benchmark::State& state, std::string impl, std::size_t n) {
  Fixture& f = fixture(n);
  LoadFigures* fig = &f.errshim_load;
  if (impl == "naive") f.build_naive(), fig = &f.naive_load;
#ifdef ERRSHIM_BENCH_HYPERSCAN
  if (impl == "hyperscan") f.build_hyperscan(), fig = &f.hs_load;
#endif
#ifdef ERRSHIM_BENCH_RE2
  if (impl == "re2set") f.build_re2(), fig = &f.re2_load;
#endif
  for (auto _ : state) {}
  if (!fig->error.empty()) state.SkipWithError(fig->error.c_str());
  state.counters["ms"] = fig->ms;
  state.counters["mb"] = fig->mb;
  if (impl == "errshim") {
    state.counters["yaml_ms"] = fig->yaml_ms;
    state.counters["yaml_mb"] = fig->yaml_mb;
    state.counters["yamlcpp_ms"] = fig->yamlcpp_ms;
    state.counters["snapshot_ms"] = fig->snapshot_ms;
    state.counters["snapshot_mb"] = fig->snapshot_mb;
    state.counters["cached_ms"] = fig->cached_ms;
    const Matcher::Stats st = f.matcher->stats();
    state.counters["always_checked"] = static_cast<double>(st.always_checked);
    state.counters["keys"] = static_cast<double>(st.keys);
    state.counters["index_mb"] = static_cast<double>(st.index_bytes) / (1024.0 * 1024.0);
  }
}

void normalize_only(benchmark::State& state, synth::Size size) {
  synth::Rng r(3);
  const std::string tb = synth::wrap("Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48].", size, r);
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    errshim::Normalized n = errshim::normalize(tb);
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(n);
    samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  report_samples(state, samples);
  state.counters["bytes"] = static_cast<double>(tb.size());
}

__attribute__((noinline)) int work(int x) {
  benchmark::DoNotOptimize(x);
  return x * 3 + 1;
}

// The guard's happy path against a direct call, interleaved: each iteration
// times a round of calls of each kind, in alternating order, so a change in
// the machine's speed hits both alike (two separate benchmarks of a ~1 ns
// call differed by +-10% from run to run). Counters: per-call medians over
// the rounds, and their ratio.
void guard_interleaved(benchmark::State& state) {
  const auto catalog = errshim::Catalog::embedded();
  constexpr int kCalls = 2048;
  std::vector<double> direct, guarded;
  int x = 1;
  bool guarded_first = false;
  for (auto _ : state) {
    for (int side = 0; side < 2; ++side) {
      const bool guarded_now = (side == 0) == guarded_first;
      const auto t0 = Clock::now();
      if (guarded_now) {
        for (int i = 0; i < kCalls; ++i)
          benchmark::DoNotOptimize(x = errshim::guard([&] { return work(x); }, *catalog));
      } else {
        for (int i = 0; i < kCalls; ++i) benchmark::DoNotOptimize(x = work(x));
      }
      const auto t1 = Clock::now();
      (guarded_now ? guarded : direct).push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls);
    }
    guarded_first = !guarded_first;
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double d = median(direct), g = median(guarded);
  state.counters["direct_ns"] = d;
  state.counters["guarded_ns"] = g;
  state.counters["ratio"] = g / d;
}

void shipped(benchmark::State& state) {
  const auto catalog = errshim::Catalog::embedded();
  std::vector<errshim::Problem> problems;
  const Matcher m(catalog->entries(), problems);
  double candidates = 0, messages = 0;
  for (const auto& e : catalog->entries()) {
    for (const auto& ex : e->match_examples) candidates += static_cast<double>(m.candidate_count(ex.text)), ++messages;
    for (const auto& ex : e->no_match_examples)
      candidates += static_cast<double>(m.candidate_count(ex.text)), ++messages;
  }
  const std::string msg = "Error: kv_cache_enabled=true is not supported";
  for (auto _ : state) benchmark::DoNotOptimize(catalog->diagnose(msg));
  state.counters["candidates"] = candidates / messages;
  state.counters["messages"] = messages;
  state.counters["entries"] = static_cast<double>(catalog->size());
}

// The inputs bounds_test.cpp checks for bounded work, timed here rather than
// there (a unit test asserts no time): each round matches the hostile input
// and a short known message, so the ratio holds on a loaded machine.
std::string bounds_input(const std::string& name, const std::string& known) {
  std::string s;
  if (name == "message_50mib") {
    s = "Error: " + known + "\nq = tensor([";
    while (s.size() < (50u << 20)) s += "0.1234, -5.6789, ";
    s += "])\n";
  } else if (name == "log_50mib") {
    for (int i = 0; s.size() < (50u << 20); ++i)
      s += "2024-05-01 12:00:00 INFO [worker-1] step " + std::to_string(i) + " ok\n";
    s += "2024-05-01 12:00:01 ERROR [worker-1] " + known + "\n";
  } else if (name == "random_bytes_8mib") {
    std::uint64_t x = 20240501;
    s.resize(8u << 20);
    for (char& c : s) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      c = static_cast<char>(x >> 56);
    }
  } else if (name == "traceback_100k_frames") {
    s = "Traceback (most recent call last):\n";
    for (int i = 0; i < 100000; ++i)
      s += "  File \"/srv/app/layers.py\", line " + std::to_string(i + 1) + ", in forward\n    return self.block(x)\n";
    s += "RuntimeError: " + known + "\n";
  } else {  // caused_by_100k_links
    s = "Error: outermost\n\nCaused by:\n";
    for (int i = 0; i < 100000; ++i) s += "    " + std::to_string(i) + ": layer " + std::to_string(i) + " failed\n";
    s += "    100000: " + known + "\n";
  }
  return s;
}

void bounds(benchmark::State& state, const std::string& name) {
  const errshim::CatalogPtr catalog = errshim::Catalog::embedded();
  const errshim::Entry* e = catalog->find("candle.sdpa.unsupported_head_dim");
  if (!e || e->match_examples.empty()) {
    state.SkipWithError("no known message");
    return;
  }
  const std::string known = e->match_examples.front().text;
  const std::string input = bounds_input(name, known);
  auto cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
  };
  (void)catalog->match(input);
  std::vector<double> hostile, short_ms;
  for (auto _ : state) {
    double t0 = cpu_ms();
    benchmark::DoNotOptimize(catalog->match(input));
    hostile.push_back(cpu_ms() - t0);
    t0 = cpu_ms();
    for (int i = 0; i < 100; ++i) benchmark::DoNotOptimize(catalog->match(known));
    short_ms.push_back((cpu_ms() - t0) / 100);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const double h = median(hostile), k = median(short_ms);
  state.counters["median_cpu_ms"] = h;
  state.counters["short_cpu_us"] = k * 1e3;
  state.counters["ratio"] = k > 0 ? h / k : 0;
  state.counters["bytes"] = static_cast<double>(input.size());
}

// A mebibyte of near misses of the shipped entries that backtracked worst
// (issue 13): the first literal, the middle ones repeated, the last left
// out, as the 16 KiB links of a Rust "Caused by:" chain (numbered, as
// repeated causes are matched once), so the 32 messages kept are all near
// misses. `runaway` adds a user entry that backtracks exponentially on
// them, so the budget, not the patterns, bounds the work.
void adversarial(benchmark::State& state, bool runaway) {
  errshim::CatalogBuilder builder;
  builder.add_embedded();
  if (runaway)
    builder.add_yaml(
        "schema: 1\nlibrary: user\ndefaults: {repo: a/b, commit: 0123456}\nentries:\n"
        "  - id: user.runaway\n    pattern: '(?:\\w+\\s?)+,$'\n    source: {path: s.rs, line: 1}\n"
        "    error_class: E\n    kind: validation\n    cause: c\n    trigger: t\n"
        "    remediation: [{text: r}]\n    examples: {match: ['a b!']}\n",
        "user.yaml");
  const errshim::CatalogPtr catalog = builder.build();
  std::vector<std::string> lines;
  for (const char* id : {"candle.sdpa.unsupported_head_dim", "candle.sdpa.unsupported_use_case",
                         "candle.cpu_flash.varlen_dtype_mismatch", "transformers.cache.encoder_decoder_not_dynamic",
                         "transformers.attention.flash_attention_compute_capability"}) {
    const errshim::Entry* e = catalog->find(id);
    if (!e) continue;
    const std::vector<std::string> near = errshim::detail::near_misses(*e, 16 * 1024 - 16);
    if (!near.empty()) lines.push_back(near.back());
  }
  if (lines.empty()) {
    state.SkipWithError("no near misses");
    return;
  }
  std::string message = "Error: " + lines[0] + "\n\nCaused by:\n";
  for (std::size_t i = 0; message.size() < (1u << 20); ++i) {
    const std::string n = std::to_string(i);  // right-aligned, as anyhow prints them
    message += std::string(6 - n.size(), ' ') + n + ": " + n + " " + lines[i % lines.size()] + "\n";
  }
  // The calling thread's CPU time: matching is single-threaded, and on a
  // shared machine wall time mostly measures the neighbours.
  auto cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
  };
  (void)catalog->match(message);  // compiles the regexes involved
  errshim::MatchResult last;
  std::vector<double> samples;
  for (auto _ : state) {
    const double t0 = cpu_ms();
    last = catalog->match(message);
    samples.push_back(cpu_ms() - t0);
    benchmark::DoNotOptimize(last);
  }
  std::sort(samples.begin(), samples.end());
  state.counters["median_cpu_ms"] = samples[samples.size() / 2];
  state.counters["max_cpu_ms"] = samples.back();
  state.counters["steps"] = static_cast<double>(last.steps);
  state.counters["budget"] = static_cast<double>(errshim::MatchOptions{}.max_steps);
  state.counters["problems"] = static_cast<double>(last.problems.size());
  state.counters["bytes"] = static_cast<double>(message.size());
}

void register_all() {
  std::vector<std::string> impls = {"errshim", "naive"};
#ifdef ERRSHIM_BENCH_HYPERSCAN
  impls.push_back("hyperscan");
#endif
#ifdef ERRSHIM_BENCH_RE2
  impls.push_back("re2set");
#endif
  const double min_time = g_quick ? 0.05 : 0.3;
  for (std::size_t n : g_sizes) {
    if (g_quick && n > 10000) continue;
    for (const std::string& impl : impls) {
      if (impl == "hyperscan" && n > 10000 && g_quick) continue;  // minutes to compile
      benchmark::RegisterBenchmark(("load/" + impl + "/" + std::to_string(n)).c_str(), load, impl, n)
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
    for (const std::string& impl : impls) {
      if (impl == "hyperscan" && n > 10000 && g_quick) continue;
      for (const char* size : {"short", "medium", "long"}) {
        for (const char* c : {"hit", "miss"}) {
          auto* b =
              benchmark::RegisterBenchmark(("latency/" + impl + "/" + std::to_string(n) + "/" + size + "/" + c).c_str(),
                                           latency, impl, n, std::string(size) + "/" + c);
          b->Unit(benchmark::kMicrosecond);
          // The naive loop costs ~0.1-2 us per entry: few iterations at large N.
          if (impl == "naive" && n >= 100000)
            b->Iterations(g_quick ? 3 : 6);
          else if (impl == "naive" && n >= 10000)
            b->Iterations(g_quick ? 10 : 30);
          else
            b->MinTime(min_time);
        }
      }
    }
    for (const char* c : {"hit", "miss"})
      benchmark::RegisterBenchmark(("scan/errshim/" + std::to_string(n) + "/log16k/" + c).c_str(), latency,
                                   std::string("errshim"), n, std::string("log16k/") + c)
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(min_time);
  }
  for (auto [name, size] : {std::pair{"short", synth::Size::short_}, std::pair{"medium", synth::Size::medium},
                            std::pair{"long", synth::Size::long_}})
    benchmark::RegisterBenchmark((std::string("normalize/") + name).c_str(), normalize_only, size)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(min_time);
  benchmark::RegisterBenchmark("guard/interleaved", guard_interleaved)->MinTime(g_quick ? 0.5 : 2.0);
  benchmark::RegisterBenchmark("candidates/shipped", shipped)->MinTime(min_time);
  for (bool runaway : {false, true})
    benchmark::RegisterBenchmark(
        runaway ? "adversarial/near_miss_1mib/runaway_user" : "adversarial/near_miss_1mib/shipped", adversarial,
        runaway)
        ->Unit(benchmark::kMillisecond)
        ->MinTime(min_time);
  for (const char* name :
       {"message_50mib", "log_50mib", "random_bytes_8mib", "traceback_100k_frames", "caused_by_100k_links"})
    benchmark::RegisterBenchmark((std::string("bounds/") + name).c_str(), bounds, std::string(name))
        ->Unit(benchmark::kMillisecond)
        ->Iterations(g_quick ? 3 : 10);
  const std::size_t big = g_quick ? 10000 : 100000;
  if (std::find(g_sizes.begin(), g_sizes.end(), big) != g_sizes.end()) {
    for (const char* size : {"short", "medium", "long"})
      for (const char* c : {"hit", "miss"})
        benchmark::RegisterBenchmark(("scale/errshim/" + std::to_string(big) + "/" + size + "/" + c).c_str(), scale,
                                     big, std::string(size) + "/" + c)
            ->Unit(benchmark::kMicrosecond)
            ->MinTime(g_quick ? 0.2 : 1.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Our flags first; the rest go to Google Benchmark.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      g_quick = true;
    } else if (std::strncmp(argv[i], "--sizes=", 8) == 0) {
      g_sizes.clear();
      for (const char* p = argv[i] + 8; *p;) {
        char* end = nullptr;
        g_sizes.push_back(std::strtoull(p, &end, 10));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) break;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
#ifdef ERRSHIM_BENCH_HYPERSCAN
  hs_set_allocator(counted_malloc, counted_free);
#endif
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_fixture.reset();
  return 0;
}
