// fault_injection.cpp — the scheduled process faults behind --inject-fault.
#include "train/fault_injection.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "kernels/cpu/gemm_fault.h"

namespace mt {
namespace {

enum class ProcessFault { kHang, kKill, kKillMid, kSlow, kNan, kSpike, kWrongGemm };

class ScheduledFault final : public FaultInjector {
 public:
  ScheduledFault(ProcessFault kind, int64_t rank, int64_t step) : kind_(kind), rank_(rank), step_(step) {}
  void at_step_begin(int64_t rank, int64_t step) override {
    if (kind_ == ProcessFault::kWrongGemm) {  // from STEP on (a resumed run past STEP too)
      if (rank != rank_ || step < step_ || fired_) return;
      fired_ = true;
      fmt::print(stderr, "moetrain: rank {}: injected fault: GEMM off by {:g} relative from step {}\n", rank,
                 kInjectedGemmError, step);
      gemm_inject_relative_error(kInjectedGemmError);
      return;
    }
    if (kind_ == ProcessFault::kSlow && rank == rank_ && step >= step_) {
      usleep(500000);
      return;
    }
    if (kind_ != ProcessFault::kHang && kind_ != ProcessFault::kKill) return;
    if (rank != rank_ || step != step_) return;
    fmt::print(stderr, "moetrain: rank {}: injected fault: {} at step {}\n", rank,
               kind_ == ProcessFault::kKill ? "killing myself" : "hanging", step);
    std::fflush(stderr);
    if (kind_ == ProcessFault::kKill) raise(SIGKILL);
    for (;;) pause();
  }
  void on_gradients(int64_t rank, int64_t step, float* grads, int64_t n) override {
    // Once per process: a rollback that recomputes the step sees clean data.
    if (rank != rank_ || step != step_ || n == 0 || fired_) return;
    fired_ = true;
    if (kind_ == ProcessFault::kKillMid) {
      fmt::print(stderr, "moetrain: rank {}: injected fault: killing myself mid-step {} (gradients complete, update "
                 "not applied)\n", rank, step);
      std::fflush(stderr);
      raise(SIGKILL);
    }
    if (kind_ == ProcessFault::kNan) {
      fmt::print(stderr, "moetrain: rank {}: injected fault: NaN in the gradient at step {}\n", rank, step);
      grads[n / 2] = std::nanf("");
    } else if (kind_ == ProcessFault::kSpike) {
      fmt::print(stderr, "moetrain: rank {}: injected fault: gradient x 1e4 at step {}\n", rank, step);
      for (int64_t i = 0; i < n; ++i) grads[i] *= 1e4f;
    }
  }

 private:
  ProcessFault kind_;
  int64_t rank_, step_;
  bool fired_ = false;
};

}  // namespace

Result<std::unique_ptr<FaultInjector>> parse_fault_spec(const std::string& spec) {
  char kind[16] = {0};
  long rank = -1, step = -1;
  char extra = 0;
  static const std::pair<const char*, ProcessFault> kKinds[] = {{"hang", ProcessFault::kHang},
                                                                 {"kill", ProcessFault::kKill},
                                                                 {"killmid", ProcessFault::kKillMid},
                                                                 {"slow", ProcessFault::kSlow},
                                                                 {"nan", ProcessFault::kNan},
                                                                 {"spike", ProcessFault::kSpike},
                                                                 {"wronggemm", ProcessFault::kWrongGemm}};
  const bool parsed = std::sscanf(spec.c_str(), "%15[a-z]:%ld:%ld%c", kind, &rank, &step, &extra) == 3;
  const auto* it = std::find_if(std::begin(kKinds), std::end(kKinds),
                                [&](const auto& k) { return std::string(kind) == k.first; });
  if (!parsed || rank < 0 || step < 1 || it == std::end(kKinds))
    return Status::errorf("--inject-fault: expected KIND:RANK:STEP with KIND hang, kill, killmid, slow, nan, spike or "
                          "wronggemm (STEP >= 1), got \"{}\"",
                          spec);
  const ProcessFault k = it->second;
  return std::unique_ptr<FaultInjector>(std::make_unique<ScheduledFault>(k, rank, step));
}

}  // namespace mt
