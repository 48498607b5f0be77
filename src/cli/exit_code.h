// exit_code.h — the process exit status of every `moetrain` command, by
// meaning; exit_codes.cpp says, per command, when each is returned (and
// docs/cli.md is generated from it). CLI11's own parse errors (104-109) are
// returned by main() and documented there too.
#pragma once
#include <string>

#include "core/status.h"

namespace mt {

enum class ExitCode : int {
  kOk = 0,
  kFailed = 1,   // the work failed: input data, I/O, a diverged run, a failed check
  kUsage = 2,    // a config or usage error: a bad flag, key, file or preset; a refused run directory
  kRefused = 3,  // the command refused on its own terms (data plan: would repeat data; export: a feature
                 // the format cannot hold); under mpirun also a collective's timeout (MPI_Abort(3))
  // Stopped by SIGUSR1 (Slurm's advance notice, `--signal=USR1@LEAD`) after
  // checkpointing: "requeue me". 75 is sysexits.h's EX_TEMPFAIL (try again
  // later); scripts/slurm/common.sh requeues the job on it.
  kRequeue = 75,
  // Stopped by a signal after checkpointing (train): 128 + the signal, as a shell reports it.
  kStoppedBySigint = 130,
  kStoppedBySigterm = 143,
};

// The code of a run stopped at a checkpoint by `sig` (SIGUSR1, SIGTERM or
// SIGINT; 0: not stopped, kOk): what train and supervise both return.
ExitCode stopped_exit_code(int sig);

// Prints "moetrain CMD: message" on stderr and returns `code`.
ExitCode fail(const std::string& cmd, const Status& s, ExitCode code = ExitCode::kFailed);

}  // namespace mt
