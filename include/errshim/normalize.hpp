// Cutting a message down to the text that matters, the way users receive it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace errshim {

// Bounds on the work the translation path does on one message.
inline constexpr std::size_t kMaxInputBytes = 1u << 20;  // larger input: head and tail kept
inline constexpr std::size_t kMaxSegmentBytes = 16u << 10;  // one error message
inline constexpr std::size_t kMaxSegments = 32;

// One error message found in the input.
struct Segment {
  std::string text;  // the message alone: no "ValueError: ", no "Error: ", no log prefix
  std::string exception_class;  // "ValueError", "c10::Error", "" when the wrapper names none
};

struct Normalized {
  // Root cause first: the first exception of a Python chain, the last
  // "Caused by:" entry of a Rust chain, then outwards. When no wrapper is
  // recognised, the whole input (log prefixes and ANSI colours removed) is the
  // only segment.
  std::vector<Segment> segments;
  bool truncated = false;  // the input was over kMaxInputBytes
};

// Recognises Python tracebacks (with chained exceptions), Rust `Error:` with
// `Caused by:` chains and `Stack backtrace:` tails, Rust panics, candle's
// Debug form `Msg("...")`, libtorch's `Exception raised from ...` and frame
// lists, and log-line prefixes (timestamps, levels, logger and worker names).
// Never throws on any input.
[[nodiscard]] Normalized normalize(std::string_view raw) noexcept;

}  // namespace errshim
