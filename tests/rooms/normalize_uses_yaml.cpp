// Checked only by the test rooms.a_room_cannot_include_a_third_party_header_it_does_not_list,
// which passes when cmake/check_room.cmake refuses it: match knows no YAML.
#include <yaml-cpp/yaml.h>
