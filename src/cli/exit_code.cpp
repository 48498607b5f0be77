// exit_code.cpp — see exit_code.h.
#include "cli/exit_code.h"

#include <fmt/format.h>

namespace mt {

ExitCode fail(const std::string& cmd, const Status& s, ExitCode code) {
  fmt::print(stderr, "moetrain {}: {}\n", cmd, s.message());
  return code;
}

}  // namespace mt
