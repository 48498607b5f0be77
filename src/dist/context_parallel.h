// context_parallel.h — the K/V exchange of context parallelism (dist.cp;
// model/parallel_hooks.h ContextExchange) over the cp ranks that share a
// sequence. Global layers all-gather K and V, as Llama 3 chose for GQA
// (report, 2024, section 3.3.2: K/V are small next to Q under GQA, and the
// all-gather handles any mask), and reduce-scatter their gradients;
// sliding-window layers exchange only the halo of window - 1 rows before
// each chunk, with the owner of the chunk before it. Both run in a fixed
// order, so results do not depend on MPI's algorithms. Bytes are counted
// under CommKind::kContext; model/context_chunks.h has their closed forms.
#pragma once
#include <cstdint>
#include <vector>

#include "comm/comm.h"
#include "model/parallel_hooks.h"

namespace mt {

class ContextParallel final : public ContextExchange {
 public:
  // group: the cp ranks of one sequence, ordered by their cp rank; T: the
  // sequence length (a multiple of 2 cp).
  ContextParallel(Comm& group, int64_t T);
  int64_t cp() const override { return cp_; }
  int64_t seq_len() const override { return T_; }
  const std::vector<int32_t>& positions() const override { return pos_; }
  void gather(void* full, const void* local, int64_t B, int64_t heads, int64_t width, int64_t elem_bytes,
              int64_t window) override;
  void reduce(float* local, const float* full, int64_t B, int64_t heads, int64_t width, int64_t window) override;

 private:
  bool global(int64_t window) const { return window <= 0 || window >= T_; }
  int64_t halo(int64_t window) const { return window - 1; }
  Comm& comm_;
  int64_t T_, cp_, rank_, c_;
  std::vector<int32_t> pos_;
  std::vector<uint8_t> send_, recv_;  // packed rows, grow-only
  std::vector<float> sum_scratch_;
};

}  // namespace mt
