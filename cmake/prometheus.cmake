# errshim::prometheus (library errshim_prometheus): errshim's counters and
# histograms in the host's prometheus-cpp registry (include/errshim/prometheus.hpp).
# Built when Debian's prometheus-cpp-dev is found;
# -DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=ON switches it off. Only its
# header names prometheus-cpp types, so the core library stays free of them.
find_package(prometheus-cpp CONFIG QUIET)
errshim_optional_part("prometheus-cpp metrics" "${prometheus-cpp_FOUND}")
if(NOT prometheus-cpp_FOUND)
  message(STATUS "errshim: prometheus-cpp not found, errshim::prometheus skipped (scripts/setup.sh --with-server installs it)")
  return()
endif()

add_library(errshim_prometheus ${PROJECT_SOURCE_DIR}/src/bindings/prometheus/prometheus.cpp)
add_library(errshim::prometheus ALIAS errshim_prometheus)
target_compile_features(errshim_prometheus PUBLIC cxx_std_17)
set_target_properties(errshim_prometheus PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
target_include_directories(errshim_prometheus PRIVATE ${PROJECT_SOURCE_DIR}/src/grammar)  # chars.hpp
target_link_libraries(errshim_prometheus PUBLIC errshim::errshim prometheus-cpp::core
                      PRIVATE $<BUILD_INTERFACE:errshim_warnings>)
