// The two exception-based ways to use errshim, on errors as they arrive from
// an inference layer (here a stand-in that throws the real messages):
//   1. wrap a model-construction call with errshim::guard;
//   2. translate inside the catch (...) of a generation loop;
// plus the string style for a worker's stderr, and what happens to errors the
// catalog does not know (they pass through untouched).
#include <cstdio>
#include <exception>
#include <stdexcept>

#include <fmt/format.h>

#include <errshim/errshim.hpp>
#include <errshim/render.hpp>

#include "inference_standin.hpp"

namespace {
int failures = 0;
int scenarios = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    ++failures;
    fmt::print("UNEXPECTED: {}\n", what);
  }
}

// The original error is never lost: it rides inside the enriched one.
bool original_is_ffi_error(const errshim::translated_error& e) {
  try {
    std::rethrow_if_nested(e);
  } catch (const standin::ffi_error&) {
    return true;
  } catch (...) {}
  return false;
}
}  // namespace

int main() {
  // 1. Model construction, wrapped.
  ++scenarios;
  standin::MetavoiceConfig cfg;  // kv_cache_enabled = true, as shipped
  try {
    auto model = errshim::guard([&] { return standin::candle_metavoice_new(cfg); });
    check(false, "construction should have failed");
  } catch (const errshim::translated_error& e) {
    fmt::print("1. model construction failed, explained:\n{}\n", e.diagnosis());
    check(e.id() == "candle.metavoice.kv_cache_enabled", "metavoice error recognised");
    check(original_is_ffi_error(e), "original ffi_error nested");
  }

  // 2. A generation loop: translate in catch (...), handle per request.
  ++scenarios;
  for (const char* model : {"llama-3-8b", "whisper-tiny"}) {
    try {
      try {
        standin::transformers_generate(model, "quantized");
        fmt::print("2. {}: generated\n", model);
      } catch (...) {
        errshim::rethrow_translated();
      }
    } catch (const errshim::translated_error& e) {
      fmt::print("2. {}: {}\n", model, e.what());
      check(e.id() == "transformers.generation.quantized_cache_unsupported", "quantized cache error recognised");
      check(e.diagnosis().exception_class == "ValueError", "exception class read from the traceback");
    }
  }

  // 3. Values captured from the message.
  ++scenarios;
  try {
    errshim::guard([] { standin::candle_sdpa_metal(48); });
  } catch (const errshim::translated_error& e) {
    const std::string* head = e.diagnosis().capture("q_head");
    fmt::print("3. {} (q_head={}, k_dims={})\n", e.id(), head ? *head : "?",
               e.diagnosis().capture("k_dims") ? *e.diagnosis().capture("k_dims") : "?");
    check(head && *head == "48", "q_head captured");
  }

  // 4. An error the catalog does not know keeps its type.
  ++scenarios;
  try {
    errshim::guard([] { throw std::out_of_range("token id 70000 outside the vocabulary"); });
  } catch (const std::out_of_range& e) {
    fmt::print("4. unknown error passed through unchanged: {}\n", e.what());
  } catch (...) {
    check(false, "unknown error changed type");
  }

  // 5. A message from a worker's stderr: no exception involved.
  ++scenarios;
  const char* stderr_line = "2026-11-30 10:01:42,123 ERROR worker-3 | only kv-repeat = 1 is supported";
  if (auto d = errshim::diagnose(stderr_line)) {
    fmt::print("5. worker log line -> {}; first fix: {}\n", d->id(), d->entry->remediation.front().text);
  } else {
    check(false, "log line recognised");
  }

  if (failures) {
    fmt::print("wrap_and_catch: {} check(s) failed\n", failures);
    return 1;
  }
  fmt::print("wrap_and_catch: all {} scenarios behaved as expected\n", scenarios);
  return 0;
}
