// libFuzzer entry point for the 'config_fix' target; the body is in fuzz_targets.hpp.
#include "fuzz_targets.hpp"

// Builds the catalog once, before inputs are timed against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  errshim::fuzz::config_catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  errshim::fuzz::config_fix_one(data, size);
  return 0;
}
