// libFuzzer entry point for the 'template' target; the body is in fuzz_targets.hpp.
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  errshim::fuzz::template_one(data, size);
  return 0;
}
