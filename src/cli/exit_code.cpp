// exit_code.cpp — see exit_code.h.
#include "cli/exit_code.h"

#include <csignal>

#include <fmt/format.h>

namespace mt {

ExitCode stopped_exit_code(int sig) {
  switch (sig) {
    case SIGUSR1:
      return ExitCode::kRequeue;
    case SIGTERM:
      return ExitCode::kStoppedBySigterm;
    case SIGINT:
      return ExitCode::kStoppedBySigint;
    default:
      return ExitCode::kOk;
  }
}

ExitCode fail(const std::string& cmd, const Status& s, ExitCode code) {
  fmt::print(stderr, "moetrain {}: {}\n", cmd, s.message());
  return code;
}

}  // namespace mt
