// claim_out.h — what every command with `--out DIR` and `--move-aside` does
// with DIR before writing (rundir/output_dir.h): claim it for this
// command's configuration, print a refusal, say where an old directory went.
#pragma once
#include <optional>
#include <string>

#include "cli/exit_code.h"
#include "rundir/output_dir.h"

namespace mt {

// nullopt: DIR is ours, go on; else the exit code (kUsage) of a refusal
// already printed as "moetrain CMD: ...".
std::optional<ExitCode> claim_out(const std::string& cmd, const std::string& dir, const OutputOwner& owner,
                                  bool move_aside);

}  // namespace mt
