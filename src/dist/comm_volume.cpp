// comm_volume.cpp — the FSDP schedule of fsdp.cpp, counted: per micro-batch
// the root units are gathered once, every layer twice (forward and backward)
// except the last, which stays gathered (units: the layers, then the MTP
// modules' blocks); every unit's gradient is
// reduce-scattered once. A gather of a unit of S elements brings this rank
// S - mine elements; a reduce-scatter brings it (n - 1) * mine.
#include "dist/comm_volume.h"

namespace mt {
namespace {
int64_t gather(const ShardUnit& u) { return u.whole() ? 0 : (u.size() - u.mine()) * 4; }
int64_t reduce(const ShardUnit& u) {
  return u.whole() ? 0 : int64_t(u.counts.size() - 1) * u.mine() * 4;
}
}  // namespace

StepCommBytes step_comm_bytes(const ShardPlan& plan, const ModelConfig& c, int64_t grad_accum, int64_t local_batch,
                              int64_t seq_len, const ContextShape& cx) {
  StepCommBytes b;
  const int64_t L = c.n_units(), n = plan.shape().world();
  int64_t moe_layers = 0;
  for (int64_t l = 0; l < L; ++l) moe_layers += c.is_moe(l) ? 1 : 0;
  int64_t ag = gather(plan.embed()) + gather(plan.tail()), rs = reduce(plan.embed()) + reduce(plan.tail());
  for (int64_t l = 0; l < L; ++l) {
    const int64_t times = l == L - 1 ? 1 : 2;
    ag += times * (gather(plan.dense(l)) + gather(plan.experts(l)));
    rs += reduce(plan.dense(l)) + reduce(plan.experts(l));
  }
  b.allgather = ag * grad_accum;
  b.reduce_scatter = rs * grad_accum;
  if (n > 1) {
    // Per micro-batch one token count per head (the main one and each MTP
    // module's); per step loss/mtp/aux/z, drops, assignments, the two stop
    // signals' counts, the attention keys by layer kind and the expert loads,
    // then the gradient norm.
    const int64_t values = grad_accum * (1 + c.mtp_depth) + 4 + 6 + moe_layers * c.n_experts + 1;
    b.allreduce = (n - 1) * values * 8;
  }
  const int64_t ep = plan.shape().ep;
  if (ep > 1) {
    const int64_t El = plan.expert_count(), G = c.group_size(seq_len), cap = c.capacity(G);
    const int64_t slot_rows = local_batch * seq_len / cx.cp / G * cap;  // one expert's rows from one peer, at most
    const int64_t per_layer = cap > 0 ? (ep - 1) * (El + El * slot_rows * c.expert_in_dim()) * 4 : (ep - 1) * El * 8;
    b.alltoall_fixed = per_layer * moe_layers * grad_accum;
  }
  b.context = context_micro_batch_bytes(c, local_batch, seq_len, cx) * grad_accum;
  return b;
}

double expected_alltoall_bytes(const ModelConfig& c, int64_t ep, int64_t tokens, double kept_frac) {
  const double rows = double(tokens) * double(c.top_k) * kept_frac * double(ep - 1) / double(ep);
  return 4.0 * rows * double(c.expert_in_dim()) * 4.0;
}

}  // namespace mt
