// The enriched error errshim throws in place of a recognised one.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

#include "errshim/diagnosis.hpp"

namespace errshim {

// A recognised inference-layer error, explained. Derives from
// std::runtime_error (catch sites for that keep working) and from
// std::nested_exception: the original exception rides inside, reachable with
// std::rethrow_if_nested or original().
//
// Construct it inside a catch block: std::nested_exception captures the
// exception being handled.
class translated_error : public std::runtime_error, public std::nested_exception {
 public:
  explicit translated_error(Diagnosis diagnosis);

  const Diagnosis& diagnosis() const noexcept { return diagnosis_; }
  const std::string& id() const noexcept { return diagnosis_.id(); }
  // The exception that was translated (same as nested_ptr()).
  std::exception_ptr original() const noexcept { return nested_ptr(); }

 private:
  Diagnosis diagnosis_;
};

}  // namespace errshim
