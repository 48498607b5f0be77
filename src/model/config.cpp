// config.cpp — derived sizes and semantic validation of ModelConfig.
#include "model/config.h"

#include <cmath>

namespace mt {

int64_t ModelConfig::capacity(int64_t group_tokens) const {
  if (capacity_factor <= 0.0 || n_experts == 0) return 0;
  return int64_t(std::ceil(capacity_factor * double(group_tokens * top_k) / double(n_experts)));
}

Status ModelConfig::validate(const std::string& where, int64_t seq_len) const {
  auto bad = [&](const char* key, const std::string& why) {
    return Status::errorf("{}: model.{}: {}", where, key, why);
  };
  if (vocab_size < 2) return bad("vocab_size", "must be >= 2");
  if (d_model < 2) return bad("d_model", "must be >= 2");
  if (n_layers < 1) return bad("n_layers", "must be >= 1");
  if (n_heads < 1 || d_model % n_heads != 0) return bad("n_heads", "must divide d_model");
  if (head_dim() % 2 != 0) return bad("n_heads", "head dim d_model/n_heads must be even for RoPE");
  if (n_kv_heads < 1 || n_heads % n_kv_heads != 0) return bad("n_kv_heads", "must divide n_heads");
  if (n_kv_heads_local < 0 || (n_kv_heads_local > 0 && n_heads % n_kv_heads_local != 0))
    return bad("n_kv_heads_local", "must be 0 or divide n_heads");
  if (layer_pattern.empty()) return bad("layer_pattern", "must not be empty");
  for (char c : layer_pattern)
    if (c != 'L' && c != 'G') return bad("layer_pattern", "may only contain 'L' and 'G'");
  if (window < 1) return bad("window", "must be >= 1");
  if (!(rope_theta > 0)) return bad("rope_theta", "must be > 0");
  if (!(norm_eps > 0)) return bad("norm_eps", "must be > 0");
  if (!(init_std > 0)) return bad("init_std", "must be > 0");
  if (d_ff < 1) return bad("d_ff", "must be >= 1");
  if (n_experts < 0) return bad("n_experts", "must be >= 0");
  if (n_experts > 0) {
    if (top_k < 1 || top_k > n_experts) return bad("top_k", "must be in [1, n_experts]");
    if (d_expert < 1) return bad("d_expert", "must be >= 1");
    if (n_shared_experts < 0) return bad("n_shared_experts", "must be >= 0");
    if (n_dense_layers < 0 || n_dense_layers > n_layers) return bad("n_dense_layers", "must be in [0, n_layers]");
    if (capacity_factor < 0) return bad("capacity_factor", "must be >= 0 (0 = dropless)");
    if (routing_group < 0) return bad("routing_group", "must be >= 0");
    int64_t g = group_size(seq_len);
    if (seq_len > 0 && g > 0 && (seq_len % g != 0 && g % seq_len != 0))
      return bad("routing_group", "must divide seq_len or be a multiple of it");
    if (aux_loss_coef < 0) return bad("aux_loss_coef", "must be >= 0");
    if (z_loss_coef < 0) return bad("z_loss_coef", "must be >= 0");
    if (d_latent < 0) return bad("d_latent", "must be >= 0");
  }
  return Status::ok();
}

}  // namespace mt
