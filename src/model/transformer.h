// transformer.h — the whole decoder-only model: embedding, layers (attention
// + dense/MoE FFN), final RMSNorm, LM head with chunked cross-entropy, and the
// multi-token-prediction modules of training (model/mtp.h).
// Parameters and gradients are flat buffers laid out by layout(); this class
// owns only activations and scratch, sized once for (batch, seq_len).
// Legend: B batch, T time, N = B*T tokens, D model dim, V vocab, E experts.
#pragma once
#include <cstdint>
#include <vector>

#include "model/attention_block.h"
#include "model/config.h"
#include "model/delta_block.h"
#include "model/moe_block.h"
#include "model/mtp.h"
#include "model/parallel_hooks.h"
#include "model/param_layout.h"
#include "model/weights.h"
#include "kernels/cpu/distill_loss.h"
#include "kernels/cpu/policy_loss.h"

namespace mt {

// What a forward pass evaluates: the next-token loss alone from rows of T + 1
// tokens (evaluation; generation and export ignore the MTP modules too), or
// the training objective, MTP losses included, from rows of
// tokens_per_sequence() = T + 1 + mtp_depth tokens.
enum class Objective { kNextToken, kTraining };

struct ForwardStats {
  double loss = 0.0;      // mean cross-entropy over predicted tokens
  double aux_loss = 0.0;  // mean over MoE layers of the balancing loss (unweighted)
  double z_loss = 0.0;    // mean over MoE layers of the router z-loss (unweighted)
  double mtp_loss = 0.0;  // mean over the MTP modules of their cross-entropy (unweighted; as `loss` with replicas)
  double mtp_weight = 0.0;  // lambda it entered total_loss with
  double total_loss = 0.0;  // loss + aux_loss_coef * aux_loss + z_loss_coef * z_loss + mtp_weight * mtp_loss
  int64_t dropped = 0, assignments = 0;
  // (B) capacity drops by batch row of this call (this process's rows): the
  // assignments dropped from sequence b's tokens, summed over every MoE block,
  // the MTP modules' included. Sums to `dropped`; all zero when dropless.
  std::vector<int64_t> dropped_per_sequence;
  std::vector<std::vector<int64_t>> expert_load;  // per MoE layer, (E)
  // With document masking: keys attended, summed over this call's queries,
  // by one global and by one sliding-window attention layer (the FLOPs
  // counted; flops.h). Zero without document masking.
  int64_t keys_global = 0, keys_local = 0;
};

// Activation memory: keep every layer's activations from the forward for the
// backward, or keep only each layer's input (the residual stream) and
// recompute the layer's forward just before its backward (activation
// checkpointing at layer granularity), with the layers of one shape sharing
// one set of buffers. Kernels are deterministic, so the recomputed
// activations, and hence the gradients, are bit-identical to kept ones.
enum class LayerActivations { kKeep, kRecompute };

// Reinforcement learning's objective in place of the main head's next-token
// cross-entropy (kernels/cpu/policy_loss.h; train/rl_feed.h): per predicted
// position n of the call's B x T rows (row-major by sequence, as
// token_losses()), the token's aggregation weight, its advantage, the
// log-probability under the policy that sampled it (null: the current one)
// and under the frozen reference (null: no KL term). The loss is
// sum_n weights[n] L_n, so weights that sum to 1 over the global batch give
// each data-parallel replica its share of it. Positions whose target is
// flagged no-loss contribute nothing. MTP modules keep their cross-entropy.
// With teacher_logp set, the objective is distillation instead
// (kernels/cpu/distill_loss.h): per position the divergence between the
// model's distribution and the teacher's log-probabilities (N, V), weighted
// the same way; advantages and the log-probabilities are not read, and
// stats[n].kl holds position n's divergence.
struct PolicyObjective {
  const float* weights = nullptr;
  const float* advantages = nullptr;
  const float* old_logp = nullptr;
  const float* ref_logp = nullptr;
  PolicyLossParams params;
  PolicyTokenStats* stats = nullptr;  // (N) out: log-prob, entropy, KL, clipped per position
  const float* teacher_logp = nullptr;  // (N, V): distillation toward it
  DistillDivergence divergence = DistillDivergence::kReverseKl;
};

class Transformer {
 public:
  // cx (dist.cp): this process computes its positions (cx->positions()) of
  // each sequence of seq_len tokens, the other ranks' keys and values
  // reaching attention through cx; null: whole sequences.
  Transformer(const ModelConfig& c, int64_t batch, int64_t seq_len, MatmulPrecision prec,
              LayerActivations acts = LayerActivations::kKeep, ContextExchange* cx = nullptr);

  const ModelConfig& config() const { return c_; }
  const ParamLayout& layout() const { return layout_; }
  const ModelOffsets& offsets() const { return off_; }
  int64_t batch() const { return B_; }
  int64_t seq_len() const { return T_seq_; }
  // Tokens of each sequence this process computes: seq_len / cp with context parallelism.
  int64_t rows() const { return T_; }
  // MoE blocks, those of the MTP modules included (their router losses,
  // expert loads and aux-free biases follow the layers').
  int64_t n_moe_layers() const;
  // Tokens per sequence of the training objective: T + 1 + mtp_depth.
  int64_t tokens_per_sequence() const { return T_seq_ + 1 + c_.mtp_depth; }
  // lambda of the MTP loss from now on (mtp_loss_weight_at; initially model.mtp_loss_weight).
  void set_mtp_loss_weight(double lambda) { mtp_weight_ = lambda; }
  // Router loss weights from now on (initially model.aux_loss_coef, z_loss_coef; a training phase may change them).
  void set_router_loss_coefs(double aux, double z) {
    c_.aux_loss_coef = aux;
    c_.z_loss_coef = z;
  }
  // The attention kernel of every layer from now on (train.attention_kernel;
  // initially kAuto).
  void set_attention_kernel(AttentionKernel k) { ctx_.attention = k; }
  // Document masking from now on (train.document_mask): in a row packed with
  // documents, the token after each `separator` (the data's end-of-document
  // id) starts a new document, which attention and gated-delta layers do
  // not look past. -1 (the default): a row is one sequence.
  void set_document_separator(int32_t separator) { doc_sep_ = separator; }
  int32_t document_separator() const { return doc_sep_; }
  // (B, T) document starts of the last forward's rows, or null when no row
  // held a document start past its first token (or without masking).
  const int32_t* document_starts() const { return ctx_.doc_start; }

  // The policy objective of forward_backward from now on (null: the
  // cross-entropy); it must outlive the calls. forward() ignores it.
  void set_policy_objective(const PolicyObjective* p) { policy_ = p; }

  // Bytes of every activation and scratch buffer this object holds (measured
  // from the buffers themselves).
  int64_t activation_bytes() const;
  // The same figure for (config, batch, seq_len) without allocating anything:
  // the sizing pass of the constructor run in count-only mode. `moetrain plan`
  // uses it, so its CPU activation figure equals the trainer's allocation.
  // `prec` matters through the GemmActivations, whose form it sets.
  // cp: context-parallel ranks (each holds seq_len / cp tokens of a sequence).
  static int64_t activation_bytes(const ModelConfig& c, int64_t batch, int64_t seq_len,
                                  MatmulPrecision prec = MatmulPrecision::kFp32,
                                  LayerActivations acts = LayerActivations::kKeep, int64_t cp = 1);
  // Switches between keeping and recomputing layer activations (frees and
  // re-sizes the buffers; the layout is unchanged).
  void set_layer_activations(LayerActivations acts);
  LayerActivations layer_activations() const { return acts_; }

  // tokens: B sequences of tokens_per_sequence() ids (inputs are [0, T),
  // targets [1, T], MTP module k's targets [1 + k, T + k]); an id flagged
  // with kNoLossBit (core/token_flags.h) is no target, and the mean losses
  // are over the targets left.
  // Accumulates grad_scale * d(total_loss)/d(params) into grads.
  // router_bias: per layer E floats (aux-loss-free balancing), or null.
  ForwardStats forward_backward(const float* params, float* grads, const int32_t* tokens,
                                float grad_scale, const float* router_bias);
  // The same with parameters supplied unit by unit and routed rows sent
  // through pp's dispatcher (dist/: FSDP, EP). With data-parallel replicas,
  // `loss` is this replica's share of the global mean (shares sum to it) and
  // gradients are this replica's share of the global gradient; aux_loss and
  // z_loss stay this replica's means. FlatParams gives the call above.
  ForwardStats forward_backward(ParamProvider& pp, const int32_t* tokens, float grad_scale,
                                const float* router_bias);

  // Hash of every routing decision of the last forward (chosen experts and
  // slots, drops included): tests use it to keep finite-difference
  // perturbations below the score gap.
  uint64_t routing_hash() const;

  // Loss only; no gradients. kNextToken (evaluation): rows of T + 1 tokens.
  ForwardStats forward(const float* params, const int32_t* tokens, const float* router_bias,
                       Objective obj = Objective::kNextToken);
  ForwardStats forward(ParamProvider& pp, const int32_t* tokens, const float* router_bias,
                       Objective obj = Objective::kNextToken);
  // The cross-entropy of every predicted token (N = B x T, row-major by
  // sequence) of the last forward's next-token head: what `loss` averages.
  const std::vector<float>& token_losses() const { return losses_; }
  // Logits instead of the loss: logits_NV (B*T, V) of the next token after
  // every input position (tokens as above; the targets are not read). The
  // reference the incremental decoder (decoder.h) is tested against.
  void forward_logits(const float* params, const int32_t* tokens, const float* router_bias, float* logits_NV);
  void forward_logits(ParamProvider& pp, const int32_t* tokens, const float* router_bias, float* logits_NV);

 private:
  // Count-only construction for activation_bytes(c, batch, seq_len).
  Transformer(const ModelConfig& c, int64_t batch, int64_t seq_len, MatmulPrecision prec, LayerActivations acts,
              int64_t cp, BufferSizer& s);
  void size_buffers(BufferSizer& s);  // sizes (or counts) every buffer below
  void share_layer_buffers();         // act_of_: which layer's buffers each layer uses
  // The forward of layer l into its (possibly shared) buffers: attention or
  // gated-delta mixing, then the FFN into xs_[l + 1]; router stats into fs.
  void layer_forward(int64_t l, FfnStats& fs, const float* router_bias, int64_t moe_index);
  void run_forward(ForwardStats& st, ParamProvider& pp, Grads grads, const int32_t* tokens, int64_t stride,
                   const float* router_bias);
  // Shared head + cross-entropy of hf (N, D) against targets (or, given
  // `policy` and grads, the policy objective); with grads, the head's
  // gradient (+=) and dhf (=) of weight * the mean loss.
  double head_loss(ParamProvider& pp, Grads grads, float grad_scale, GemmInput hf, const int32_t* targets,
                   float* dhf, const PolicyObjective* policy = nullptr);
  // The MTP modules' forward after the main head (each runs the shared head).
  void run_mtp_forward(ForwardStats& st, ParamProvider& pp, Grads grads, const int32_t* tokens, float grad_scale,
                       const float* router_bias);
  void add_moe_stats(ForwardStats& st, FfnStats& fs, int64_t moe_layers);
  // doc_start_ from the rows of `tokens` (stride apart) and ctx_.doc_start
  // (null when no row holds a document start past its first token); the keys into st.
  void mark_documents(ForwardStats& st, const int32_t* tokens, int64_t stride);
  // The position in its sequence of row t (context parallelism), else t.
  int64_t position(int64_t t) const { return pos_.empty() ? t : pos_[size_t(t)]; }

  ModelConfig c_;
  int64_t B_, T_, N_;         // T_: rows of each sequence computed here
  int64_t T_seq_, cp_;        // the whole sequence's length; context-parallel ranks
  std::vector<int32_t> pos_;  // context parallelism: the positions of the T_ rows
  ContextBuffers cp_buf_;
  MatmulPrecision prec_;
  LayerActivations acts_ = LayerActivations::kKeep;
  std::vector<int64_t> act_of_;                  // per layer: the layer whose activation buffers it uses
  std::vector<int64_t> held_;                    // per layer: the layer whose activations its buffers hold now (-1)
  ParamLayout layout_;
  ModelOffsets off_;
  std::vector<float> rope_cos_, rope_sin_;
  std::vector<int32_t> inputs_, targets_;        // (N)
  int32_t doc_sep_ = -1;                         // document masking's separator id, or -1
  std::vector<int32_t> doc_start_;               // (N) with document masking
  std::vector<std::vector<float>> xs_;           // n_layers + 1 residual streams (N, D)
  std::vector<std::vector<float>> x_mid_;        // per layer (N, D)
  std::vector<AttnActs> attn_;                   // per layer; empty on D layers
  std::vector<DeltaActs> delta_;                 // per layer; empty unless a D layer
  std::vector<FfnActs> ffn_;
  GemmActivation hf_;                            // final norm output (N, D), read only by the head's GEMMs
  std::vector<float> rstd_f_;                    // (N)
  std::vector<float> logits_, losses_;           // (chunk, V), (N)
  GemmActivation dlogits_;  // (chunk, V): the loss's gradient in the head products' form (bf16 steps; else empty)
  std::vector<float> distill_entropy_;           // (chunk): the student's entropy per row under distillation
  std::vector<float> dres_, dhf_;                // (N, D)
  std::vector<MtpActs> mtp_;                     // mtp_depth modules
  double mtp_weight_ = 0.0;
  const PolicyObjective* policy_ = nullptr;      // set_policy_objective
  AttnScratch attn_scratch_;
  DeltaScratch delta_scratch_;
  FfnScratch ffn_scratch_;
  MtpScratch mtp_scratch_;
  BlockContext ctx_;
  RootParams root_;                              // from acquire_root until release_root
  IdentityDispatcher identity_experts_{0};       // when the provider has no dispatcher
};

// Rows of the LM head processed at once: logits never exceed kHeadChunk * V floats.
inline constexpr int64_t kHeadChunk = 512;

}  // namespace mt
