// comm_volume.h — closed forms of the bytes one rank receives per optimizer
// step (CommStats convention), which the distributed training tests check
// the trainer's metrics against; docs/distributed.md derives them. Token all-to-all volumes depend
// on routing, so only their bounds and the uniform-routing expectation are
// closed forms.
#pragma once
#include <cstdint>

#include "dist/shard_plan.h"
#include "model/config.h"
#include "model/context_chunks.h"

namespace mt {

struct StepCommBytes {
  int64_t allgather = 0;       // FSDP parameter gathers
  int64_t reduce_scatter = 0;  // FSDP gradient reduce-scatters
  int64_t allreduce = 0;       // token counts, step statistics, gradient norm
  // EP: the routing-independent part of the all-to-alls (capacity mode: the
  // fixed-size dispatch; dropless: the row-count exchange). The other three
  // (dropless: four) row all-to-alls come on top and depend on routing.
  int64_t alltoall_fixed = 0;
  int64_t context = 0;  // context parallelism: K/V gathers and their gradients' reduces
};

// Exact figures for the rank of `plan`: grad_accum micro-batches per step of
// `seq_len`-token sequences, `local_batch` of them per rank (each split over
// cx.cp ranks with context parallelism).
StepCommBytes step_comm_bytes(const ShardPlan& plan, const ModelConfig& c, int64_t grad_accum, int64_t local_batch,
                              int64_t seq_len, const ContextShape& cx = {});

// EP token all-to-all, per MoE layer and micro-batch, for one rank holding
// `tokens` tokens: the four all-to-alls (dispatch, combine and their
// gradients) each move `rows` rows of Din floats; with uniform routing a
// rank sends (and receives) rows = tokens * K * kept_frac * (ep - 1) / ep.
double expected_alltoall_bytes(const ModelConfig& c, int64_t ep, int64_t tokens, double kept_frac);

}  // namespace mt
