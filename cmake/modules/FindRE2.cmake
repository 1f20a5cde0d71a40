# Finds RE2 (Debian: libre2-dev), a benchmark comparator only.
include(${CMAKE_CURRENT_LIST_DIR}/ErrshimPkgConfigPackage.cmake)
errshim_pkg_config_package(RE2 re2)
