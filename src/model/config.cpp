// config.cpp — derived sizes, cross-field validation and the key declarations of ModelConfig.
#include "model/config.h"

#include <algorithm>
#include <cmath>

namespace mt {

int64_t ModelConfig::capacity(int64_t group_tokens) const {
  if (capacity_factor <= 0.0 || n_experts == 0) return 0;
  // More slots than the group's G*K assignments can never fill: the same
  // routing with smaller buffers (and no int64 overflow for huge factors).
  const double slots = std::ceil(capacity_factor * double(group_tokens) * double(top_k) / double(n_experts));
  return int64_t(std::min(slots, double(group_tokens) * double(top_k)));
}

Status ModelConfig::validate(const ConfigOrigins& o, int64_t seq_len) const {
  auto bad = [&](const char* key, const std::string& why) { return o.error(std::string("model.") + key, why); };
  if (rope_scaling == RopeScalingKind::kYarn) {
    if (rope_original_len <= 0)
      return bad("rope_original_len", "yarn needs the context length trained before the extension (> 0)");
    if (!(yarn_beta_fast > yarn_beta_slow))
      return bad("yarn_beta_fast", fmt::format("must be above model.yarn_beta_slow = {}", yarn_beta_slow));
    if (mla())
      return bad("rope_scaling",
                 "yarn with attention = \"mla\" is not built: its temperature would scale only the "
                 "decoupled RoPE dims (DeepSeek-V3 scales the softmax instead); use linear or none");
  }
  if (!mla()) {
    if (d_model % n_heads != 0) return bad("n_heads", fmt::format("must divide model.d_model = {}", d_model));
    if (head_dim() % 2 != 0) return bad("n_heads", "head dim d_model/n_heads must be even for RoPE");
    if (n_heads % n_kv_heads != 0) return bad("n_kv_heads", fmt::format("must divide model.n_heads = {}", n_heads));
    if (n_kv_heads_local > 0 && n_heads % n_kv_heads_local != 0)
      return bad("n_kv_heads_local", fmt::format("must be 0 or divide model.n_heads = {}", n_heads));
  } else {
    // MLA (DeepSeek-V2 section 2.1): every size but the query latent is required.
    for (auto [key, v] : {std::pair{"kv_lora_rank", kv_lora_rank}, std::pair{"qk_nope_head_dim", qk_nope_head_dim},
                          std::pair{"qk_rope_head_dim", qk_rope_head_dim}, std::pair{"v_head_dim", v_head_dim}})
      if (v <= 0) return bad(key, "must be > 0 with model.attention = \"mla\"");
    if (qk_rope_head_dim % 2 != 0)
      return bad("qk_rope_head_dim", fmt::format("must be even for RoPE, got {}", qk_rope_head_dim));
    // Every head reads the one cached latent: there are no kv heads to count (local layers included).
    if (n_kv_heads_local > 0)
      return bad("n_kv_heads_local", "must be 0 with model.attention = \"mla\" (its heads share one latent)");
    if (qk_norm) return bad("qk_norm", "must be false with model.attention = \"mla\" (it normalises its latents)");
  }
  if (layer_pattern.empty()) return bad("layer_pattern", "must not be empty");
  for (char c : layer_pattern)
    if (c != 'L' && c != 'G' && c != 'D') return bad("layer_pattern", "may only contain 'L', 'G' and 'D'");
  if (has_delta() && mla()) return bad("layer_pattern", "'D' (gated delta) layers need model.attention = \"gqa\"");
  // MTP blocks are built like the last layer (DeepSeek-V3 2.2) and are attention blocks (model/mtp.h).
  if (mtp_depth > 0 && is_delta(n_layers - 1))
    return bad("mtp_depth", "multi-token-prediction blocks are built like the last layer, which is a gated-delta "
                            "('D') layer here; end model.layer_pattern's last layer with 'L' or 'G'");
  if (max_groups_per_token > 0 && n_experts == 0)
    return bad("max_groups_per_token", "needs an MoE model (model.n_experts > 0)");
  if (n_experts > 0) {
    if (top_k > n_experts) return bad("top_k", fmt::format("must be <= model.n_experts = {}", n_experts));
    if (n_dense_layers > n_layers) return bad("n_dense_layers", fmt::format("must be <= model.n_layers = {}", n_layers));
    if (max_groups_per_token > 0) {
      if (expert_groups < 2) return bad("expert_groups", "must be >= 2 with model.max_groups_per_token > 0");
      if (n_experts % expert_groups != 0)
        return bad("expert_groups", fmt::format("must divide model.n_experts = {}", n_experts));
      if (max_groups_per_token > expert_groups)
        return bad("max_groups_per_token", fmt::format("must be <= model.expert_groups = {}", expert_groups));
      if (top_k > max_groups_per_token * (n_experts / expert_groups))
        return bad("max_groups_per_token", fmt::format("{} groups of {} experts hold fewer than model.top_k = {}",
                                                       max_groups_per_token, n_experts / expert_groups, top_k));
    }
    const int64_t g = group_size(seq_len);
    if (seq_len > 0 && g > 0 && (seq_len % g != 0 && g % seq_len != 0))
      return bad("routing_group", fmt::format("must divide seq_len = {} or be a multiple of it", seq_len));
  }
  return Status::ok();
}

void declare_keys(ConfigSchema& s, ModelConfig& m, const std::string& t) {
  const std::string p = t + ".";
  s.add(p + "vocab_size", &m.vocab_size, "V: vocabulary size (the byte tokenizer needs >= 259)").range(2, 2147483647).unit("tokens");
  s.add(p + "d_model", &m.d_model, "D: model (residual stream) width").range(2, 1 << 20);
  s.add(p + "n_layers", &m.n_layers, "transformer blocks").range(1, 1 << 14);
  s.add(p + "n_heads", &m.n_heads, "H: query heads (must divide d_model; head dim even)").range(1, 1 << 16);
  s.add(p + "n_kv_heads", &m.n_kv_heads, "Hkv on global (G) layers; must divide n_heads").range(1, 1 << 16);
  s.add(p + "n_kv_heads_local", &m.n_kv_heads_local, "Hkv on local (L) layers; 0 = same as n_kv_heads").range(0, 1 << 16);
  s.add(p + "layer_pattern", &m.layer_pattern,
        "repeated over depth: L = sliding window, G = global causal, D = gated delta (linear attention)");
  s.add(p + "window", &m.window, "keys visible to a query on L layers, itself included").range(1, int64_t(1) << 31).unit("tokens");
  s.add(p + "tied_embeddings", &m.tied_embeddings, "the LM head shares the embedding matrix");
  s.add(p + "qk_norm", &m.qk_norm, "RMSNorm on q and k per head");
  s.add(p + "rope_theta", &m.rope_theta, "RoPE base").above(0);
  s.add_enum(p + "rope_scaling", &m.rope_scaling, {"none", "linear", "yarn"},
             "RoPE for a context longer than trained: linear = position interpolation (Chen et al. 2023), yarn = "
             "NTK-by-parts interpolation with its attention temperature (Peng et al. 2023); docs/model.md");
  s.add(p + "rope_factor", &m.rope_factor, "context extension ratio s of rope_scaling (frequencies / s)").min(1);
  s.add(p + "rope_original_len", &m.rope_original_len, "yarn: the context length the model was trained at before")
      .range(0, int64_t(1) << 31)
      .unit("tokens");
  s.add(p + "yarn_beta_fast", &m.yarn_beta_fast,
        "yarn: pairs turning more times than this over rope_original_len "
        "are kept")
      .above(0);
  s.add(p + "yarn_beta_slow", &m.yarn_beta_slow, "yarn: pairs turning fewer times than this are interpolated").above(0);
  s.add(p + "yarn_attention_factor", &m.yarn_attention_factor, "yarn: factor on cos and sin (q.k by its square)")
      .min(0)
      .note("0 = 0.1 ln(rope_factor) + 1");
  s.add(p + "norm_eps", &m.norm_eps, "RMSNorm epsilon").above(0);
  s.add(p + "init_std", &m.init_std, "N(0, init_std^2) init; output projections scaled by 1/sqrt(2 n_layers)").above(0);
  s.add_enum(p + "attention", &m.attention, {"gqa", "mla"},
             "gqa: grouped-query attention; mla: multi-head latent attention (DeepSeek-V2/V3 "
             "section 2.1; docs/model.md)");
  s.add(p + "q_lora_rank", &m.q_lora_rank, "MLA: query latent width (DeepSeek-V3 1536)").range(0, 1 << 20)
      .note("0 = queries projected from d_model directly");
  s.add(p + "kv_lora_rank", &m.kv_lora_rank, "MLA: cached key/value latent width (DeepSeek-V3 512)").range(0, 1 << 20);
  s.add(p + "qk_nope_head_dim", &m.qk_nope_head_dim, "MLA: per-head q/k dims without RoPE (DeepSeek-V3 128)")
      .range(0, 1 << 16);
  s.add(p + "qk_rope_head_dim", &m.qk_rope_head_dim,
        "MLA: per-head q dims with RoPE; k's RoPE part is one head shared by all (DeepSeek-V3 64)").range(0, 1 << 16);
  s.add(p + "v_head_dim", &m.v_head_dim, "MLA: per-head value dim (DeepSeek-V3 128)").range(0, 1 << 16);
  s.add(p + "delta_heads", &m.delta_heads, "Hd: heads of the gated-delta (D) layers").range(0, 1 << 16)
      .note("0 = n_heads");
  s.add(p + "delta_key_dim", &m.delta_key_dim, "Dk: per-head q/k dim of D layers").range(0, 1 << 16)
      .note("0 = d_model / n_heads");
  s.add(p + "delta_value_dim", &m.delta_value_dim, "Dv: per-head value dim of D layers").range(0, 1 << 16)
      .note("0 = d_model / n_heads");
  s.add(p + "delta_chunk", &m.delta_chunk, "C: steps per chunk of the gated-delta training kernel").range(1, 4096)
      .unit("tokens");
  s.add(p + "mtp_depth", &m.mtp_depth,
        "multi-token prediction modules, each predicting one token further (DeepSeek-V3 2.2: 1); the data source "
        "supplies mtp_depth extra target tokens per sequence").range(0, 64).note("0 = off");
  s.add(p + "mtp_loss_weight", &m.mtp_loss_weight,
        "lambda: weight of the MTP modules' mean cross-entropy until mtp_loss_weight_switch_tokens (DeepSeek-V3: 0.3)")
      .min(0);
  s.add(p + "mtp_loss_weight_late", &m.mtp_loss_weight_late,
        "lambda from mtp_loss_weight_switch_tokens training tokens on (DeepSeek-V3: 0.1)").min(0);
  s.add(p + "mtp_loss_weight_switch_tokens", &m.mtp_loss_weight_switch_tokens,
        "training tokens after which mtp_loss_weight_late replaces mtp_loss_weight (DeepSeek-V3: 10T)")
      .min(0).unit("tokens").note("0 = never switch");
  s.add(p + "d_ff", &m.d_ff, "F: hidden size of the dense SwiGLU FFN").range(1, 1 << 24);
  s.add(p + "n_experts", &m.n_experts, "E: routed experts; 0 = dense model (the CPU trainer takes at most 256)").range(0, 1 << 20);
  s.add(p + "top_k", &m.top_k, "K: experts per token, <= n_experts (the CPU trainer takes at most 64)").range(1, 1 << 20);
  s.add(p + "d_expert", &m.d_expert, "hidden size of each routed and shared expert").range(1, 1 << 24);
  s.add(p + "n_shared_experts", &m.n_shared_experts, "always-on experts in every MoE layer").range(0, 1 << 10);
  s.add(p + "n_dense_layers", &m.n_dense_layers, "the first layers use the dense FFN").range(0, 1 << 14);
  s.add_enum(p + "router_score", &m.router_score, {"softmax", "sigmoid"}, "router scores");
  s.add(p + "router_renormalize", &m.router_renormalize, "gates of the chosen K experts sum to 1");
  s.add(p + "router_force_balance", &m.router_force_balance,
        "benchmarks only: route on random logits (per layer and sequence position) so experts are loaded evenly "
        "from the first step; the router still runs and gets no gradient (Megatron-LM "
        "--moe-router-force-load-balancing)");
  s.add(p + "capacity_factor", &m.capacity_factor, "> 0: ceil(cf G K / E) slots per expert per routing group")
      .min(0).note("0 = dropless");
  s.add(p + "routing_group", &m.routing_group, "G: tokens per routing group (divides seq_len or a multiple of it)")
      .range(0, int64_t(1) << 31).unit("tokens").note("0 = one sequence");
  s.add_enum(p + "drop_policy", &m.drop_policy, {"probs", "position"},
             "which assignments an expert over capacity drops: probs = the lowest router scores (ties: later "
             "tokens); position = the last to arrive, in (position in sequence, sequence in group) order (Megatron-LM "
             "--moe-token-drop-policy)")
      .note("read only with capacity_factor > 0");
  s.add(p + "aux_loss_coef", &m.aux_loss_coef, "Switch load-balancing loss weight").min(0);
  s.add(p + "z_loss_coef", &m.z_loss_coef, "router z-loss weight").min(0);
  s.add(p + "aux_free_bias", &m.aux_free_bias, "DeepSeek-V3 bias balancing of the selection scores");
  s.add(p + "bias_update_rate", &m.bias_update_rate, "step of the aux-loss-free bias per optimizer step").min(0);
  s.add(p + "expert_groups", &m.expert_groups, "G: routed experts in G contiguous groups for group-limited routing")
      .range(0, 1 << 20).note("0 = one group");
  s.add(p + "max_groups_per_token", &m.max_groups_per_token,
        "M: a token's experts come from at most M groups (DeepSeek-V3: 4 of 8, one per node); planner only, the CPU "
        "trainer does not implement it yet").range(0, 1 << 20).note("0 = unlimited");
  s.add(p + "d_latent", &m.d_latent, "Dl > 0: latent MoE (down-projection, RMSNorm, experts in Dl)").range(0, 1 << 20)
      .note("0 = off");
  s.add(p + "moe_out_norm", &m.moe_out_norm, "RMSNorm on the MoE block output");
}

}  // namespace mt
