# Installing errshim: the library and its headers, the command-line tool, the
# C-interface library and the Python package when they are built, a CMake
# package (find_package(errshim CONFIG) -> errshim::errshim) and a pkg-config
# file. Everything installed is relocatable: the prefix may be moved, or
# chosen at install time with `cmake --install build --prefix DIR`.
#
# Included from the top CMakeLists.txt, last (it installs what the other
# parts defined).

option(ERRSHIM_INSTALL "Generate the install rules and the CMake package" ${ERRSHIM_MASTER_PROJECT})
if(NOT ERRSHIM_INSTALL)
  return()
endif()

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ERRSHIM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/errshim CACHE STRING
    "Where errshimConfig.cmake goes, relative to the prefix")
set(ERRSHIM_INSTALL_PYTHONDIR ${CMAKE_INSTALL_DATADIR}/errshim/python CACHE STRING
    "Where the Python package goes, relative to the prefix (add it to PYTHONPATH)")

get_target_property(_errshim_type errshim TYPE)
if(_errshim_type STREQUAL "STATIC_LIBRARY")
  set(ERRSHIM_STATIC ON)
else()
  set(ERRSHIM_STATIC OFF)
endif()

# -- the library, its headers, the tools

install(TARGETS errshim EXPORT errshim-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT devel
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Public headers include fmt (render.hpp): the package finds fmt for its users.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/errshim DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

if(TARGET errshim_cli)
  install(TARGETS errshim_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()

if(TARGET errshim_c)
  install(TARGETS errshim_c EXPORT errshim-targets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT runtime
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
  # Not a library copied into the source package (the package would load it
  # before the prefix's), nor a prefix module a test left there.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/errshim DESTINATION ${ERRSHIM_INSTALL_PYTHONDIR} COMPONENT python
          PATTERN "__pycache__" EXCLUDE PATTERN "_install_prefix.py" EXCLUDE PATTERN "*errshim_c*" EXCLUDE)
  # The package finds errshim_c in the folder the library was installed to,
  # recorded in errshim/_install_prefix.py relative to the installed package
  # (a moved prefix still works). Written at install time, when the prefix
  # (`cmake --install --prefix`) is known. It never searches folders above
  # itself: a library planted there would run in the host.
  if(WIN32)
    set(_errshim_py_libdir ${CMAKE_INSTALL_BINDIR})
  else()
    set(_errshim_py_libdir ${CMAKE_INSTALL_LIBDIR})
  endif()
  install(CODE "set(_errshim_py_pkg [[${ERRSHIM_INSTALL_PYTHONDIR}/errshim]])
set(_errshim_py_lib [[${_errshim_py_libdir}]])" COMPONENT python)
  install(CODE [[
foreach(_v _errshim_py_pkg _errshim_py_lib)
  if(NOT IS_ABSOLUTE "${${_v}}")
    set(${_v} "${CMAKE_INSTALL_PREFIX}/${${_v}}")
  endif()
endforeach()
file(RELATIVE_PATH _errshim_py_rel "${_errshim_py_pkg}" "${_errshim_py_lib}")
string(REPLACE "\\" "\\\\" _errshim_py_rel "${_errshim_py_rel}")
string(REPLACE "\"" "\\\"" _errshim_py_rel "${_errshim_py_rel}")
message(STATUS "Installing: $ENV{DESTDIR}${_errshim_py_pkg}/_install_prefix.py")
file(WRITE "$ENV{DESTDIR}${_errshim_py_pkg}/_install_prefix.py"
     "# Written by cmake --install: where errshim_c was installed, relative to this package.\n"
     "LIBRARY_DIRS = [\"${_errshim_py_rel}\"]\n")
]] COMPONENT python)
endif()

# -- the CMake package

# A static errshim carries its private dependencies (Boost.Regex, yaml-cpp)
# into errshim-targets.cmake as $<LINK_ONLY:...>; the config file finds them
# so those names resolve in the consumer's project.
install(EXPORT errshim-targets NAMESPACE errshim:: DESTINATION ${ERRSHIM_INSTALL_CMAKEDIR}
        FILE errshim-targets.cmake COMPONENT devel)

# The prometheus-cpp bridge, an export set of its own: a consumer without
# prometheus-cpp still finds the package (errshimConfig.cmake includes it
# only when prometheus-cpp is found there too).
if(TARGET errshim_prometheus)
  set_target_properties(errshim_prometheus PROPERTIES EXPORT_NAME prometheus)
  install(TARGETS errshim_prometheus EXPORT errshim-prometheus-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT devel)
  install(EXPORT errshim-prometheus-targets NAMESPACE errshim:: DESTINATION ${ERRSHIM_INSTALL_CMAKEDIR}
          FILE errshim-prometheus-targets.cmake COMPONENT devel)
endif()
# No build-tree export(): there errshim's private $<BUILD_INTERFACE:errshim_warnings>
# would have to be exported too, and the warnings are not for consumers. A
# project that wants errshim unbuilt uses add_subdirectory.

set(ERRSHIM_BOOST_MIN_VERSION 1.74)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/errshimConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/errshimConfig.cmake
                              INSTALL_DESTINATION ${ERRSHIM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/errshimConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/errshimConfig.cmake ${PROJECT_BINARY_DIR}/errshimConfigVersion.cmake
        DESTINATION ${ERRSHIM_INSTALL_CMAKEDIR} COMPONENT devel)

# -- pkg-config

# Relocatable: the prefix is found from the .pc file's own place.
file(RELATIVE_PATH ERRSHIM_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
string(REGEX REPLACE "/$" "" ERRSHIM_PC_TO_PREFIX "${ERRSHIM_PC_TO_PREFIX}")
if(ERRSHIM_STATIC)
  # Without --static, pkg-config only gives Libs: a static errshim needs its
  # dependencies there, or a plain `pkg-config --libs errshim` link fails.
  set(ERRSHIM_PC_REQUIRES "fmt yaml-cpp")
  set(ERRSHIM_PC_REQUIRES_PRIVATE "")
  set(ERRSHIM_PC_LIBS "-L\${libdir} -lerrshim -lboost_regex -pthread")
  set(ERRSHIM_PC_LIBS_PRIVATE "")
else()
  set(ERRSHIM_PC_REQUIRES "fmt")
  set(ERRSHIM_PC_REQUIRES_PRIVATE "yaml-cpp")
  set(ERRSHIM_PC_LIBS "-L\${libdir} -lerrshim")
  set(ERRSHIM_PC_LIBS_PRIVATE "-lboost_regex -pthread")
endif()
if(TARGET errshim_c)
  string(APPEND ERRSHIM_PC_LIBS " -lerrshim_c")  # the C interface is in errshim_c only (cmake/c_api.cmake)
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/errshim.pc.in ${PROJECT_BINARY_DIR}/errshim.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/errshim.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT devel)

# -- tests of all of the above, from a consumer's side

if(ERRSHIM_BUILD_TESTS)
  include(${CMAKE_CURRENT_LIST_DIR}/package_tests.cmake)
endif()
