// optimizer_config.cpp — [optim] keys, their checks, and the rule per tensor.
#include "optim/optimizer_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/config_schema.h"
#include "optim/adamw_optimizer.h"

namespace mt {
namespace {

// Classes Hyperball may wrap: the weight matrices. The embedding's rows are
// per-token vectors (and it is the LM head when tied); norms are vectors.
const std::vector<std::string> kWrappable = {"attn", "mlp", "shared", "experts", "latent", "head", "router"};

}  // namespace

void declare_keys(ConfigSchema& s, OptimizerConfig& c, const std::string& t) {
  s.add_enum(t + ".name", &c.name, {"adamw", "muon"},
             "base optimizer of the hidden matrices (attention, MLP, experts, latent projections); embeddings, "
             "norms, the router and the untied LM head always use AdamW");
  s.add(t + ".hyperball", &c.hyperball,
        "Hyperball wrapper: the Frobenius norm of every wrapped matrix stays at its initial value and each update "
        "has norm lr x that value (Wen et al. 2026); no weight decay on wrapped matrices");
  s.add(t + ".hyperball_wrap", &c.hyperball_wrap,
        "tensor classes the wrapper holds: attn, mlp, shared, experts, latent, head, router")
      .or_one_string();
  s.add(t + ".aux_lr", &c.aux_lr,
        "peak lr of the tensors plain AdamW updates when the matrices use Muon or Hyperball; with plain AdamW, of the "
        "embedding, norms, router and LM head (same schedule shape)")
      .min(0).note("0 = train.lr");
  s.add(t + ".muon_momentum", &c.muon_momentum, "Muon: momentum coefficient").min(0).below(1);
  s.add(t + ".muon_nesterov", &c.muon_nesterov, "Muon: Nesterov-style momentum");
  s.add(t + ".ns_steps", &c.ns_steps, "Muon: Newton-Schulz iterations").range(1, 100);
  s.add(t + ".ns_coefficients", &c.ns_coefficients,
        "Muon: (a, b, c) of the quintic X <- a X + (b A + c A^2) X, A = X X^T (Jordan 2024)");
  s.add_enum(t + ".muon_lr_scale", &c.muon_lr_scale, {"moonlight", "keller", "none"},
             "Muon step per matrix: lr x update_rms x sqrt(max(rows, cols)) (Liu et al. 2025), "
             "lr x sqrt(max(1, rows/cols)) (Jordan), or lr");
  s.add(t + ".muon_update_rms", &c.muon_update_rms, "Muon, moonlight scale: update RMS to match (AdamW's ~0.2)")
      .above(0);
  s.add_enum(t + ".state_precision", &c.state_precision, {"fp32", "bf16"},
             "storage of the optimizer moments (AdamW m and v, Muon momentum): bf16 halves their memory, rounding "
             "each new value stochastically; master weights stay fp32; a checkpoint resumes under either");
}

Status validate(const OptimizerConfig& c, const ConfigOrigins& o, const std::string& t) {
  if (c.ns_coefficients.size() != 3)
    return o.error(t + ".ns_coefficients", fmt::format("expected three numbers (a, b, c), got {}",
                                                       c.ns_coefficients.size()));
  for (size_t i = 0; i < c.hyperball_wrap.size(); ++i) {
    const std::string& w = c.hyperball_wrap[i];
    if (std::find(kWrappable.begin(), kWrappable.end(), w) == kWrappable.end())
      return o.error(t + ".hyperball_wrap",
                     fmt::format("\"{}\" is not a class Hyperball can wrap (one of attn, mlp, shared, experts, latent, "
                                 "head, router; embeddings and norms are never wrapped)", w));
    if (std::find(c.hyperball_wrap.begin(), c.hyperball_wrap.begin() + i, w) != c.hyperball_wrap.begin() + i)
      return o.error(t + ".hyperball_wrap", fmt::format("\"{}\" is listed twice", w));
  }
  if (c.hyperball && c.hyperball_wrap.empty())
    return o.error(t + ".hyperball_wrap", "is empty: hyperball = true would wrap nothing");
  return Status::ok();
}

TensorClass tensor_class(const ParamEntry& e) {
  if (e.kind == ParamKind::kEmbedding) return TensorClass::kEmbedding;
  if (e.kind == ParamKind::kNorm) return TensorClass::kNorm;
  if (e.name == "head") return TensorClass::kHead;
  if (e.expert >= 0) return TensorClass::kExpert;
  const auto has = [&](const char* s) { return e.name.find(s) != std::string::npos; };
  if (has(".moe.router")) return TensorClass::kRouter;
  if (has(".moe.shared.")) return TensorClass::kSharedExpert;
  if (has(".moe.down") || has(".moe.up")) return TensorClass::kLatent;
  if (has(".mlp.")) return TensorClass::kDenseMlp;
  return TensorClass::kAttention;  // .attn.wq, wk, wv, wo
}

const char* tensor_class_name(TensorClass c) {
  switch (c) {
    case TensorClass::kEmbedding: return "embed";
    case TensorClass::kNorm: return "norm";
    case TensorClass::kHead: return "head";
    case TensorClass::kRouter: return "router";
    case TensorClass::kAttention: return "attn";
    case TensorClass::kDenseMlp: return "mlp";
    case TensorClass::kSharedExpert: return "shared";
    case TensorClass::kExpert: return "experts";
    case TensorClass::kLatent: return "latent";
  }
  return "?";
}

TensorRule tensor_rule(const ParamEntry& e, const OptimizerConfig& c, const AdamWConfig& a) {
  const TensorClass k = tensor_class(e);
  TensorRule r;
  const bool hidden = k == TensorClass::kAttention || k == TensorClass::kDenseMlp ||
                      k == TensorClass::kSharedExpert || k == TensorClass::kExpert || k == TensorClass::kLatent;
  if (c.name == OptimizerName::kMuon && hidden) r.base = BaseOptimizer::kMuon;
  const std::string name = tensor_class_name(k);
  r.hyperball = c.hyperball && std::find(c.hyperball_wrap.begin(), c.hyperball_wrap.end(), name) != c.hyperball_wrap.end();
  if (r.hyperball) return r;  // the fixed norm replaces weight decay
  r.aux = r.base == BaseOptimizer::kAdamW && (c.name == OptimizerName::kMuon || c.hyperball || !hidden);
  // AdamW's rule as it always was (kMatrix covers router and head); Muon
  // decays its matrices the same way (Moonlight).
  const bool decay = e.kind == ParamKind::kMatrix || (e.kind == ParamKind::kEmbedding && a.decay_embeddings);
  r.weight_decay = decay ? a.weight_decay : 0.0;
  return r;
}

double muon_lr_multiplier(const OptimizerConfig& c, int64_t rows, int64_t cols) {
  switch (c.muon_lr_scale) {
    case MuonLrScale::kMoonlight: return c.muon_update_rms * std::sqrt(double(std::max(rows, cols)));
    case MuonLrScale::kKeller: return std::sqrt(std::max(1.0, double(rows) / double(cols)));
    case MuonLrScale::kNone: return 1.0;
  }
  return 1.0;
}

}  // namespace mt
