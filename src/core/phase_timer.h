// phase_timer.h — process-wide wall-time accounting by phase (gemm,
// attention, ...), for the per-phase breakdown of `moetrain bench`. Costs two
// clock reads per scope; never changes results.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace mt {

// kComm: blocked in a collective (distributed runs; src/dist).
enum class Phase : int { kGemm, kAttention, kMoeDispatch, kOptimizer, kHeadLoss, kComm, kCount };
const char* phase_name(Phase p);

class PhaseTimer {
 public:
  static void add(Phase p, double seconds);
  static std::array<double, size_t(Phase::kCount)> totals();
  static void reset();
  // A thread whose work is not the step's (background generation): its
  // scopes count nowhere, and it never touches the totals.
  static void off_on_this_thread();
};

class ScopedPhase {
 public:
  explicit ScopedPhase(Phase p);
  ~ScopedPhase();

 private:
  Phase p_;
  double t0_;
  bool outer_;
};

}  // namespace mt
