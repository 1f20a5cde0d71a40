// The same error, wherever and whenever it happened: one fingerprint.
//
//   errshim::fingerprint(block.text).id   // "9f0c2d41e7a3b655", equal for every worker's copy
//
// An error the catalog does not know is grouped by its root-cause message
// (the first segment normalize() finds) with the values that differ between
// occurrences masked: timestamps, UUIDs, hex numbers and addresses, IP
// addresses, paths and URLs, tensor shapes, ids (long tokens mixing letters
// and digits), and every other number, which covers worker, rank, pid, port
// and device tags ("worker-3", "[rank1]", "cuda:1"). Words, quoted names
// and the exception class are kept, so different errors stay apart.
#pragma once

#include <string>
#include <string_view>

namespace errshim {

struct Fingerprint {
  std::string id;  // 16 hex digits, a hash of `text`
  std::string text;  // "RuntimeError: shard <num> lost its KV block at <hex>" (at most 512 bytes)
};

// `message` with its variable parts replaced by <ts>, <uuid>, <hex>, <ip>,
// <path>, <url>, <shape>, <id> and <num>, and runs of blanks and newlines
// made one space. Reads at most the first 4 KiB; never throws but bad_alloc.
std::string mask_variables(std::string_view message);

// The fingerprint of an error text: a message, or a whole log block
// (traceback, error chain), whose root-cause segment and exception class
// are what is fingerprinted.
[[nodiscard]] Fingerprint fingerprint(std::string_view error_text);

}  // namespace errshim
