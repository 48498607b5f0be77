// trainer_weights.h — weights held as the trainer holds them, for the
// measurements that time products outside a trainer (doctor's cluster
// writer, the kernel benchmarks): one fp32 region, its bf16 shadow for bf16
// products (gemm_register_bf16_shadow) and the GEMM library's packed copies
// of it (gemm_register_packed_weights; train.pack_weights, on by default),
// repacked once per step. Products timed between two new_step() calls read
// the weights as one training step's do.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/gemm.h"

namespace mt {

class TrainerWeights {
 public:
  TrainerWeights(std::vector<float> values, MatmulPrecision p) : w_(std::move(values)), p_(p) {
    if (p_ == MatmulPrecision::kBf16) {
      shadow_.resize(w_.size());
      for (size_t i = 0; i < w_.size(); ++i) shadow_[i] = f32_to_bf16(w_[i]);
      gemm_register_bf16_shadow(w_.data(), shadow_.data(), int64_t(w_.size()));
    }
    gemm_register_packed_weights(w_.data(), int64_t(w_.size()));
  }
  ~TrainerWeights() {
    gemm_unregister_packed_weights(w_.data());
    if (p_ == MatmulPrecision::kBf16) gemm_register_bf16_shadow(w_.data(), nullptr, 0);
  }
  TrainerWeights(const TrainerWeights&) = delete;
  TrainerWeights& operator=(const TrainerWeights&) = delete;
  // A new step: the trainer bumps the version at each step's start, so each step packs once.
  void new_step() { gemm_weights_changed(); }
  float* data() { return w_.data(); }

 private:
  std::vector<float> w_;
  std::vector<bf16> shadow_;
  MatmulPrecision p_;
};

}  // namespace mt
