# Finds RE2 (Debian: libre2-dev), a benchmark comparator only. Debian 12 ships
# a pkg-config file and no CMake package; this module makes it a find_package()
# name, so -DCMAKE_DISABLE_FIND_PACKAGE_RE2=ON switches it off like every
# other optional package. Defines RE2::RE2.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(_errshim_re2 QUIET IMPORTED_TARGET re2)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(RE2 REQUIRED_VARS _errshim_re2_LINK_LIBRARIES VERSION_VAR _errshim_re2_VERSION)
if(RE2_FOUND AND NOT TARGET RE2::RE2)
  add_library(RE2::RE2 INTERFACE IMPORTED)
  target_link_libraries(RE2::RE2 INTERFACE PkgConfig::_errshim_re2)
endif()
