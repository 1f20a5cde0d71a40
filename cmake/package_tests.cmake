# Tests of errshim as its users get it: installed into a prefix and found
# with find_package, through pkg-config, the Python package from the prefix,
# and as a subdirectory of another project. Each builds and runs the small
# consumer in tests/consumer. Included from cmake/install.cmake.
#
# The install test installs this build (as built: run them after a full
# build) into <build>/package-test/prefix; the others depend on it through a
# fixture, except the subdirectory test, which builds errshim from source.

set(_pt_dir ${PROJECT_BINARY_DIR}/package-test)
set(_pt_prefix ${_pt_dir}/prefix)
set(_pt_script ${CMAKE_CURRENT_LIST_DIR}/package_test.cmake)
set(_pt_common
  -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
  -DCONSUMER_DIR=${PROJECT_SOURCE_DIR}/tests/consumer
  -DBUILD_DIR=${PROJECT_BINARY_DIR}
  -DPREFIX=${_pt_prefix}
  -DGENERATOR=${CMAKE_GENERATOR}
  -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
  -DSANITIZE=${ERRSHIM_SANITIZE})

add_test(NAME package.install COMMAND ${CMAKE_COMMAND} ${_pt_common} -DMODE=install -P ${_pt_script})
set_tests_properties(package.install PROPERTIES FIXTURES_SETUP errshim_installed)

add_test(NAME package.find_package
         COMMAND ${CMAKE_COMMAND} ${_pt_common} -DMODE=find_package -DWORK_DIR=${_pt_dir}/find_package
                 -P ${_pt_script})
set_tests_properties(package.find_package PROPERTIES FIXTURES_REQUIRED errshim_installed)

find_program(ERRSHIM_PKG_CONFIG NAMES pkg-config pkgconf)
if(ERRSHIM_PKG_CONFIG)
  add_test(NAME package.pkg_config
           COMMAND ${CMAKE_COMMAND} ${_pt_common} -DMODE=pkg_config -DWORK_DIR=${_pt_dir}/pkg_config
                   -DPKG_CONFIG=${ERRSHIM_PKG_CONFIG} -P ${_pt_script})
  set_tests_properties(package.pkg_config PROPERTIES FIXTURES_REQUIRED errshim_installed)
endif()

if(TARGET errshim_c AND Python3_Interpreter_FOUND)
  add_test(NAME package.python
           COMMAND ${CMAKE_COMMAND} ${_pt_common} -DMODE=python -DPYTHON=${Python3_EXECUTABLE}
                   -DPYTHONDIR=${ERRSHIM_INSTALL_PYTHONDIR} -P ${_pt_script})
  set_tests_properties(package.python PROPERTIES FIXTURES_REQUIRED errshim_installed
                       ENVIRONMENT "${ERRSHIM_FFI_TEST_ENV}")
endif()

# Builds the library again from source inside the consumer (with -j2).
add_test(NAME package.add_subdirectory
         COMMAND ${CMAKE_COMMAND} ${_pt_common} -DMODE=add_subdirectory -DWORK_DIR=${_pt_dir}/add_subdirectory
                 -P ${_pt_script})

set_tests_properties(package.install package.find_package package.add_subdirectory PROPERTIES
                     LABELS package TIMEOUT 900)
if(TEST package.pkg_config)
  set_tests_properties(package.pkg_config PROPERTIES LABELS package TIMEOUT 300)
endif()
if(TEST package.python)
  set_tests_properties(package.python PROPERTIES LABELS "package;python" TIMEOUT 120)
endif()
