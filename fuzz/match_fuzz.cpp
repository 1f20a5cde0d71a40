// libFuzzer entry point for the 'match' target; the body is in fuzz_targets.hpp.
#include "fuzz_targets.hpp"

// Builds the catalog once, before inputs are timed against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  errshim::Catalog::embedded();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  errshim::fuzz::match_one(data, size);
  return 0;
}
