// supervisor.h — `moetrain supervise --hosts FILE -- <train args>`: runs a
// training job under OpenMPI's mpirun and keeps it going. Every rank keeps a
// heartbeat (rundir/heartbeat.h); the supervisor watches the job and the
// heartbeats, and on a rank's death, a hang (a heartbeat older than the
// timeout) or any other failure it stops the job, names the rank, its host
// and what it was doing, marks the host failed (quarantined on a second
// failure within the window), and relaunches from the newest committed
// checkpoint: on a spare host if one is free, else on fewer ranks (elastic:
// the global batch is fixed by the config, each rank takes a larger share;
// the largest rank count that divides the batch is used) as long as
// --min-ranks holds; below it, it waits for hosts to come back (after the
// recovery time) or stops with a message. A host that comes back is used
// again: the job is restarted at the larger size once a newer checkpoint is
// committed. Everything goes to RUN_DIR/events.jsonl; the supervisor's own
// state is RUN_DIR/supervisor/state.json, so a killed supervisor started
// again continues supervising the same run. At the end it prints the
// measured goodput beside what the planner's checkpoint/restart model
// predicts for the measured failure rate.
//
// Inside a Slurm allocation the hosts may come from the allocation instead
// of a file (supervise/slurm_allocation.h), and the ranks may be started by
// srun (a job step per launch, PMIx) instead of mpirun. A stop signal
// (core/stop_signal.h) is passed on to the launcher, which passes it on to
// every rank: the job stops at a checkpoint and the supervisor with it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "supervise/hosts.h"
#include "supervise/slurm_allocation.h"

namespace mt {

struct SupervisorOptions {
  std::string hosts_file;             // "": the Slurm allocation's hosts
  int64_t spares = 0;                 // the last N hosts start as spares
  int64_t min_ranks = 1;              // fewer usable ranks: wait, then stop
  std::string run_dir;
  std::vector<std::string> train_args;  // after `--` (no --run-dir, --resume, --heartbeat: the supervisor sets them)
  Launcher launcher = Launcher::kMpirun;
  std::string mpirun = "mpirun";
  std::string srun = "srun";
  bool local = false;                 // every host is this machine (one box, tests): no --host to mpirun
  double heartbeat_timeout_s = 120;   // a rank silent this long in a step is hung
  double startup_timeout_s = 300;     // from launch to every rank's first heartbeat
  double wait_for_hosts_s = 0;        // below --min-ranks: wait this long for hosts to come back
  int64_t max_restarts = 100;
  // A rank that keeps the others waiting (it waits less than a quarter of
  // the longest wait, which is over straggler_wait_s, three steps running)
  // is named; "replace" also treats it as a failed host.
  std::string straggler_policy = "warn";
  double straggler_wait_s = 0.1;
  HostPolicy policy;
};

// 0 once the run has finished; or the stop signal (SIGINT, SIGTERM, SIGUSR1:
// Slurm's advance notice) the supervisor received and passed on to the job,
// which stopped at a committed checkpoint: started again, the supervisor
// resumes from it (scripts/slurm/supervise.sbatch requeues the job).
Result<int> supervise(const SupervisorOptions& opt);

}  // namespace mt
