// memory.cpp — see memory.h. Activations come op by op from activations.h
// (Korthikanti et al. 2022 bookkeeping for this architecture, with MoE
// dispatch and capacity rows); this file sums them over a pipeline stage and
// the micro-batches it holds, adds the states and buffers, and applies the
// allocator overhead of the layout (allocator_overhead in layout.h).
#include "plan/memory.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/muon.h"
#include "model/transformer.h"
#include "plan/activations.h"

namespace mt::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kNcclPerGroup = 0.25 * kGiB;  // NCCL channel buffers per communicator in use
constexpr double kRuntime = 1.0 * kGiB;        // CUDA context, cuBLAS/cuDNN workspaces

// Expert rows per routed token on the busiest rank: capacity slots when
// capacity_factor > 0 (buffers are static), else K x imbalance.
double rows_per_token(const ModelConfig& c, const Parallel& p) {
  if (c.capacity_factor > 0) {
    const int64_t g = c.group_size(p.seq_len);
    return double(c.capacity(g) * c.n_experts) / double(g);
  }
  return double(c.top_k) * p.cfg.expert_imbalance;
}

}  // namespace

double cp_halo_bytes(const ModelConfig& c, const Parallel& p, int64_t window) {
  // The window - 1 rows before a chunk, for each of the micro-batch's sequences, as cp_kv_bytes counts a row.
  const double rows = double(p.micro_batch * (window - 1));
  if (c.mla()) return 2.0 * double(c.kv_lora_rank + c.qk_rope_head_dim) * rows;
  const double heads = double(std::max(c.n_kv_heads, p.tp));
  return 2.0 * heads * double(c.qk_head_dim() + c.v_dim()) * rows / double(p.tp);
}

double cp_kv_bytes(const ModelConfig& c, const Parallel& p) {
  // GQA: Hkv' = max(Hkv, t) heads of Dh for K and V, bf16, split by TP. MLA: the kv latent and the
  // RoPE key (Dc + Dr a token), from which each rank decompresses K and V itself (perf.cpp).
  if (c.mla()) return 2.0 * double(c.kv_lora_rank + c.qk_rope_head_dim) * double(p.local_tokens());
  const double heads = double(std::max(c.n_kv_heads, p.tp));
  return 2.0 * heads * double(c.qk_head_dim() + c.v_dim()) * double(p.local_tokens()) / double(p.tp);
}

std::pair<int64_t, int64_t> stage_layers(int64_t n_layers, int64_t pp, int64_t stage) {
  Parallel even;
  even.pp = pp;
  return stage_layers(even, n_layers, stage);
}

ActivationOptions activation_options(const ModelConfig& c, const Parallel& p) {
  ActivationOptions o;
  o.tp = p.tp;
  o.seq_len = p.seq_len;
  o.flash_attention = p.cfg.flash_attention;
  o.rows_per_token = c.n_experts > 0 ? rows_per_token(c, p) : 0.0;
  o.elem_bytes = 2.0;
  o.stat_bytes = 4.0;
  o.fp8_cache_bytes = p.cfg.fp8_activations ? 1.0 + 4.0 / 128.0 : 0.0;
  return o;
}

RecomputeMask layout_recompute_mask(const LayoutConfig& l) {
  RecomputeMask m = recompute_mask(l.recompute_modules);
  if (l.recompute == Recompute::kSelective) m |= RecomputeMask(ActModule::kCoreAttn);
  return m;
}

double layer_activation_bytes_per_token(const ModelConfig& c, int64_t l, const Parallel& p) {
  return activation_bytes_per_token(layer_activation_terms(c, l, activation_options(c, p)),
                                    layout_recompute_mask(p.cfg));
}

double in_flight_microbatches(const Parallel& p, int64_t stage) {
  const double m = double(p.microbatches), pp = double(p.pp), i = double(stage), v = double(p.v);
  if (p.pp == 1) return 1.0;
  switch (p.cfg.schedule) {
    case PipeSchedule::kGpipe: return m;
    case PipeSchedule::k1F1B:
    case PipeSchedule::kZeroBubble: return std::min(m, pp - i);
    case PipeSchedule::kInterleaved: {
      // Megatron: warm-up chunks = 2 (p - i - 1) + (v - 1) p, plus the one in flight; a chunk is 1/v of the stage.
      const double chunks = std::min(m * v, 2 * (pp - i - 1) + (v - 1) * pp + 1);
      return chunks / v;
    }
    case PipeSchedule::kDualPipe: return std::min(2 * m, pp + 1);  // DeepSeek-V3 report, Table 2
  }
  return 1.0;
}

double MemoryBreakdown::total() const {
  return parameters + gradients + optimizer_state + optimizer_workspace + master_weights + activations + comm_buffers +
         moe_capacity_buffers + runtime + fragmentation;
}

std::vector<MemoryItem> MemoryBreakdown::items() const {
  std::vector<MemoryItem> v = {{"parameters", "parameters", parameters},
                               {"gradients", "gradients", gradients},
                               {"optimizer_state", "optimizer state", optimizer_state},
                               {"optimizer_workspace", "optimizer workspace (Muon)", optimizer_workspace},
                               {"master_weights", "master weights", master_weights},
                               {"activations", "activations", activations},
                               {"comm_buffers", "communication buffers", comm_buffers},
                               {"moe_capacity_buffers", "MoE capacity buffers", moe_capacity_buffers},
                               {"runtime", "runtime, GEMM workspace", runtime},
                               {"fragmentation", "allocator overhead", fragmentation}};
  // Only Muon has a workspace: other layouts keep the items they always had.
  if (optimizer_workspace == 0) v.erase(v.begin() + 3);
  return v;
}

namespace {

// The hidden matrices of one layer that Muon updates (optim/optimizer.h): every 2-D weight but the
// router; embedding, head and norms stay with AdamW.
int64_t muon_layer_params(const LayerParams& l) {
  return l.attn + l.attn_down + l.dense_ffn + l.shared + l.latent + l.experts;
}

}  // namespace

int64_t muon_params(const ModelConfig& c, const ModelStats& s) {
  int64_t n = 0;
  for (const LayerParams& l : s.layers) n += muon_layer_params(l);
  // Each multi-token-prediction module: its block and its (D, 2D) projection.
  n += c.mtp_depth * (muon_layer_params(s.mtp_block) + 2 * c.d_model * c.d_model);
  return n;
}

int64_t muon_scratch_floats(const ModelConfig& c) {
  const int64_t D = c.d_model, Dh = c.head_dim(), H = c.n_heads;
  int64_t most = newton_schulz_scratch(H * Dh, D);  // wq, wo
  for (int64_t l = 0; l < c.n_layers; ++l) {
    most = std::max(most, newton_schulz_scratch(c.kv_heads(l) * Dh, D));
    if (!c.is_moe(l)) {
      most = std::max(most, newton_schulz_scratch(c.d_ff, D));
      continue;
    }
    most = std::max(most, newton_schulz_scratch(c.d_expert, c.expert_in_dim()));
    if (c.n_shared_experts > 0) most = std::max(most, newton_schulz_scratch(c.d_expert, D));
    if (c.d_latent > 0) most = std::max(most, newton_schulz_scratch(c.d_latent, D));
  }
  if (c.mla()) {
    // W_DQ (Dq, D) or W_Q (H (Dn + Dr), D); W_DKV with the RoPE key (Dc + Dr, D); W_UQ (H (Dn + Dr), Dq);
    // W_UK / W_UV (H Dn | H Dv, Dc); W_O (D, H Dv).
    const int64_t qk = H * c.qk_head_dim();
    if (c.q_lora_rank > 0) most = std::max({most, newton_schulz_scratch(c.q_lora_rank, D),
                                            newton_schulz_scratch(qk, c.q_lora_rank)});
    else most = std::max(most, newton_schulz_scratch(qk, D));
    most = std::max({most, newton_schulz_scratch(c.kv_lora_rank + c.qk_rope_head_dim, D),
                     newton_schulz_scratch(H * c.qk_nope_head_dim, c.kv_lora_rank),
                     newton_schulz_scratch(H * c.v_head_dim, c.kv_lora_rank), newton_schulz_scratch(D, H * c.v_head_dim)});
  }
  if (c.mtp_depth > 0) most = std::max(most, newton_schulz_scratch(D, 2 * D));
  return most;
}

namespace {

// MoE blocks with an aux-free router bias in the trainer: the layers', then one per MTP module on an MoE
// last layer (Transformer::n_moe_layers).
int64_t cpu_router_blocks(const ModelConfig& c, const ModelStats& s) {
  return s.moe_layers + (c.is_moe(c.n_layers - 1) ? c.mtp_depth : 0);
}

MemoryBreakdown cpu_memory(const ModelConfig& c, const ModelStats& s, const Parallel& p, const ClusterConfig& cl) {
  // What train/trainer.cpp allocates: fp32 params and grads, the optimizer's
  // state (AdamW m and v; Muon: one momentum for its matrices, m and v for
  // the rest, and in one process the exchange buffers of every Muon matrix:
  // this rank's pieces, the received copy, the whole matrices, plus the
  // Newton-Schulz scratch), router biases, the token batch, and the
  // Transformer's buffers.
  MemoryBreakdown m;
  // With several processes (parallel.cp) FSDP shards the training state over them; the layer
  // buffers it gathers into are not counted.
  const double n = double(s.total) / double(p.gpus);
  // bf16 (train.precision = "bf16"): fp32 master weights plus the GEMMs' bf16 shadow of them.
  m.parameters = 4 * n + (p.cfg.params == Precision::kBf16 ? 2 * n : 0.0);
  // The GEMM library's workspace ("runtime, GEMM workspace": on a GPU the CUDA context): one process reads its weights
  // in place and keeps them packed for the products (train.pack_weights, on by default; kernels/cpu/gemm.h): a copy per
  // layout read, the forward's W^T and the input gradient's W, in the form the products read (none where bf16
  // multiplies rounded fp32 copies). Every parameter but an untied embedding (a lookup) and the norms (a few per layer,
  // left in) is a product's weight.
  const MatmulPrecision prec = p.cfg.params == Precision::kBf16 ? MatmulPrecision::kBf16 : MatmulPrecision::kFp32;
  if (p.gpus == 1) {
    const OperandForm f = operand_form(prec);
    const double elt = f == OperandForm::kFp32 ? 4.0 : f == OperandForm::kBf16 ? 2.0 : 0.0;
    m.runtime = 2.0 * elt * double(s.total - (s.head > 0 ? s.embed : 0));
  }
  m.gradients = 4 * n;
  const double muon = p.cfg.optimizer == OptimizerKind::kMuon ? double(muon_params(c, s)) : 0.0;
  const double mb = p.cfg.moments == Precision::kBf16 ? 2.0 : 4.0;  // optim.state_precision
  m.optimizer_state =
      2 * mb * n - mb * muon + (c.aux_free_bias ? 4.0 * double(cpu_router_blocks(c, s) * c.n_experts) : 0.0);
  if (muon > 0) m.optimizer_workspace = 4.0 * (3.0 * muon + double(muon_scratch_floats(c)));
  // The CPU trainer keeps every layer's activations, or (train.activation_checkpointing)
  // only layer inputs, recomputing each layer's forward: "full"; it has nothing selective.
  // bf16: the GEMM-only activations in the form this CPU's bf16 matmul reads.
  // Context parallelism (dist.cp): each rank's rows of the sequences, and the whole sequence's K, V for the exchange.
  const double keep =
      double(Transformer::activation_bytes(c, p.micro_batch, p.seq_len, prec, LayerActivations::kKeep, p.cp));
  m.activations_by_recompute[size_t(Recompute::kNone)] = keep;
  m.activations_by_recompute[size_t(Recompute::kSelective)] = keep;
  m.activations_by_recompute[size_t(Recompute::kFull)] =
      double(Transformer::activation_bytes(c, p.micro_batch, p.seq_len, prec, LayerActivations::kRecompute, p.cp));
  m.activations = m.activations_by_recompute[size_t(p.cfg.recompute)];
  m.comm_buffers = 4.0 * double(p.micro_batch * (p.seq_len + 1 + c.mtp_depth));  // token batch, MTP targets included
  m.layers_in_stage = c.n_layers;
  m.capacity = cl.device.hbm_gib * kGiB;
  return m;
}

}  // namespace

StageParams stage_params(const ModelConfig& c, const ModelStats& s, const Parallel& p, int64_t stage) {
  StageParams sp;
  const double t = double(p.tp);
  auto [first, count] = stage_layers(p, c.n_layers, stage);
  for (int64_t l = first; l < first + count; ++l) {
    const LayerParams& lp = s.layers[size_t(l)];
    const double dense = double(lp.attn + lp.dense_ffn + lp.shared) / t +
                         double(lp.attn_down + lp.norms + lp.router + lp.latent);
    const double experts = double(lp.experts) / double(p.ep);
    sp.dense += dense;
    sp.experts += experts;
    sp.largest_layer = std::max(sp.largest_layer, dense + experts);
  }
  if (stage == p.pp - 1 && c.mtp_depth > 0) {
    // Multi-token-prediction modules sit with the head they share (DeepSeek-V3 2.2, 3.2.1): the block
    // split like the last layer, the (D, 2D) projection by tp, norms replicated.
    const LayerParams& b = s.mtp_block;
    const double dense = double(b.attn + b.dense_ffn + b.shared + 2 * c.d_model * c.d_model) / t +
                         double(b.attn_down + b.norms + b.router + b.latent + 3 * c.d_model);
    const double experts = double(b.experts) / double(p.ep);
    sp.dense += double(c.mtp_depth) * dense;
    sp.experts += double(c.mtp_depth) * experts;
    sp.largest_layer = std::max(sp.largest_layer, dense + experts);
  }
  if (stage == 0) sp.dense += double(s.embed) / t;
  if (stage == p.pp - 1) {
    sp.dense += double(s.final_norm);
    // Tied embeddings: the last stage keeps its own copy of the matrix as the head.
    if (s.head > 0) sp.dense += double(s.head) / t;
    else if (p.pp > 1) sp.dense += double(s.embed) / t;
  }
  return sp;
}

namespace {

// The Muon part of a stage's parameters (stage_params' split and TP/EP division).
StageParams muon_stage_params(const ModelConfig& c, const ModelStats& s, const Parallel& p, int64_t stage) {
  StageParams mu;
  auto add = [&](const LayerParams& lp, double extra_tp_split, double times) {
    mu.dense += times * (double(lp.attn + lp.dense_ffn + lp.shared) + extra_tp_split) / double(p.tp) +
                times * double(lp.attn_down + lp.latent);
    mu.experts += times * double(lp.experts) / double(p.ep);
  };
  auto [first, count] = stage_layers(p, int64_t(s.layers.size()), stage);
  for (int64_t l = first; l < first + count; ++l) add(s.layers[size_t(l)], 0.0, 1.0);
  // The MTP modules sit on the last stage (stage_params); their (D, 2D) projections are split by tp.
  if (stage == p.pp - 1 && c.mtp_depth > 0)
    add(s.mtp_block, 2.0 * double(c.d_model) * double(c.d_model), double(c.mtp_depth));
  return mu;
}

// Moves what the layout offloads from the GPU's items into `offloaded` and sets the tier's share per GPU.
// Optimizer offload (ZeRO-Offload): master weights and moments; the Muon exchange runs on the host too.
// Weight streaming (ZeRO-Infinity, MemoryX): everything; the GPU keeps one buffer of the largest layer's
// weights per layer in flight (the computing one and prefetch_layers ahead, gathered over ZeRO-3 ranks
// when sharded) and two of its gradients (one filling, one draining to the store).
// `root`: the stage's embedding or head share, streamed like a layer (the larger of the two sizes the buffers).
void offload_state(MemoryBreakdown& m, const LayoutConfig& L, const ClusterConfig& cl, double wbytes, double gbytes,
                   double root, const StageParams& sp, const StageParams& sp2, bool dual) {
  if (L.offload == Offload::kNone) return;
  m.offloaded = m.master_weights + m.optimizer_state + m.optimizer_workspace;
  m.master_weights = m.optimizer_state = m.optimizer_workspace = 0;
  if (L.offload == Offload::kParams) {
    m.offloaded += m.parameters + m.gradients;
    const double layer = std::max({sp.largest_layer, dual ? sp2.largest_layer : 0.0, root});
    m.parameters = wbytes * double(L.prefetch_layers + 1) * layer;
    m.gradients = 2.0 * gbytes * layer;
  }
  const double per_node = L.offload == Offload::kParams && L.offload_tier == OffloadTier::kNvme
                              ? cl.nvme_tib * 1024.0 * kGiB
                              : cl.host_memory_gib * kGiB;
  m.offload_capacity = per_node / double(cl.device.gpus_per_node);
}

MemoryBreakdown gpu_stage_memory(const ModelConfig& c, const ModelStats& s, const Parallel& p,
                                 const ClusterConfig& cl, int64_t stage) {
  const LayoutConfig& L = p.cfg;
  MemoryBreakdown m;
  m.stage = stage;
  m.capacity = cl.device.hbm_gib * kGiB;
  const StageParams sp = stage_params(c, s, p, stage);
  // ZeRO shards over every rank holding the same weights: dp x cp (context-parallel ranks replicate them).
  const double dp = double(p.grad_replicas()), edp = double(p.edp);
  // DualPipe (DeepSeek-V3 report, 2024): rank i runs stage i of one direction and stage pp-1-i of the
  // other, so it holds both stages' weights and accumulates both stages' gradients; the two holders of a
  // stage split its optimizer update, so master weights and moments count once (the mean of the two).
  const bool dual = L.schedule == PipeSchedule::kDualPipe && p.pp > 1;
  const StageParams sp2 = dual ? stage_params(c, s, p, p.pp - 1 - stage) : StageParams{};
  auto sharded = [&](int64_t min_stage, const StageParams& x) {
    return L.zero_stage >= min_stage ? x.dense / dp + x.experts / edp : x.dense + x.experts;
  };
  auto held = [&](int64_t min_stage) { return sharded(min_stage, sp) + (dual ? sharded(min_stage, sp2) : 0.0); };
  auto updated = [&](int64_t min_stage) { return dual ? held(min_stage) / 2.0 : held(min_stage); };
  const double wbytes = L.params == Precision::kBf16 ? 2.0 : 4.0;
  const double gbytes = L.grads == Precision::kBf16 ? 2.0 : 4.0;
  m.parameters = wbytes * held(3);
  // FSDP without reshard-after-forward (Zhao et al. 2023, "PyTorch FSDP", SHARD_GRAD_OP): the whole stage's
  // weights stay gathered from forward to backward, on top of the shards.
  if (L.zero_stage >= 3 && !L.reshard_after_forward) m.parameters += wbytes * held(/*never sharded*/ 4);
  // Sharded gradients (ZeRO-3, ZeRO-2 by default) are reduce-scattered every micro-batch (perf.cpp), so
  // only the shard persists; ZeRO-2 with a full buffer keeps every gradient until the step's one reduction.
  m.gradients = gbytes * held(gradients_sharded(L) ? 2 : /*never sharded*/ 4);
  m.master_weights = L.params == Precision::kBf16 ? 4.0 * updated(1) : 0.0;
  const double mb = L.moments == Precision::kBf16 ? 2.0 : 4.0;
  m.optimizer_state = 2.0 * mb * updated(1);
  if (L.optimizer == OptimizerKind::kMuon) {
    // Muon keeps one moment for its matrices (AdamW's two for the embedding,
    // head, norms and router) and, ZeRO-sharded, gathers each whole matrix to
    // one rank: its pieces out (send), its share of whole matrices in (receive
    // buffer and copy), and the Newton-Schulz scratch of the largest matrix.
    const double muon_updated =
        dual ? (sharded(1, muon_stage_params(c, s, p, stage)) + sharded(1, muon_stage_params(c, s, p, p.pp - 1 - stage))) / 2.0
             : sharded(1, muon_stage_params(c, s, p, stage));
    m.optimizer_state -= mb * muon_updated;
    m.optimizer_workspace = 4.0 * (3.0 * muon_updated + double(muon_scratch_floats(c)));
  }
  const double root = std::max(stage == 0 || (dual && stage == p.pp - 1) ? double(s.embed) / double(p.tp) : 0.0,
                               stage == p.pp - 1 || (dual && stage == 0)
                                   ? double(s.head > 0 ? s.head : s.embed) / double(p.tp) : 0.0);
  offload_state(m, L, cl, wbytes, gbytes, root, sp, sp2, dual);

  // Activations.
  auto [first, count] = stage_layers(p, c.n_layers, stage);
  m.layers_in_stage = count;
  const double tokens = double(p.local_tokens());  // context parallelism: 1/cp of each sequence per GPU
  m.in_flight = in_flight_microbatches(p, stage);
  const ActivationOptions ao = activation_options(c, p);
  const RecomputeMask modules = recompute_mask(L.recompute_modules);
  const RecomputeMask sel_mask = modules | RecomputeMask(ActModule::kCoreAttn);
  const RecomputeMask chosen = layout_recompute_mask(L);
  double per_mb_none = 0, per_mb_sel = 0, largest_layer = 0, inputs = 0;
  std::vector<MemoryItem> ops;  // per op, summed over the stage's layers, one micro-batch
  // The stage's layers, then on the last stage the multi-token-prediction modules (DeepSeek-V3 2.2).
  std::vector<std::vector<ActTerm>> blocks;
  for (int64_t l = first; l < first + count; ++l) blocks.push_back(layer_activation_terms(c, l, ao));
  if (stage == p.pp - 1)
    for (int64_t d = 0; d < c.mtp_depth; ++d) blocks.push_back(mtp_module_terms(c, ao));
  for (const std::vector<ActTerm>& terms : blocks) {
    const double b = activation_bytes_per_token(terms, modules) * tokens;
    per_mb_none += b;
    per_mb_sel += activation_bytes_per_token(terms, sel_mask) * tokens;
    largest_layer = std::max(largest_layer, activation_bytes_per_token(terms, kRecomputeNothing) * tokens);
    inputs += layer_input_bytes_per_token(c, ao) * tokens;  // layer input kept under full recompute
    for (const ActTerm& t : terms) {
      const double bytes = (t.modules & chosen) != 0 ? 0.0 : t.bytes_per_token * tokens;
      auto it = std::find_if(ops.begin(), ops.end(), [&](const MemoryItem& x) { return x.key == t.op; });
      if (it == ops.end()) ops.push_back({t.op, t.op, bytes});
      else it->bytes += bytes;
    }
  }
  double head = 0;
  if (stage == p.pp - 1)  // final norm in/out and fp32 logits for the loss; again for each MTP module's head
    head = double(1 + c.mtp_depth) * (4.0 * double(c.d_model) + 4.0 + 4.0 * double(c.vocab_size)) /
           double(p.tp) * tokens;
  // The last stage runs the head's backward right after its forward, except under GPipe.
  const double head_part =
      head * (L.schedule == PipeSchedule::kGpipe && p.pp > 1 ? double(p.microbatches) : 1.0);
  m.activations_by_recompute[size_t(Recompute::kNone)] = per_mb_none * m.in_flight + head_part;
  m.activations_by_recompute[size_t(Recompute::kSelective)] = per_mb_sel * m.in_flight + head_part;
  // Full: layer inputs of every micro-batch in flight, plus one layer's activations while it is recomputed.
  m.activations_by_recompute[size_t(Recompute::kFull)] = inputs * m.in_flight + largest_layer + head_part;
  m.activations = m.activations_by_recompute[size_t(L.recompute)];
  // Per op under the chosen recomputation (full recomputation keeps only the layer inputs).
  if (L.recompute == Recompute::kFull) ops = {{"layer.input", "layer.input", inputs}};
  for (MemoryItem& op : ops) op.bytes *= m.in_flight;
  if (head_part > 0) ops.push_back({"head.logits", "head.logits", head_part});
  m.activation_ops = std::move(ops);

  // Communication buffers.
  int64_t groups = 0;
  for (int64_t g : {p.tp, p.cp, p.pp, p.dp}) groups += g > 1 ? 1 : 0;
  if (c.n_experts > 0)
    for (int64_t g : {p.ep, p.edp}) groups += g > 1 ? 1 : 0;
  m.comm_buffers = kNcclPerGroup * double(groups);
  // Gathered layer + prefetch, full-size gradient buckets (streaming: its own layer buffers, counted above).
  if (L.zero_stage >= 3 && L.offload != Offload::kParams) m.comm_buffers += 2.0 * wbytes * sp.largest_layer;
  if (gradients_sharded(L) && L.offload != Offload::kParams) m.comm_buffers += 2.0 * gbytes * sp.largest_layer;
  if (p.tp > 1) m.comm_buffers += 2.0 * 2.0 * double(c.d_model) * tokens;   // sequence-parallel all-gather
  if (p.pp > 1) m.comm_buffers += 2.0 * 2.0 * double(c.d_model) * tokens / double(p.tp);  // p2p send + recv
  if (p.cp > 1) m.comm_buffers += 2.0 * cp_kv_bytes(c, p);  // ring attention: the K/V block sent and the one received
  bool has_moe = false;
  for (int64_t l = first; l < first + count; ++l) has_moe |= c.is_moe(l);
  if (has_moe)  // dispatch send and receive buffers of one layer (combine reuses them)
    m.moe_capacity_buffers =
        2.0 * 2.0 * rows_per_token(c, p) * double(c.expert_in_dim()) * tokens / double(p.tp);
  m.runtime = kRuntime;
  m.fragmentation = allocator_overhead(L) * (m.activations + m.comm_buffers + m.moe_capacity_buffers);
  return m;
}

}  // namespace

MemoryBreakdown memory_per_gpu(const ModelConfig& c, const ModelStats& s, const Parallel& p,
                               const ClusterConfig& cl) {
  if (cl.device.kind == DeviceKind::kCpu) return cpu_memory(c, s, p, cl);
  MemoryBreakdown worst;
  for (int64_t st = 0; st < p.pp; ++st) {
    MemoryBreakdown m = gpu_stage_memory(c, s, p, cl, st);
    if (st == 0 || m.total() > worst.total()) worst = m;
  }
  return worst;
}

}  // namespace mt::plan
