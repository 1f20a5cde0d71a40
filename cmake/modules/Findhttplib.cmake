# Finds cpp-httplib (Debian: libcpp-httplib-dev), for samples/server only.
include(${CMAKE_CURRENT_LIST_DIR}/ErrshimPkgConfigPackage.cmake)
errshim_pkg_config_package(httplib cpp-httplib)
