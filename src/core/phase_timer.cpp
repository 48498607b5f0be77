// phase_timer.cpp — nested scopes count once (the outermost), so a GEMM
// inside the head-loss scope is not counted twice.
#include "core/phase_timer.h"

#include "core/timer.h"

namespace mt {
namespace {
std::array<double, size_t(Phase::kCount)> g_totals{};
thread_local int g_depth = 0;
thread_local bool g_off = false;
}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kGemm: return "gemm";
    case Phase::kAttention: return "attention";
    case Phase::kMoeDispatch: return "router_dispatch";
    case Phase::kOptimizer: return "optimizer";
    case Phase::kHeadLoss: return "head_loss_non_gemm";
    case Phase::kComm: return "comm_wait";
    default: return "?";
  }
}

void PhaseTimer::add(Phase p, double s) {
  if (!g_off) g_totals[size_t(p)] += s;
}
void PhaseTimer::off_on_this_thread() { g_off = true; }
std::array<double, size_t(Phase::kCount)> PhaseTimer::totals() { return g_totals; }
void PhaseTimer::reset() { g_totals = {}; }

ScopedPhase::ScopedPhase(Phase p) : p_(p), t0_(now_seconds()), outer_(g_depth++ == 0) {}
ScopedPhase::~ScopedPhase() {
  --g_depth;
  if (outer_) PhaseTimer::add(p_, now_seconds() - t0_);
}

}  // namespace mt
