// libFuzzer entry point for the 'snapshot' target; the body is in fuzz_targets.hpp.
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  errshim::fuzz::snapshot_one(data, size);
  return 0;
}
