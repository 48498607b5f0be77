// gemm_fault.h — test-only hook of gemm() (gemm.cpp): a device that computes
// slightly wrong math, for the health checks (train/health_check.h) to find.
// `--inject-fault wronggemm:...` on `moetrain train` / `moetrain doctor`
// sets it on one rank. A header of its own so that nothing but the fault
// injection and its tests sees it.
#pragma once

namespace mt {

// From now on every output of gemm() on this process is multiplied by
// (1 + rel). 0 (the default) turns it off; the cost when off is one
// predictable branch per gemm() call.
void gemm_inject_relative_error(double rel);

}  // namespace mt
