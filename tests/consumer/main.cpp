// The consumer of the package tests: diagnoses a seed message through the
// C++ API and the C API of the library it was built against, and exits
// non-zero unless both name the expected entry.
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include <errshim/c_api.h>
#include <errshim/errshim.hpp>
#include <errshim/render.hpp>

int main() {
  const std::string seed =
      "Error: Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], k dims [1, 8, 7, 48], "
      "v dims [1, 8, 7, 48].";
  const char* expected = "candle.sdpa.unsupported_head_dim";

  const auto d = errshim::diagnose(seed);
  if (!d || d->id() != expected) {
    fmt::print("errshim_consumer: FAIL: C++ API gave '{}'\n", d ? d->id() : "no match");
    return 1;
  }

  errshim_diagnosis* c = nullptr;
  const errshim_status s = errshim_diagnose(nullptr, seed.data(), seed.size(), nullptr, &c, nullptr);
  const bool c_ok = s == ERRSHIM_OK && std::strcmp(errshim_diagnosis_id(c), expected) == 0;
  errshim_diagnosis_free(c);
  if (!c_ok) {
    fmt::print("errshim_consumer: FAIL: C API gave {}\n", errshim_status_name(s));
    return 1;
  }
  // fmt reaches the consumer through errshim/render.hpp: "{}" is the text form.
  const std::string text = fmt::format("{}", *d);
  fmt::print("errshim_consumer: {} (errshim {}, {} bytes of explanation)\n", d->id(), errshim::version(), text.size());
  return 0;
}
