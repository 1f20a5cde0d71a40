// Where in a log buffer a line could open an error block: the literal
// search in front of the log scanner's line classifier (src/report/scan.cpp).
//
// A line opens a block in the scanner only if it contains, in any case, one
// of "err" (ERR/ERROR levels, "Error:", "FooError: "), "fatal", "critical",
// "panic" (the level and " panicked at "), "traceback", "exception"
// ("Exception raised from ", "FooException: ", " uncaught exception of type
// "), "terminate" ("terminate called after throwing"), or starts like a glog
// E/F record ("E1130 ..."), or carries an ESC byte (colour codes are removed
// before classifying, so a marker can be split by them). A byte where one of
// these begins is a candidate; every other line is noise the classifier
// would pass over, and is never looked at.
//
// Catalog literals are not among them on purpose: the scanner cuts blocks by
// these markers only, the catalog is consulted for a block once it is cut.
#pragma once

#include <cstddef>
#include <cstdint>

namespace errshim::detail {

enum class CandidateKernel { scalar, sse2, avx2, best };

// The offset in [begin, end) of the first candidate byte, or end - begin if
// there is none; `newlines` gets the number of '\n' before that offset.
// `begin` must be the start of a line (a glog record can begin there).
// Every kernel returns the same; `best` is the fastest this CPU runs.
std::size_t find_candidate(const char* begin, const char* end, std::uint64_t& newlines,
                           CandidateKernel kernel = CandidateKernel::best) noexcept;

// Whether `kernel` can run on this CPU.
bool candidate_kernel_available(CandidateKernel kernel) noexcept;

}  // namespace errshim::detail
