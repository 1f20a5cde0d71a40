# Finds Hyperscan (Debian: libhyperscan-dev), a benchmark comparator only.
include(${CMAKE_CURRENT_LIST_DIR}/ErrshimPkgConfigPackage.cmake)
errshim_pkg_config_package(Hyperscan libhs)
