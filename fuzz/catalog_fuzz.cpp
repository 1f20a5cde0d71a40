// libFuzzer entry point for the 'catalog' target; the body is in fuzz_targets.hpp.
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  errshim::fuzz::catalog_one(data, size);
  return 0;
}
