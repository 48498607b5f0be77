// fault_injection.h — where the trainer lets a test break it, in the spirit
// of ckpt/file_system.h: production code calls the hook at fixed points and
// the default does nothing; tests install an injector (in process, or from
// the command line with `moetrain train --inject-fault`, which the MPI and
// supervisor tests use). The trainer never reads the environment for faults.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace mt {

// The relative error of an injected wrong-math rank (issue 10's example).
constexpr double kInjectedGemmError = 1e-3;

class FaultInjector {
 public:
  virtual ~FaultInjector() = default;
  // Called by every rank at the start of optimizer step `step` (1-based),
  // before any collective of that step.
  virtual void at_step_begin(int64_t rank, int64_t step) = 0;
  // Called by every rank once the step's gradients (its shard) are complete,
  // before the global norm.
  virtual void on_gradients(int64_t rank, int64_t step, float* grads, int64_t n) {}
};

// "KIND:RANK:STEP", as given to --inject-fault. KIND: hang (the rank stops
// answering), kill (it raises SIGKILL at the start of STEP), killmid
// (SIGKILL mid-step: the step's gradients are complete, in the weight
// streaming store too, and the update is not applied), slow (from STEP on, each step of the
// rank sleeps 0.5 s), nan (a NaN in its gradient at STEP), spike (its
// gradient scaled by 1e4 at STEP), wronggemm (from STEP on, every GEMM of
// the rank returns values off by kInjectedGemmError relative: a device with
// silently wrong math, for the health checks to name).
Result<std::unique_ptr<FaultInjector>> parse_fault_spec(const std::string& spec);

}  // namespace mt
