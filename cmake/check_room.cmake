# Fails when a file of room ROOM includes a third-party header whose library
# is not in ALLOWED (cmake/rooms.cmake). Names: an include's first path
# component, mapped below to the name rooms.cmake lists.
#   cmake -DROOM=name "-DALLOWED=a;b" "-DFILES=f;g" -DSTAMP=file -P check_room.cmake
cmake_minimum_required(VERSION 3.20)
set(_names "boost=boost" "yaml-cpp=yaml-cpp" "nlohmann=nlohmann_json" "fmt=fmt" "prometheus=prometheus-cpp"
           "CLI=CLI11" "httplib.h=cpp-httplib" "torch=torch" "ATen=torch" "c10=torch" "gtest=gtest"
           "benchmark=benchmark")
set(_bad "")
foreach(_file IN LISTS FILES)
  if(_file STREQUAL "")
    continue()
  endif()
  # Only the include lines: a whole file's lines would split at semicolons.
  file(STRINGS ${_file} _includes REGEX "^[ \t]*#[ \t]*include[ \t]*<[^/>]+")
  foreach(_line IN LISTS _includes)
    string(REGEX MATCH "<([^/>]+)" _ "${_line}")
    set(_first ${CMAKE_MATCH_1})
    foreach(_pair IN LISTS _names)
      string(REPLACE "=" ";" _pair ${_pair})
      list(GET _pair 0 _prefix)
      list(GET _pair 1 _name)
      if(_first STREQUAL _prefix AND NOT _name IN_LIST ALLOWED)
        # The line number: newlines before the first line that is this one
        # (a leading newline, so a comment quoting it is not taken).
        file(READ ${_file} _text)
        set(_text "\n${_text}")
        string(FIND "${_text}" "\n${_line}" _at)
        string(SUBSTRING "${_text}" 0 ${_at} _before)
        string(REGEX MATCHALL "\n" _newlines "${_before}")
        list(LENGTH _newlines _n)
        math(EXPR _n "${_n} + 1")
        string(APPEND _bad "${_file}:${_n}: room ${ROOM} includes ${_name} (<${_first}/...>), which it does not "
                           "list; use it from a room that does, or add it to the room's THIRD_PARTY in "
                           "cmake/rooms.cmake if the arrow is meant (docs/architecture.md)\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(_bad)
  message(NOTICE "${_bad}")  # unwrapped, one line each
  message(FATAL_ERROR "room ${ROOM}: third-party headers it does not list")
endif()
file(WRITE ${STAMP} "")
