# The library's rooms (docs/architecture.md): each folder under src/ is an
# OBJECT library whose include path holds only its own folder and those of
# the rooms it may use, so an internal header from a room it may not use does
# not compile ("No such file"). A third-party header is checked at build time
# against the room's THIRD_PARTY list (cmake/check_room.cmake), since system
# headers are on every include path. Rooms reach rooms above them only through
# the public headers in include/errshim.
#
#   errshim_room(NAME SOURCES file... [ROOMS room...] [THIRD_PARTY name...] [LINK target...])
#
# ROOMS: the rooms it may use (their own ROOMS come with them). THIRD_PARTY:
# the third-party headers it may include, by the names check_room.cmake maps
# include prefixes to. LINK: what those need at link time.
# Fills ERRSHIM_SOURCES (every source, for the fuzz build) and
# ERRSHIM_ROOM_DIRS (every room folder, for the tests, bench and fuzz).

set(ERRSHIM_SOURCES "")
set(ERRSHIM_ROOM_DIRS "")
set(ERRSHIM_ROOM_TARGETS "")

function(errshim_room name)
  cmake_parse_arguments(R "" "" "SOURCES;ROOMS;THIRD_PARTY;LINK" ${ARGN})
  set(dir ${PROJECT_SOURCE_DIR}/src/${name})
  string(REPLACE "/" "_" target "errshim_${name}")
  list(TRANSFORM R_SOURCES PREPEND ${dir}/)
  # Headers by glob, for the third-party check only: a new one is checked
  # without being listed, since the sources that include it are.
  file(GLOB headers CONFIGURE_DEPENDS ${dir}/*.hpp)
  set(stamp ${PROJECT_BINARY_DIR}/rooms/${target}.checked)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DROOM=${name} "-DALLOWED=${R_THIRD_PARTY}" "-DFILES=${R_SOURCES};${headers}"
            -DSTAMP=${stamp} -P ${PROJECT_SOURCE_DIR}/cmake/check_room.cmake
    DEPENDS ${R_SOURCES} ${headers} ${PROJECT_SOURCE_DIR}/cmake/check_room.cmake
    COMMENT "Checking the third-party headers of room ${name}"
    VERBATIM)
  add_custom_target(${target}_check DEPENDS ${stamp})

  add_library(${target} OBJECT ${R_SOURCES} ${headers})
  add_dependencies(${target} ${target}_check)
  target_compile_features(${target} PUBLIC cxx_std_17)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include ${dir})
  foreach(room IN LISTS R_ROOMS)
    string(REPLACE "/" "_" used "errshim_${room}")
    # PUBLIC: a room's headers may include those of the rooms it uses.
    target_link_libraries(${target} PUBLIC ${used})
  endforeach()
  target_link_libraries(${target} PUBLIC ${R_LINK} PRIVATE errshim_warnings)

  set(ERRSHIM_SOURCES ${ERRSHIM_SOURCES} ${R_SOURCES} PARENT_SCOPE)
  set(ERRSHIM_ROOM_DIRS ${ERRSHIM_ROOM_DIRS} ${dir} PARENT_SCOPE)
  set(ERRSHIM_ROOM_TARGETS ${ERRSHIM_ROOM_TARGETS} ${target} PARENT_SCOPE)
endfunction()

# From the bottom up; each list is explicit, a new source is added here.
errshim_room(grammar
  SOURCES fix_values.cpp log_line.cpp regex_syntax.cpp template.cpp vocabulary.cpp yaml_scalar.cpp
  THIRD_PARTY fmt boost
  LINK fmt::fmt Boost::regex)
errshim_room(match
  SOURCES big_tables.cpp context.cpp entry_table.cpp fingerprint.cpp literal_extract.cpp literal_index.cpp matcher.cpp
          normalize.cpp pattern_risk.cpp raise_site.cpp snapshot.cpp
  ROOMS grammar
  THIRD_PARTY fmt boost
  LINK fmt::fmt Boost::regex Threads::Threads)
errshim_room(report
  SOURCES json.cpp render.cpp scan.cpp scan_candidates.cpp scan_follow.cpp
  ROOMS grammar
  THIRD_PARTY fmt
  LINK fmt::fmt Threads::Threads)
errshim_room(remedy
  SOURCES config_tree.cpp error.cpp guard.cpp metrics.cpp observer.cpp preflight.cpp remediation.cpp
          typed_config.cpp
  ROOMS grammar match report
  THIRD_PARTY fmt boost yaml-cpp
  LINK fmt::fmt Boost::regex yaml-cpp Threads::Threads)
errshim_room(catalog
  SOURCES catalog.cpp catalog_loader.cpp catalog_store.cpp draft.cpp generated_layers.cpp importer.cpp lint.cpp
  ROOMS grammar match report remedy
  THIRD_PARTY fmt boost yaml-cpp nlohmann_json
  LINK fmt::fmt Boost::regex yaml-cpp nlohmann_json::nlohmann_json Threads::Threads)

# Baked into the one source that reads it, so the rest of the library's
# objects do not depend on the install prefix (cmake/generated_layers.cmake).
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/catalog/generated_layers.cpp PROPERTIES
  COMPILE_DEFINITIONS "ERRSHIM_GENERATED_INSTALL_DIR=\"${ERRSHIM_GENERATED_INSTALL_DIR}\"")

# Every room's objects, for the library and the snapshot writer.
set(ERRSHIM_ROOM_OBJECTS "")
foreach(t IN LISTS ERRSHIM_ROOM_TARGETS)
  list(APPEND ERRSHIM_ROOM_OBJECTS $<TARGET_OBJECTS:${t}>)
endforeach()

# The internal headers of every room, for the tests, bench and CLI that reach
# internals; never for the library's own rooms.
add_library(errshim_internal_headers INTERFACE)
target_include_directories(errshim_internal_headers INTERFACE ${ERRSHIM_ROOM_DIRS})

# The arrows hold: a room that includes a header of a room it may not use, or
# a third-party header it does not list, does not build. Both probes are
# built only by these tests.
if(ERRSHIM_BUILD_TESTS)
  add_library(errshim_room_probe OBJECT EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/tests/rooms/report_uses_match.cpp)
  target_link_libraries(errshim_room_probe PRIVATE errshim_report)
  add_test(NAME rooms.a_room_cannot_include_a_room_it_does_not_use
           COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target errshim_room_probe)
  set_tests_properties(rooms.a_room_cannot_include_a_room_it_does_not_use PROPERTIES
    LABELS unit PASS_REGULAR_EXPRESSION "matcher\\.hpp: No such file")
  add_test(NAME rooms.a_room_cannot_include_a_third_party_header_it_does_not_list
           COMMAND ${CMAKE_COMMAND} -DROOM=match "-DALLOWED=fmt;boost"
                   -DFILES=${PROJECT_SOURCE_DIR}/tests/rooms/normalize_uses_yaml.cpp
                   -DSTAMP=${PROJECT_BINARY_DIR}/rooms/probe.checked -P ${PROJECT_SOURCE_DIR}/cmake/check_room.cmake)
  set_tests_properties(rooms.a_room_cannot_include_a_third_party_header_it_does_not_list PROPERTIES
    LABELS unit PASS_REGULAR_EXPRESSION "normalize_uses_yaml\\.cpp:3: room match includes yaml-cpp")
endif()
