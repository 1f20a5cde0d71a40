// Built only by the test rooms.a_room_cannot_include_a_room_it_does_not_use,
// which passes when this does not compile: report may not use match.
#include "matcher.hpp"
