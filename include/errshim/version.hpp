// The one place errshim's version is written; CMake reads it from here.
#pragma once

#define ERRSHIM_VERSION_MAJOR 0
#define ERRSHIM_VERSION_MINOR 2
#define ERRSHIM_VERSION_PATCH 0
#define ERRSHIM_VERSION_STRING "0.2.0"

namespace errshim {
inline constexpr const char* version() noexcept { return ERRSHIM_VERSION_STRING; }
}  // namespace errshim
