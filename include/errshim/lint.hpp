// Checking a catalog against its own examples.
#pragma once

#include <vector>

#include "errshim/catalog.hpp"

namespace errshim {

// For every entry: each `match` example is won by this entry (with the whole
// catalog competing) and yields the captures it lists; each `no_match`
// example is not claimed by this entry. Returns the problems, with the
// position of the example at fault; empty when the catalog is clean.
// (Compilation problems never get here: CatalogBuilder::build reports them.)
std::vector<Problem> lint(const Catalog& catalog);

}  // namespace errshim
