// Concurrency: 8 threads diagnose and remediate while another thread keeps
// reloading the catalog (two valid catalogs that give the same answers, and
// broken ones that must be refused). Every result is compared with the
// single-threaded answer: none may be wrong, none may be lost. Run under
// ThreadSanitizer by scripts/sanitize.sh tsan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <errshim/catalog_store.hpp>
#include <errshim/errshim.hpp>

#include "test_catalogs.hpp"

namespace errshim {
namespace {

// The 100,000 operations, under every build including TSan (about
// 10x slower there). ERRSHIM_STRESS_OPERATIONS overrides it, e.g. for a
// longer soak.
std::size_t operations() {
  static const std::size_t n = [] {
    const char* env = std::getenv("ERRSHIM_STRESS_OPERATIONS");
    return env && std::atol(env) > 0 ? static_cast<std::size_t>(std::atol(env)) : std::size_t{100000};
  }();
  return n;
}
constexpr std::size_t kThreads = 8;

std::string entry(const std::string& id, const std::string& tmpl, const std::string& example,
                  const std::string& captures, const std::string& fix, const std::string& cause) {
  return "  - id: " + id + "\n    template: '" + tmpl + "'\n    source: {path: src/s.rs, line: 1}\n" +
         "    error_class: E\n    kind: configuration\n    cause: " + cause + "\n    trigger: t\n" +
         "    remediation:\n      - text: fix it\n" + (fix.empty() ? "" : "        fix: " + fix + "\n") +
         "    examples:\n      match: [{text: '" + example + "'" +
         (captures.empty() ? "" : ", captures: {" + captures + "}") + "}]\n";
}

// Two catalogs with the same answers for the messages below: other causes,
// another order, and an entry none of the messages reaches.
std::string catalog_a() {
  return testing::file_yaml(
      entry("s.kv", "kv_cache_enabled=true is not supported", "kv_cache_enabled=true is not supported", "",
            "{set: {kv_cache_enabled: false}, safety: slower}", "first wording") +
      entry("s.heads", "head dim {q_head} is not supported for {dtype}", "head dim 48 is not supported for F16",
            "q_head: 48, dtype: F16", "", "first wording") +
      entry("s.quant", "does not support the quantized cache", "does not support the quantized cache", "",
            "{set: {cache_implementation: dynamic}, safety: safe}", "first wording"));
}
std::string catalog_b() {
  return testing::file_yaml(
      entry("s.quant", "does not support the quantized cache", "does not support the quantized cache", "",
            "{set: {cache_implementation: dynamic}, safety: safe}", "second wording") +
      entry("s.extra", "extra stress entry {x} was hit", "extra stress entry 1 was hit", "x: 1", "", "unused") +
      entry("s.heads", "head dim {q_head} is not supported for {dtype}", "head dim 48 is not supported for F16",
            "q_head: 48, dtype: F16", "", "second wording") +
      entry("s.kv", "kv_cache_enabled=true is not supported", "kv_cache_enabled=true is not supported", "",
            "{set: {kv_cache_enabled: false}, safety: slower}", "second wording"));
}
// Refused for three different reasons: bad YAML, a schema error, a lint problem.
std::vector<std::string> broken_catalogs() {
  return {"schema: 1\nentries: [\n", testing::file_yaml("  - id: s.bad\n    tempalte: x\n"),
          testing::file_yaml(entry("s.kv", "kv_cache_enabled=true is not supported", "kv cache is on", "", "",
                                   "lint: the example does not match"))};
}

const std::vector<std::string>& messages() {
  static const std::vector<std::string> m = {
      "kv_cache_enabled=true is not supported",
      "Traceback (most recent call last):\n  File \"gen.py\", line 3, in <module>\n    run()\n"
      "ValueError: head dim 48 is not supported for F16\n",
      "2024-05-01 12:00:00 ERROR [worker-3] does not support the quantized cache",
      "Error: loading failed\n\nCaused by:\n    0: head dim 64 is not supported for BF16\n",
      "some failure nobody knows",
      std::string("\xff\xfe\x00 binary \x80", 13),
  };
  return m;
}

std::string answer(const std::optional<Diagnosis>& d) {
  if (!d) return "none";
  std::string out = d->id();
  for (const Capture& c : d->captures) out += "|" + c.name + "=" + c.value;
  return out;
}

// A config and a build function that fails with a recognised message until
// the fix is made.
struct Job {
  std::string config_text;
  KeyPath key;
  std::string bad_value;
  std::string message;
};
const std::vector<Job>& jobs() {
  static const std::vector<Job> j = {
      {"model:\n  n_head: 16\n  kv_cache_enabled: true\n",
       {"model", "kv_cache_enabled"},
       "true",
       "kv_cache_enabled=true is not supported"},
      {"{\"cache_implementation\": \"quantized\", \"max_new_tokens\": 64}\n",
       {"cache_implementation"},
       "quantized",
       "ValueError: This model does not support the quantized cache."},
  };
  return j;
}

std::string remediate_answer(const Job& job, const Catalog& catalog) {
  const ConfigTree config = ConfigTree::parse(job.config_text, "stress");
  const auto r = remediate(
      config,
      [&](const ConfigTree& c) {
        const auto v = c.get(job.key);
        if (v && v->text == job.bad_value) throw std::runtime_error(job.message);
        return 42;
      },
      Policy{}, catalog);
  std::string out = std::to_string(r.value) + "|" + std::to_string(r.report.calls) + "|" + r.config.dump();
  for (const Decision& d : r.report.decisions) out += "|" + std::string(to_string(d.outcome)) + ":" + d.entry_id;
  if (config.dump() != ConfigTree::parse(job.config_text, "stress").dump()) out += "|caller's config changed";
  return out;
}

TEST(Stress, EightThreadsDiagnoseAndRemediateWhileTheCatalogIsReloaded) {
  const CatalogPtr a = CatalogBuilder().add_yaml(catalog_a(), "a.yaml").build();
  const CatalogPtr b = CatalogBuilder().add_yaml(catalog_b(), "b.yaml").build();
  // The single-threaded answers, the same on both catalogs.
  std::vector<std::string> expected;
  for (const std::string& m : messages()) {
    expected.push_back(answer(a->diagnose(m)));
    ASSERT_EQ(expected.back(), answer(b->diagnose(m))) << m;
  }
  ASSERT_EQ(expected[0], "s.kv");
  ASSERT_EQ(expected[1], "s.heads|q_head=48|dtype=F16");
  ASSERT_EQ(expected[4], "none");
  std::vector<std::string> expected_fix;
  for (const Job& j : jobs()) {
    expected_fix.push_back(remediate_answer(j, *a));
    ASSERT_EQ(expected_fix.back(), remediate_answer(j, *b));
    ASSERT_EQ(expected_fix.back().rfind("42|2|", 0), 0u) << expected_fix.back();
  }

  CatalogStore store(a);
  std::atomic<std::size_t> done{0}, wrong{0}, threw{0};
  std::atomic<bool> workers_done{false};
  std::mutex failures_mutex;
  std::vector<std::string> failures;  // the first few, for the message
  auto fail = [&](std::string what) {
    const std::lock_guard<std::mutex> lock(failures_mutex);
    if (failures.size() < 10) failures.push_back(std::move(what));
  };

  std::size_t swaps = 0, refusals = 0, unexpected_reloads = 0;
  std::thread reloader([&] {
    const std::vector<std::string> broken = broken_catalogs();
    const std::string good[] = {catalog_b(), catalog_a()};
    for (std::size_t cycle = 0; !workers_done.load() || cycle < 10; ++cycle) {
      const ReloadReport ok = store.reload(CatalogBuilder().add_yaml(good[cycle % 2], "good.yaml"));
      if (ok.outcome == ReloadReport::Outcome::swapped)
        ++swaps;
      else
        ++unexpected_reloads;
      const ReloadReport bad = store.reload(CatalogBuilder().add_yaml(broken[cycle % broken.size()], "bad.yaml"));
      if (bad.outcome == ReloadReport::Outcome::refused)
        ++refusals;
      else
        ++unexpected_reloads;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::uint64_t last_generation = 0;
      for (std::size_t i = t; i < operations(); i += kThreads) {
        try {
          const std::uint64_t g = store.generation();
          if (g < last_generation) {
            ++wrong;
            fail("generation went back from " + std::to_string(last_generation) + " to " + std::to_string(g));
          }
          last_generation = g;
          std::string got, want;
          if (i % 10 == 0) {
            const Job& job = jobs()[(i / 10) % jobs().size()];
            const CatalogPtr held = store.current();  // kept for the whole call
            got = remediate_answer(job, *held);
            want = expected_fix[(i / 10) % jobs().size()];
          } else {
            const std::size_t m = i % messages().size();
            got = (i % 2) ? answer(store.diagnose(messages()[m]))
                          : answer(store.current()->match(messages()[m]).diagnosis);
            want = expected[m];
          }
          if (got != want) {
            ++wrong;
            fail("operation " + std::to_string(i) + ": got '" + got + "', expected '" + want + "'");
          }
        } catch (const std::exception& e) {
          ++threw;
          fail("operation " + std::to_string(i) + " threw: " + e.what());
        }
        ++done;
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  workers_done = true;
  reloader.join();

  std::cout << "[ stress   ] " << done.load() << " operations on " << kThreads << " threads in " << seconds << " s, "
            << swaps << " catalogs swapped in, " << refusals << " broken reloads refused\n";
  EXPECT_EQ(done.load(), operations()) << "operations lost";
  EXPECT_EQ(wrong.load(), 0u) << ::testing::PrintToString(failures);
  EXPECT_EQ(threw.load(), 0u) << ::testing::PrintToString(failures);
  EXPECT_EQ(unexpected_reloads, 0u);
  EXPECT_GE(swaps, 10u);
  EXPECT_GE(refusals, 10u);
  EXPECT_EQ(store.generation(), 1 + swaps) << "each swap is one generation";
}

}  // namespace
}  // namespace errshim
