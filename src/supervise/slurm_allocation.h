// slurm_allocation.h — the hosts of the Slurm allocation a command runs in,
// read from the variables sbatch and salloc set: SLURM_JOB_NODELIST (a
// hostlist, "gpu[01-03,7],login2") and the ranks per host from
// SLURM_TASKS_PER_NODE ("8(x3),4": counts with repeats, one per host) or,
// failing it, SLURM_NTASKS_PER_NODE (one count for every host). Expanded
// here rather than with `scontrol show hostnames` so that the supervisor
// needs no Slurm client to read its allocation, and the expansion is
// testable; malformed values are errors that name the variable.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "supervise/hosts.h"

namespace mt {

// How `moetrain supervise` starts the ranks: OpenMPI's mpirun (over a hosts
// file, or inside an allocation, which it reads itself), or Slurm's srun
// (PMIx: `srun --mpi=pmix`), which needs an allocation.
enum class Launcher { kMpirun, kSrun };

// "gpu[01-03,7],login2" -> gpu01 gpu02 gpu03 gpu07 login2 (zero padding kept).
Result<std::vector<std::string>> expand_hostlist(const std::string& list, const std::string& variable);
// "8(x3),4" -> 8 8 8 4.
Result<std::vector<int64_t>> expand_tasks_per_node(const std::string& value, const std::string& variable);

// Reads a variable of the environment (nullptr: unset); tests pass their own.
using EnvLookup = std::function<const char*(const char*)>;
const char* process_env(const char* name);

// True inside an allocation (SLURM_JOB_ID is set).
bool in_slurm_allocation(const EnvLookup& env = process_env);
// The allocation's hosts in order, each with its task count as slots; the
// last `spares` start as spares (as for a hosts file). An error, naming the
// variable, outside an allocation or for malformed or disagreeing values.
Result<std::vector<Host>> allocation_hosts(int64_t spares, const EnvLookup& env = process_env);

}  // namespace mt
