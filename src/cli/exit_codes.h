// exit_codes.h — what each `moetrain` command returns, written down once for
// docs/cli.md. Hand-kept: each entry names the code that decides, and
// tests/e2e/cli_reference_test.cpp runs a cheap case of most codes.
#pragma once
#include <string>
#include <vector>

#include "cli/exit_code.h"

namespace mt {

struct ExitCodeMeaning {
  ExitCode code;
  std::string meaning;
};

struct CommandExitCodes {
  std::string command;          // the path below `moetrain`, e.g. "data plan"
  std::string where;            // the code that returns them, e.g. "src/cli/cmd_data.cpp (run_plan)"
  std::vector<ExitCodeMeaning> codes;  // every code besides 0 (success) and CLI11's parse errors
};

// One entry per leaf command (a command without subcommands), in the order
// main.cpp registers them. cli_reference_markdown() checks that every leaf
// has exactly one entry and that no entry names a command that is gone.
const std::vector<CommandExitCodes>& command_exit_codes();

}  // namespace mt
