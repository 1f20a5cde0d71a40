# The body of the find modules for packages Debian ships with a pkg-config
# file and no CMake package (Hyperscan, RE2): makes them find_package()
# names, so -DCMAKE_DISABLE_FIND_PACKAGE_<Name>=ON switches them off like
# every other optional package. Defines <Name>::<Name>.
macro(errshim_pkg_config_package name module)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(_errshim_${name} QUIET IMPORTED_TARGET ${module})
  endif()
  include(FindPackageHandleStandardArgs)
  find_package_handle_standard_args(${name} REQUIRED_VARS _errshim_${name}_LINK_LIBRARIES
                                    VERSION_VAR _errshim_${name}_VERSION)
  if(${name}_FOUND AND NOT TARGET ${name}::${name})
    add_library(${name}::${name} INTERFACE IMPORTED)
    target_link_libraries(${name}::${name} INTERFACE PkgConfig::_errshim_${name})
  endif()
endmacro()
