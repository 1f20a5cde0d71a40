// Internals of the log scanner that tests reach.
#pragma once

#include <cstddef>
#include <string>

#include "errshim/scan.hpp"

namespace errshim::detail {

// scan_file() with `threads` threads (1: the serial path) and the file cut
// into parts of about `part_bytes` (0: scan_file's own choice), so that a
// test can put splits anywhere in a small log.
ScanStats scan_file_parts(const std::string& path, const Catalog& catalog, const BlockVisitor& visit,
                          const ScanOptions& options, unsigned threads, std::size_t part_bytes);
ScanStats scan_file_parts(const std::string& path, const Catalog& catalog, const BlockOutput& output,
                          const ScanOptions& options, unsigned threads, std::size_t part_bytes);

}  // namespace errshim::detail
