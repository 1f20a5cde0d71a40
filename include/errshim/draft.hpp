// A skeleton catalog entry for an error the catalog does not know.
//
//   fmt::print("{}", errshim::draft_entry(what));              // one entry, a YAML catalog file
//   fmt::print("{}", errshim::draft_from_scan("serve.log", *errshim::Catalog::embedded()));
//
// The template is the root-cause message with a placeholder wherever
// mask_variables() sees a value ({num1}, {hex1}, {shape1}, {path1}, ...),
// the source is where the message says it was raised (stated_sites()), and
// examples.match holds the message. What only a person can write (cause,
// trigger, remediation) is a "TODO:" marker, which lint refuses until it is
// replaced, so a draft cannot slip into a catalog unread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace errshim {

class Catalog;  // errshim/catalog.hpp

struct DraftOptions {
  std::string library;  // the entry's library; empty: guessed from the stated raise site, else "unknown"
};

// A YAML catalog file (schema 1) holding one draft entry for `message`.
// Throws std::invalid_argument when `message` is blank.
std::string draft_entry(std::string_view message, const DraftOptions& options = {});

// The unrecognised errors of a log, one per fingerprint.
struct DraftGroup {
  std::string fingerprint;  // Fingerprint::id
  std::uint64_t count = 0;  // blocks with this fingerprint
  std::string message;  // the first block's text
  std::string file;  // where the first block is
  std::uint64_t line = 0;
};

// The `top` most frequent unrecognised fingerprints of the log at `path`
// (most frequent first; on a tie, the one seen first). Throws
// std::system_error when the file cannot be read.
std::vector<DraftGroup> unrecognised_groups(const std::string& path, const Catalog& catalog, std::size_t top = 5);

// One YAML catalog file with a draft entry per group, each under a comment
// giving its count, fingerprint and first location. Ids are made unique.
std::string draft_entries(const std::vector<DraftGroup>& groups, const DraftOptions& options = {});

}  // namespace errshim
