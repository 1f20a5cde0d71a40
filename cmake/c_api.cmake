# The C interface as a shared library, errshim_c, for FFI callers: the Python
# package (ctypes) and the Rust example load or link this one file. It carries
# the static errshim inside it and exports only the errshim_* C functions, so
# a host process never sees errshim's C++ symbols (nor clashes with its own
# copy of them).
#
# Included from the top CMakeLists.txt after the errshim target and tools/.

# c_api.cpp is compiled once, here (the core errshim leaves it out): its
# objects make errshim_c, and the unit tests link the same objects next to
# the static errshim, since they mix C calls with C++ ones (an observer
# registered in C sees a C++ guard) and so need one copy of the library.
add_library(errshim_c_objects OBJECT ${PROJECT_SOURCE_DIR}/src/bindings/c/c_api.cpp)
set_target_properties(errshim_c_objects PROPERTIES
  CXX_EXTENSIONS OFF
  POSITION_INDEPENDENT_CODE ON
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)
target_compile_features(errshim_c_objects PRIVATE cxx_std_17)
# The rooms it uses (json.hpp, observer_internal.hpp) give their include
# paths only: an object library linked by an object library adds no objects,
# and theirs come from errshim.
target_link_libraries(errshim_c_objects PRIVATE errshim_remedy errshim $<BUILD_INTERFACE:errshim_warnings>)
if(TARGET errshim_tests)
  target_sources(errshim_tests PRIVATE $<TARGET_OBJECTS:errshim_c_objects>)
endif()

option(ERRSHIM_BUILD_C_API "Build errshim_c, the shared library with the C interface" ${ERRSHIM_MASTER_PROJECT})
if(NOT ERRSHIM_BUILD_C_API)
  return()
endif()

add_library(errshim_c SHARED $<TARGET_OBJECTS:errshim_c_objects>)
add_library(errshim::errshim_c ALIAS errshim_c)
set_target_properties(errshim_c PROPERTIES
  OUTPUT_NAME errshim_c
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  CXX_EXTENSIONS OFF
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)
target_compile_features(errshim_c PRIVATE cxx_std_17)
target_link_libraries(errshim_c PRIVATE errshim $<BUILD_INTERFACE:errshim_warnings>)
target_include_directories(errshim_c INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)

if(CMAKE_SYSTEM_NAME MATCHES "Linux|BSD")
  # The static errshim was compiled with default visibility; the version
  # script is what keeps its symbols out of the dynamic table.
  set(_errshim_c_map ${PROJECT_BINARY_DIR}/errshim_c.map)
  file(WRITE ${_errshim_c_map} "{\n  global: errshim_*;\n  local: *;\n};\n")
  target_link_options(errshim_c PRIVATE "LINKER:--version-script=${_errshim_c_map}")
  # clang links its sanitizer runtimes into executables only: an
  # instrumented shared library leaves their symbols to the host.
  if(NOT (ERRSHIM_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang"))
    target_link_options(errshim_c PRIVATE "LINKER:--no-undefined")
  endif()
  set_property(TARGET errshim_c APPEND PROPERTY LINK_DEPENDS ${_errshim_c_map})
endif()

if(NOT ERRSHIM_BUILD_TESTS)
  return()
endif()

# The header must stay plain C11: compile it alone as C, warnings as errors.
find_program(ERRSHIM_C_COMPILER NAMES cc gcc clang)
if(ERRSHIM_C_COMPILER)
  add_test(NAME c_api.header_is_c11
           COMMAND ${ERRSHIM_C_COMPILER} -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -x c
                   ${PROJECT_SOURCE_DIR}/include/errshim/c_api.h)
  set_tests_properties(c_api.header_is_c11 PROPERTIES LABELS bindings)
endif()

# Under ERRSHIM_SANITIZE, errshim_c needs the sanitizer runtime loaded before
# anything else; a python3 or a Rust program that loads errshim_c was not
# built with it, so the runtime is preloaded for them (and leak checks are
# off: the interpreter keeps its memory until exit on purpose).
set(ERRSHIM_FFI_TEST_ENV "")
if(ERRSHIM_SANITIZE)
  set(_errshim_runtimes "")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # clang's shared runtimes; its ASan and TSan ones hold UBSan's too.
    set(_rt_arch ${CMAKE_SYSTEM_PROCESSOR})
    if(ERRSHIM_SANITIZE MATCHES "address")
      list(APPEND _errshim_runtimes libclang_rt.asan-${_rt_arch}.so)
    elseif(ERRSHIM_SANITIZE MATCHES "thread")
      list(APPEND _errshim_runtimes libclang_rt.tsan-${_rt_arch}.so)
    elseif(ERRSHIM_SANITIZE MATCHES "undefined")
      list(APPEND _errshim_runtimes libclang_rt.ubsan_standalone-${_rt_arch}.so)
    endif()
  else()
    if(ERRSHIM_SANITIZE MATCHES "address")
      list(APPEND _errshim_runtimes libasan.so)
    elseif(ERRSHIM_SANITIZE MATCHES "thread")
      list(APPEND _errshim_runtimes libtsan.so)
    endif()
    if(ERRSHIM_SANITIZE MATCHES "undefined")
      list(APPEND _errshim_runtimes libubsan.so)
    endif()
  endif()
  set(_errshim_preload "")
  foreach(_rt IN LISTS _errshim_runtimes)
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${_rt} OUTPUT_VARIABLE _rt_path
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND _errshim_preload ${_rt_path})
  endforeach()
  string(REPLACE ";" ":" _errshim_preload "${_errshim_preload}")
  set(ERRSHIM_FFI_TEST_ENV "LD_PRELOAD=${_errshim_preload}" "ASAN_OPTIONS=detect_leaks=0")
endif()

# The Python package on real Python exceptions, against this build's library.
find_package(Python3 COMPONENTS Interpreter)
errshim_optional_part("Python binding tests" "${Python3_Interpreter_FOUND}")
if(Python3_Interpreter_FOUND)
  add_test(NAME python.unittest
           COMMAND ${Python3_EXECUTABLE} -m unittest discover -s tests -v
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/python)
  set(_errshim_python_env ERRSHIM_LIBRARY=$<TARGET_FILE:errshim_c> PYTHONPATH=${PROJECT_SOURCE_DIR}/python
      PYTHONDONTWRITEBYTECODE=1 ${ERRSHIM_FFI_TEST_ENV})
  set_tests_properties(python.unittest PROPERTIES LABELS "bindings;python" ENVIRONMENT "${_errshim_python_env}")
else()
  message(STATUS "errshim: python3 not found, the Python binding tests are skipped")
endif()

# The wheel in a fresh venv, and the tests on a real torch: Debian's own
# interpreter, the one python3-torch, python3-setuptools, python3-wheel and
# python3-venv install for (scripts/setup.sh --with-python). Off with the
# other Python tests (CMAKE_DISABLE_FIND_PACKAGE_Python3).
set(_errshim_py_wheel OFF)
set(_errshim_py_torch OFF)
if(Python3_Interpreter_FOUND)
  find_program(ERRSHIM_SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
endif()
if(Python3_Interpreter_FOUND AND ERRSHIM_SYSTEM_PYTHON3)
  execute_process(COMMAND ${ERRSHIM_SYSTEM_PYTHON3} -c "import ensurepip, setuptools, wheel"
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0 AND NOT ERRSHIM_SANITIZE)  # the wheel refuses a sanitizer build, by design
    set(_errshim_py_wheel ON)
  endif()
  execute_process(COMMAND ${ERRSHIM_SYSTEM_PYTHON3} -c "import torch" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(_errshim_py_torch ON)
  endif()
endif()
errshim_optional_part("Python wheel test (venv)" ${_errshim_py_wheel})
errshim_optional_part("Python tests on torch" ${_errshim_py_torch})
if(_errshim_py_torch)
  add_test(NAME python.torch
           COMMAND ${ERRSHIM_SYSTEM_PYTHON3} -m unittest discover -s tests -p "test_torch*.py" -v
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/python)
  set_tests_properties(python.torch PROPERTIES LABELS "bindings;python" TIMEOUT 300
                       ENVIRONMENT "${_errshim_python_env};ERRSHIM_REQUIRE_TORCH=1")
elseif(Python3_Interpreter_FOUND)
  message(STATUS "errshim: /usr/bin/python3 cannot import torch, python.torch is skipped (scripts/setup.sh --with-python)")
endif()
if(_errshim_py_wheel)
  set(_errshim_wheel_args --build-dir ${PROJECT_BINARY_DIR} --work ${PROJECT_BINARY_DIR}/python-wheel-test)
  if(_errshim_py_torch)
    list(APPEND _errshim_wheel_args --require-torch)
  endif()
  add_test(NAME python.wheel
           COMMAND ${ERRSHIM_SYSTEM_PYTHON3} ${PROJECT_SOURCE_DIR}/python/tests/wheel_venv.py ${_errshim_wheel_args})
  set_tests_properties(python.wheel PROPERTIES LABELS "bindings;python" TIMEOUT 600)
elseif(Python3_Interpreter_FOUND)
  message(STATUS "errshim: no /usr/bin/python3 with venv, setuptools and wheel (or a sanitizer build), "
                 "python.wheel is skipped (scripts/setup.sh --with-python)")
endif()

# The Rust example: extern "C" declarations, no crates, built by rustc alone.
find_package(Rustc QUIET)
errshim_optional_part("Rust example" "${Rustc_FOUND}")
if(Rustc_FOUND)
  # In a folder of its own: a file named like its target confuses make.
  set(_errshim_rust_example ${PROJECT_BINARY_DIR}/examples/rust/errshim_rust_example)
  add_custom_command(
    OUTPUT ${_errshim_rust_example}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/examples/rust
    # MAKEFLAGS names make's jobserver, whose descriptors a custom command
    # does not inherit; rustc would warn about it.
    COMMAND ${CMAKE_COMMAND} -E env --unset=MAKEFLAGS --unset=MFLAGS --unset=CARGO_MAKEFLAGS
            ${Rustc_EXECUTABLE} --edition 2021 --crate-name errshim_rust_example --crate-type bin
            -L native=$<TARGET_FILE_DIR:errshim_c> -l dylib=errshim_c
            -C link-arg=-Wl,-rpath,$<TARGET_FILE_DIR:errshim_c>
            -o ${_errshim_rust_example} ${PROJECT_SOURCE_DIR}/examples/rust/main.rs
    DEPENDS errshim_c ${PROJECT_SOURCE_DIR}/examples/rust/main.rs
    COMMENT "Building the Rust example with rustc"
    VERBATIM)
  add_custom_target(errshim_rust_example ALL DEPENDS ${_errshim_rust_example})
  add_test(NAME rust.example COMMAND ${_errshim_rust_example})
  set_tests_properties(rust.example PROPERTIES
    LABELS "bindings;rust"
    ENVIRONMENT "${ERRSHIM_FFI_TEST_ENV}"
    # The program checks what it read and prints this line only when all is right.
    PASS_REGULAR_EXPRESSION "errshim_rust_example: OK candle\\.sdpa\\.unsupported_head_dim")
else()
  message(STATUS "errshim: rustc not found, the Rust example is skipped")
endif()
