// grad_ledger.cpp — a flag per layout tensor, found by binary search over
// the tensors' offsets (a few hundred lookups a step).
#include "model/grad_ledger.h"

#include <algorithm>

#include "core/check.h"
#include "model/param_layout.h"

namespace mt {

GradLedger::GradLedger(const ParamLayout& layout) : total_(layout.total()) {
  for (const ParamEntry& e : layout.entries()) {
    if (e.numel == 0) continue;
    MT_CHECK(starts_.empty() || e.offset > starts_.back(), "layout tensor {} is not after the previous one", e.name);
    starts_.push_back(e.offset);
  }
  written_.assign(starts_.size(), 1);  // nothing is known to be zero before the first clear
}

void GradLedger::set(int64_t lo, int64_t hi, uint8_t written) {
  const auto first = std::lower_bound(starts_.begin(), starts_.end(), lo) - starts_.begin();
  const auto last = std::lower_bound(starts_.begin(), starts_.end(), hi) - starts_.begin();
  std::fill(written_.begin() + first, written_.begin() + last, written);
}

int64_t GradLedger::tensor_of(int64_t off) const {
  MT_CHECK(off >= 0 && off < total_ && !starts_.empty() && off >= starts_.front(),
           "gradient offset {} outside the layout [0, {})", off, total_);
  return int64_t(std::upper_bound(starts_.begin(), starts_.end(), off) - starts_.begin()) - 1;
}

void GradLedger::touch(int64_t off) { written_[size_t(tensor_of(off))] = 1; }

float GradLedger::first_write_beta(int64_t off, int64_t n) {
  MT_CHECK(n > 0 && off + n <= total_, "gradient range [{}, {}) outside the layout [0, {})", off, off + n, total_);
  const int64_t first = tensor_of(off), last = tensor_of(off + n - 1);
  bool fresh = true;
  for (int64_t t = first; t <= last; ++t) {
    fresh = fresh && written_[size_t(t)] == 0;
    written_[size_t(t)] = 1;
  }
  return fresh ? 0.0f : 1.0f;
}

int64_t GradLedger::written() const { return int64_t(std::count(written_.begin(), written_.end(), uint8_t(1))); }

}  // namespace mt
