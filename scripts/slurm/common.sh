# common.sh — sourced by the sbatch templates in this folder (docs/distributed.md,
# "Slurm"): `mt_run LAUNCHER COMMAND...` starts COMMAND under LAUNCHER, passes
# Slurm's advance notice on to it, and requeues the job when moetrain says so.
#
#   LAUNCHER     srun (PMIx: Debian's Slurm and OpenMPI both support it),
#                mpirun (OpenMPI's, which reads the allocation itself), or
#                none (one process: supervise, ladder run, mix search)
#   MOETRAIN     the binary (default: moetrain on PATH)
#
# The notice: templates ask for `--signal=B:USR1@LEAD`, so Slurm signals this
# shell LEAD seconds before the time limit (`scancel --batch --signal=USR1 JOB`
# does the same by hand, e.g. before maintenance). The shell passes it on to
# the launcher, which passes it on to every rank; moetrain finishes the step,
# commits a checkpoint there and exits 75 ("requeue me"), and mt_run requeues
# the job, which resumes from that checkpoint bit for bit. SIGTERM, which
# Slurm sends to every process for scancel, preemption and `scontrol requeue`,
# also stops the ranks at a checkpoint (exit 143) but requeues nothing here: a
# cancel stays a cancel, and a preempted or `scontrol requeue`d job is
# requeued by Slurm itself.

MOETRAIN=${MOETRAIN:-moetrain}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

mt_run() {
  if [[ -z "${SLURM_JOB_ID:-}" ]]; then
    echo "mt_run: SLURM_JOB_ID is not set: submit this script with sbatch" >&2
    return 2
  fi
  local launcher=$1
  shift
  case "$launcher" in
    srun) set -- srun --mpi=pmix --kill-on-bad-exit=1 "$@" ;;
    mpirun) set -- mpirun --bind-to none -x OMP_WAIT_POLICY "$@" ;;
    none) ;;
    *)
      echo "mt_run: launcher '$launcher': expected srun, mpirun or none (MT_LAUNCHER)" >&2
      return 2
      ;;
  esac
  # The traps come first: a notice arriving before the child starts would
  # otherwise end this shell (USR1's default) instead of being passed on.
  local pid="" rc pending=0
  trap 'if [[ -n $pid ]]; then kill -USR1 $pid 2>/dev/null; else pending=1; fi' USR1
  trap ':' TERM  # the ranks got it too: wait for their checkpoint
  "$@" &
  pid=$!
  if [[ $pending -eq 1 ]]; then kill -USR1 "$pid" 2>/dev/null; fi
  while kill -0 "$pid" 2>/dev/null; do wait "$pid"; done
  wait "$pid"
  rc=$?
  trap - USR1 TERM
  if [[ $rc -eq 75 ]]; then
    echo "mt_run: stopped at a checkpoint (exit 75): requeueing job ${SLURM_JOB_ID}" >&2
    scontrol requeue "$SLURM_JOB_ID"  # an array task's own id: only this task
  fi
  return $rc
}
