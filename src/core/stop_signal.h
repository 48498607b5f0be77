// stop_signal.h — Ctrl-C (SIGINT), SIGTERM (a scheduler taking the job
// away) and SIGUSR1 (Slurm's advance notice, `sbatch --signal=USR1@LEAD`:
// "requeue me") as a request to stop: the trainer finishes the step it is
// in, commits a checkpoint there and exits, so `--resume` continues the same
// run. A second Ctrl-C ends the process at once (SA_RESETHAND: the default
// action is back after the first). SIGTERM and SIGUSR1 may come twice
// without that: Slurm signals every process of a job, so a rank hears it
// from the scheduler and again from its launcher (srun, mpirun) forwarding
// it, and the scheduler's SIGKILL follows anyway when time is up.
#pragma once

namespace mt {

void install_stop_signal_handlers();  // SIGINT, SIGTERM and SIGUSR1
// The first stop signal received since the handlers were installed (0: none).
int stop_signal_received();

}  // namespace mt
