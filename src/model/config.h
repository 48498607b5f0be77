// config.h — ModelConfig: every architectural switch of the decoder-only MoE
// transformer, and the declaration of its [model] keys (declare_keys) that
// every file holding a model reads through (core/config_schema.h).
// Dimension legend used across model/: B batch, T time, D model dim,
// H heads, Hkv kv heads, Dh head dim, F ffn dim, E experts, K top-k, V vocab,
// N = B*T tokens, Dl latent dim; MLA (DeepSeek-V2 section 2.1): Dq query
// latent (q_lora_rank), Dc kv latent (kv_lora_rank), Dn / Dr per-head
// non-RoPE / RoPE q-k dims, Dv per-head value dim; gated-delta ("D") layers:
// Hd heads, Dk / Dv per-head key / value dims, C chunk length.
#pragma once
#include <cstdint>
#include <string>

#include "core/config_schema.h"
#include "core/status.h"
#include "kernels/cpu/rope.h"

namespace mt {

enum class RouterScore { kSoftmax, kSigmoid };
// Which assignments an expert over capacity drops (Megatron-LM's
// --moe-token-drop-policy): probs the lowest router scores; position the
// last to arrive (docs/model.md, kernels/cpu/moe_dispatch.h).
enum class DropPolicy { kProbs, kPosition };
// gqa: grouped-query attention (n_kv_heads; MHA and MQA are its ends).
// mla: multi-head latent attention (DeepSeek-V2/V3): K and V decompressed from
// one cached latent per token (model/mla_block.h).
enum class AttentionKind { kGqa, kMla };

struct ModelConfig {
  int64_t vocab_size = 4096;      // V; byte tokenizer needs >= 259
  int64_t d_model = 128;          // D
  int64_t n_layers = 4;
  int64_t n_heads = 4;            // H (query heads)
  int64_t n_kv_heads = 1;         // Hkv on global ("G") layers
  int64_t n_kv_heads_local = 0;   // Hkv on local ("L") layers; 0 = same as n_kv_heads
  std::string layer_pattern = "G";  // repeated over depth; L = sliding window, G = global causal, D = gated delta
  int64_t window = 128;           // keys visible to a query on L layers (including itself)
  bool tied_embeddings = true;    // head shares the embedding matrix
  bool qk_norm = false;           // RMSNorm on q and k per head (weights of size Dh)
  double rope_theta = 10000.0;
  // Context extension (kernels/cpu/rope.h): none, linear (position
  // interpolation) or yarn, by rope_factor over rope_original_len positions.
  RopeScalingKind rope_scaling = RopeScalingKind::kNone;
  double rope_factor = 1.0;
  int64_t rope_original_len = 0;  // yarn: the context the model was trained at before
  double yarn_beta_fast = 32.0, yarn_beta_slow = 1.0;
  double yarn_attention_factor = 0.0;  // 0 = 0.1 ln(rope_factor) + 1
  double norm_eps = 1e-5;
  double init_std = 0.02;         // N(0, init_std^2); output projections scaled by 1/sqrt(2*n_layers)

  // Attention kind; the MLA sizes are read only when attention == kMla (DeepSeek-V3 values in brackets).
  AttentionKind attention = AttentionKind::kGqa;
  int64_t q_lora_rank = 0;        // Dq: query latent [1536]; 0 = queries projected from D directly
  int64_t kv_lora_rank = 0;       // Dc: cached KV latent [512]
  int64_t qk_nope_head_dim = 0;   // Dn: per-head q/k dims without RoPE [128]
  int64_t qk_rope_head_dim = 0;   // Dr: per-head q dims with RoPE; k's are one shared head [64]
  int64_t v_head_dim = 0;         // Dv: per-head value dim [128]

  // Gated-delta linear attention on "D" layers (Gated DeltaNet, Yang, Kautz & Hatamizadeh, ICLR 2025;
  // docs/architecture.md): a (Dv, Dk) state per head instead of a KV cache. Read only when the
  // pattern holds a 'D'.
  int64_t delta_heads = 0;        // Hd; 0 = n_heads
  int64_t delta_key_dim = 0;      // Dk per head (q and k); 0 = head_dim()
  int64_t delta_value_dim = 0;    // Dv per head (v, output gate); 0 = head_dim()
  int64_t delta_chunk = 64;       // C: steps per chunk of the training kernel (cost O(T C d + T d^2))

  // Multi-token prediction (DeepSeek-V3 section 2.2): mtp_depth sequential modules, module k predicting
  // token i + 1 + k; each has RMSNorms on the hidden state and the next token's embedding, a (D, 2D)
  // projection, one transformer block like the last layer and an RMSNorm before the shared output head
  // (model/mtp.h). The weight lambda is piecewise constant in tokens seen (mtp_loss_weight_at).
  int64_t mtp_depth = 0;          // D_mtp modules; 0 = off
  double mtp_loss_weight = 0.3;   // lambda before the switch (DeepSeek-V3: 0.3 for the first 10T tokens)
  double mtp_loss_weight_late = 0.1;        // lambda from the switch on (DeepSeek-V3: 0.1)
  int64_t mtp_loss_weight_switch_tokens = 0;  // training tokens before the switch; 0 = never switch

  // Dense FFN (SwiGLU). Used when n_experts == 0 and for the first n_dense_layers.
  int64_t d_ff = 512;             // F

  // Mixture of experts.
  int64_t n_experts = 0;          // E; 0 = dense model
  int64_t top_k = 2;              // K
  int64_t d_expert = 256;         // hidden size of each routed and shared expert
  int64_t n_shared_experts = 0;   // always-on experts (in d_model space)
  int64_t n_dense_layers = 0;     // first layers use the dense FFN
  RouterScore router_score = RouterScore::kSoftmax;
  bool router_renormalize = true; // gates of the chosen K experts sum to 1
  // Benchmarks only (Megatron-LM's --moe-router-force-load-balancing): route
  // on counter-based uniform random logits instead of the router's, so every
  // expert gets its share of tokens from the first step; the router's
  // products still run and it gets no gradient (moe_block.cpp).
  bool router_force_balance = false;
  double capacity_factor = 0.0;   // > 0: ceil(cf * G * K / E) slots per expert per group; 0 = dropless
  int64_t routing_group = 0;      // G tokens per routing group; 0 = one sequence
  DropPolicy drop_policy = DropPolicy::kProbs;  // read only with capacity_factor > 0
  double aux_loss_coef = 0.01;    // Switch load-balancing loss weight (mean over MoE layers)
  double z_loss_coef = 0.001;     // router z-loss weight (mean over MoE layers)
  bool aux_free_bias = false;     // DeepSeek-V3 bias balancing of the selection scores
  double bias_update_rate = 0.001;
  // Group-limited routing (DeepSeek-V2 2.2 device-limited, DeepSeek-V3 2.1.2 node-limited): the routed
  // experts form expert_groups contiguous groups; each token picks the max_groups_per_token groups with
  // the highest sums of their top K/M scores and its top-K experts among them. DeepSeek-V3: 8 groups (its
  // 8 EP nodes), 4 per token. The planner models its all-to-all; the CPU trainer does not implement it yet.
  int64_t expert_groups = 0;        // G; 0 = one group
  int64_t max_groups_per_token = 0; // M; 0 = unlimited
  int64_t d_latent = 0;           // Dl > 0: latent MoE (down-proj, RMSNorm, experts in Dl, up-proj)
  bool moe_out_norm = false;      // RMSNorm on the MoE block output

  // Derived helpers.
  // Blocks the parameter provider walks: the n_layers layers, then one per MTP module. Unit u >= n_layers
  // is built like the last layer (DeepSeek-V3 2.2), so the per-layer queries below map it there.
  int64_t n_units() const { return n_layers + mtp_depth; }
  int64_t arch_layer(int64_t unit) const { return unit < n_layers ? unit : n_layers - 1; }
  int64_t head_dim() const { return d_model / n_heads; }
  bool mla() const { return attention == AttentionKind::kMla; }
  // Per-head width of q and k (scores) and of v (values): Dh for GQA, Dn + Dr and Dv for MLA.
  int64_t qk_head_dim() const { return mla() ? qk_nope_head_dim + qk_rope_head_dim : head_dim(); }
  int64_t v_dim() const { return mla() ? v_head_dim : head_dim(); }
  // Dims RoPE rotates per head: Dh for GQA, MLA's decoupled Dr.
  int64_t rope_dim() const { return mla() ? qk_rope_head_dim : head_dim(); }
  RopeParams rope_params() const {
    return RopeParams{rope_theta,     rope_scaling,   rope_factor,          rope_original_len,
                      yarn_beta_fast, yarn_beta_slow, yarn_attention_factor};
  }
  int64_t kv_heads(int64_t layer) const {
    return is_local(layer) && n_kv_heads_local > 0 ? n_kv_heads_local : n_kv_heads;
  }
  bool is_local(int64_t layer) const {
    return layer_pattern[size_t(arch_layer(layer)) % layer_pattern.size()] == 'L';
  }
  // Gated-delta layer (pattern letter 'D'); an MTP unit answers as the last layer (arch_layer).
  bool is_delta(int64_t layer) const {
    return layer_pattern[size_t(arch_layer(layer)) % layer_pattern.size()] == 'D';
  }
  bool has_delta() const { return layer_pattern.find('D') != std::string::npos; }
  int64_t delta_h() const { return delta_heads > 0 ? delta_heads : n_heads; }
  int64_t delta_dk() const { return delta_key_dim > 0 ? delta_key_dim : head_dim(); }
  int64_t delta_dv() const { return delta_value_dim > 0 ? delta_value_dim : head_dim(); }
  bool is_moe(int64_t layer) const { return n_experts > 0 && arch_layer(layer) >= n_dense_layers; }
  int64_t expert_in_dim() const { return d_latent > 0 ? d_latent : d_model; }
  int64_t group_size(int64_t seq_len) const { return routing_group > 0 ? routing_group : seq_len; }
  // Slots per expert per routing group; 0 when dropless.
  int64_t capacity(int64_t group_tokens) const;

  // Cross-field checks (divisibility, ranges relative to other keys); each
  // error names the model.* key and where its value came from.
  Status validate(const ConfigOrigins& origins, int64_t seq_len) const;
};

// Declares every ModelConfig field as `table`.<field> (ranges that need no
// other key are checked by the schema).
void declare_keys(ConfigSchema& s, ModelConfig& m, const std::string& table = "model");

}  // namespace mt
