# Finds Hyperscan (Debian: libhyperscan-dev), a benchmark comparator only.
# Debian ships a pkg-config file and no CMake package; this module makes it a
# find_package() name, so -DCMAKE_DISABLE_FIND_PACKAGE_Hyperscan=ON switches it
# off like every other optional package. Defines Hyperscan::Hyperscan.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(_errshim_hs QUIET IMPORTED_TARGET libhs)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hyperscan REQUIRED_VARS _errshim_hs_LINK_LIBRARIES VERSION_VAR _errshim_hs_VERSION)
if(Hyperscan_FOUND AND NOT TARGET Hyperscan::Hyperscan)
  add_library(Hyperscan::Hyperscan INTERFACE IMPORTED)
  target_link_libraries(Hyperscan::Hyperscan INTERFACE PkgConfig::_errshim_hs)
endif()
