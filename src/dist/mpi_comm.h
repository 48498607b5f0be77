// mpi_comm.h — Comm over MPI (OpenMPI), and how a process finds out whether
// it was started by mpirun / srun. Every blocking call is a non-blocking one
// plus a wait loop with a deadline: a rank that waits longer than
// `timeout_s` pings every other rank on a private control communicator
// (waiting ranks answer from their own wait loops), prints which ranks did
// not answer (hung or dead), and aborts the job with a non-zero exit code.
#pragma once
#include <memory>
#include <string>

#include "comm/comm.h"

namespace mt {

// True when this process is one rank of an MPI job (mpirun, or srun with PMI).
bool launched_by_mpi();

// Ranks of this job on this host (OpenMPI's local size), or 1 when unknown.
int local_ranks_hint();

// OpenMP threads for one rank when the config says 0: the cores the launcher
// bound it to, or an equal share of the host's cores when it was not bound
// (oversubscribed runs) — never every core for every rank.
int default_rank_threads();

// The world: MpiComm (initialising MPI) under mpirun/srun, else LocalComm.
// MPI is finalised when the returned world is destroyed; destroy groups split
// from it first.
std::unique_ptr<Comm> make_world_comm(double timeout_s);

// What the process was doing, for timeout messages ("step 12").
void set_comm_context(const std::string& what);

// Ends every rank of the job now with `code` (MPI_Abort); in one process, exit(code).
[[noreturn]] void abort_job(Comm& world, int code);

}  // namespace mt
