// Building a Problem that concerns a whole file (or no file): no line, column
// or entry.
#pragma once

#include <string>
#include <utility>

#include "errshim/catalog.hpp"

namespace errshim::detail {

// A named function rather than `{{file}, "", message}`: gcc 12 at -O2/-O3 warns
// (-Wmaybe-uninitialized) on that brace-initialised temporary's string, falsely.
inline Problem file_problem(std::string file, std::string message) {
  Problem p;
  p.where.file = std::move(file);
  p.message = std::move(message);
  return p;
}

}  // namespace errshim::detail
