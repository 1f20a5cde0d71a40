// Catalog snapshots: a built catalog's entries in a binary form that loads
// without YAML. yaml-cpp alone reads ~150 ns per byte (~1.3 s for 10,000
// entries); a snapshot is read at memcpy speed, so loading is the index.
//
// A snapshot holds entries that a build already checked, so they are not
// checked again (raw patterns and `unless` lists still compile when the
// matcher is built, as for YAML). What is checked is the container: the
// magic, the format and errshim versions (the layout follows Entry, so a
// snapshot from another version is refused rather than misread), and every
// length against the bytes left, so a truncated or damaged snapshot is
// refused with a problem, never misread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "errshim/catalog.hpp"

namespace errshim::detail {

std::string write_snapshot(const std::vector<std::shared_ptr<const Entry>>& entries);

// The entries of a snapshot; on any problem, none and one problem naming `name`.
std::vector<Entry> read_snapshot(std::string_view bytes, const std::string& name, std::vector<Problem>& problems);

}  // namespace errshim::detail
