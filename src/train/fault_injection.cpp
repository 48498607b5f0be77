// fault_injection.cpp — the scheduled process faults behind --inject-fault.
#include "train/fault_injection.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

namespace mt {
namespace {

enum class ProcessFault { kHang, kKill };

class ScheduledFault final : public FaultInjector {
 public:
  ScheduledFault(ProcessFault kind, int64_t rank, int64_t step) : kind_(kind), rank_(rank), step_(step) {}
  void at_step_begin(int64_t rank, int64_t step) override {
    if (rank != rank_ || step != step_) return;
    fmt::print(stderr, "moetrain: rank {}: injected fault: {} at step {}\n", rank,
               kind_ == ProcessFault::kKill ? "killing myself" : "hanging", step);
    std::fflush(stderr);
    if (kind_ == ProcessFault::kKill) raise(SIGKILL);
    for (;;) pause();
  }

 private:
  ProcessFault kind_;
  int64_t rank_, step_;
};

}  // namespace

Result<std::unique_ptr<FaultInjector>> parse_fault_spec(const std::string& spec) {
  char kind[8] = {0};
  long rank = -1, step = -1;
  char extra = 0;
  if (std::sscanf(spec.c_str(), "%7[a-z]:%ld:%ld%c", kind, &rank, &step, &extra) != 3 || rank < 0 || step < 1 ||
      (std::string(kind) != "hang" && std::string(kind) != "kill"))
    return Status::errorf("--inject-fault: expected hang:RANK:STEP or kill:RANK:STEP (STEP >= 1), got \"{}\"", spec);
  const ProcessFault k = std::string(kind) == "kill" ? ProcessFault::kKill : ProcessFault::kHang;
  return std::unique_ptr<FaultInjector>(std::make_unique<ScheduledFault>(k, rank, step));
}

}  // namespace mt
