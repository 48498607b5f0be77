// run_queue.h — runs a set of `moetrain train` commands as child processes,
// at most `jobs` at once, each starting once the runs it depends on have
// finished (a ladder rung's cooldown branch needs the checkpoint its main
// run stops at). The OpenMP threads of the machine are split between the
// running children; results do not depend on it (the kernels are bitwise
// thread-count invariant). One live line shows every running child's step
// and the ETA of the whole queue, from the steps in their metrics.jsonl.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt {

struct QueuedRun {
  std::string name;                // label in the progress line and in errors
  std::vector<std::string> args;   // arguments after the moetrain binary
  std::string run_dir;             // where its metrics.jsonl appears (progress)
  std::string log_path;            // the child's stdout and stderr
  int64_t first_step = 0;          // the step it starts from (0 fresh, or the checkpoint it resumes)
  int64_t last_step = 0;           // the step it ends at
  double work = 0;                 // relative cost (e.g. FLOPs) for the ETA; 0 = last_step - first_step
  std::vector<size_t> after;       // indices of runs that must finish first
  bool done = false;               // already finished (skipped; counts as done for `after`)
  // Called in the parent when the child exits 0, before any dependent run
  // starts (e.g. copy the checkpoint a branch resumes from, record a result).
  std::function<Status()> on_done;
  // When set, a child that exits 1 (a step failed: e.g. the loss diverged)
  // or 2 (its config was refused) is data, not an error: this records it and
  // the queue goes on (a hyperparameter sweep). Other exits still stop the queue.
  std::function<Status(int exit_code)> on_failed;
};

struct RunQueueOptions {
  int64_t jobs = 1;          // children at once
  int64_t threads = 0;       // OpenMP threads to split between them; 0 = this machine's
  bool progress = true;
  std::string label = "runs";
};

// Runs every run not `done`. Stops at the first failure (the other children
// are killed) with an error that quotes the end of the failed run's log.
Status run_queue(std::vector<QueuedRun>& runs, const RunQueueOptions& opt);

// The state hash a finished child run's log printed last ("# done: step N,
// state hash H"; "" if none). Its metrics: rundir/metrics_log.h.
std::string logged_state_hash(const std::string& log);

}  // namespace mt
