# One step of the package tests (see package_tests.cmake), run with cmake -P.
#   MODE=install           install BUILD_DIR into PREFIX (emptied first)
#   MODE=find_package      consumer configured against PREFIX, built, run
#   MODE=add_subdirectory  consumer with errshim's source as a subdirectory, built, run
#   MODE=pkg_config        consumer's main.cpp compiled with `pkg-config --cflags --libs errshim`, run
#   MODE=python            the installed Python package imported from PREFIX, finding errshim_c there
#   SANITIZE: ERRSHIM_SANITIZE of the build; the consumer links the same runtime
cmake_minimum_required(VERSION 3.20)

# An instrumented errshim needs an instrumented link (and the same flags
# keep the subdirectory build like the one under test).
set(sanitize_flags "")
if(SANITIZE)
  set(sanitize_flags -fsanitize=${SANITIZE})
endif()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc COMMAND_ECHO STDOUT)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

# The consumer project, configured, built with two jobs, and run: it checks
# what errshim told it and exits non-zero otherwise.
function(consumer)
  file(REMOVE_RECURSE ${WORK_DIR})
  # Build type "None": no optimisation and no debug info, the fastest
  # compile, which the subdirectory case (errshim built again) needs.
  run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
      -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=${sanitize_flags}" ${ARGN})
  run(${CMAKE_COMMAND} --build ${WORK_DIR} --parallel 2)
  run(${WORK_DIR}/errshim_consumer)
endfunction()

if(MODE STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
  foreach(f include/errshim/errshim.hpp include/errshim/c_api.h)
    if(NOT EXISTS ${PREFIX}/${f})
      message(FATAL_ERROR "not installed: ${f}")
    endif()
  endforeach()
elseif(MODE STREQUAL "find_package")
  consumer(-DERRSHIM_CONSUMER_MODE=package -DCMAKE_PREFIX_PATH=${PREFIX})
elseif(MODE STREQUAL "add_subdirectory")
  consumer(-DERRSHIM_CONSUMER_MODE=subdirectory -DERRSHIM_ROOT=${SOURCE_DIR})
elseif(MODE STREQUAL "pkg_config")
  file(REMOVE_RECURSE ${WORK_DIR})
  file(MAKE_DIRECTORY ${WORK_DIR})
  file(GLOB_RECURSE pc_files ${PREFIX}/errshim.pc)
  if(NOT pc_files)
    message(FATAL_ERROR "errshim.pc is not installed under ${PREFIX}")
  endif()
  list(GET pc_files 0 pc_file)
  get_filename_component(pc_dir ${pc_file} DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs errshim OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs errshim failed")
  endif()
  message(STATUS "pkg-config: ${flags}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  # main.cpp calls the C interface too, in the shared errshim_c: pkg-config
  # gives no run path to the prefix's library folder.
  get_filename_component(lib_dir ${pc_dir} DIRECTORY)
  run(${CXX_COMPILER} -std=c++17 ${sanitize_flags} ${CONSUMER_DIR}/main.cpp ${flags} -Wl,-rpath,${lib_dir}
      -o ${WORK_DIR}/errshim_consumer)
  run(${WORK_DIR}/errshim_consumer)
elseif(MODE STREQUAL "python")
  # Only what the prefix holds: no ERRSHIM_LIBRARY, no build tree on the path.
  unset(ENV{ERRSHIM_LIBRARY})
  set(ENV{PYTHONPATH} "${PREFIX}/${PYTHONDIR}")
  set(ENV{PYTHONDONTWRITEBYTECODE} 1)
  set(check [=[
import errshim, os
d = errshim.diagnose("ValueError: This model does not support the quantized cache. If you want your model to support quantized cache, please open an issue and tag @zucchini-nlp.")
assert d is not None and d.id == "transformers.generation.quantized_cache_unsupported", d
prefix = os.path.realpath(os.environ["ERRSHIM_TEST_PREFIX"])
assert os.path.realpath(errshim.library_path()).startswith(prefix + os.sep), errshim.library_path()
print("errshim python from the prefix:", errshim.library_path(), d.id)
]=])
  set(ENV{ERRSHIM_TEST_PREFIX} "${PREFIX}")
  # Run from an empty folder: `python -c` puts the working folder on sys.path.
  set(cwd ${PREFIX}-python-cwd)
  file(REMOVE_RECURSE ${cwd})
  file(MAKE_DIRECTORY ${cwd})
  execute_process(COMMAND ${PYTHON} -c "${check}" WORKING_DIRECTORY ${cwd} RESULT_VARIABLE rc COMMAND_ECHO STDOUT)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the Python package installed in ${PREFIX} does not find its library")
  endif()
  # The prefix moved elsewhere: the package still finds the library beside
  # it (the prefix is recorded relative to the package).
  # Hard links where the file system has them: a copy of the prefix is
  # hundreds of MB, which a CI machine short of disk did not have.
  set(moved ${PREFIX}-moved)
  file(REMOVE_RECURSE ${moved})
  execute_process(COMMAND cp -al ${PREFIX} ${moved} RESULT_VARIABLE linked ERROR_QUIET)
  if(NOT linked EQUAL 0)
    file(REMOVE_RECURSE ${moved})
    file(COPY ${PREFIX}/ DESTINATION ${moved})
  endif()
  set(ENV{PYTHONPATH} "${moved}/${PYTHONDIR}")
  set(ENV{ERRSHIM_TEST_PREFIX} "${moved}")
  execute_process(COMMAND ${PYTHON} -c "${check}" WORKING_DIRECTORY ${cwd} RESULT_VARIABLE rc COMMAND_ECHO STDOUT)
  file(REMOVE_RECURSE ${moved} ${cwd})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the Python package of a moved prefix (${moved}) does not find its library")
  endif()
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()
