#include "errshim/error.hpp"

#include <fmt/format.h>

#include "errshim/catalog.hpp"
#include "error_internal.hpp"

namespace errshim {

std::string one_line_summary(const Diagnosis& d) {
  std::string_view msg = d.segment.empty() ? std::string_view(d.raw) : std::string_view(d.segment);
  msg = msg.substr(0, msg.find('\n'));
  std::string out = fmt::format("{}: {}", d.id(), msg);
  if (d.entry && !d.entry->remediation.empty()) out += fmt::format(" -- try: {}", d.entry->remediation.front().text);
  return out;
}

translated_error::translated_error(Diagnosis diagnosis)
    : std::runtime_error(one_line_summary(diagnosis)), diagnosis_(std::move(diagnosis)) {}

}  // namespace errshim
