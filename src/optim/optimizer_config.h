// optimizer_config.h — [optim]: which optimizer updates which parameter
// tensor (docs/optimizers.md). Every tensor of the layout falls in one class
// (tensor_class); the base optimizer of the hidden 2-D matrices is AdamW or
// Muon, everything else (embedding, norms, router, the untied LM head) is
// AdamW; the Hyperball wrapper optionally holds the Frobenius norm of the
// classes listed in hyperball_wrap, and of their updates, fixed. The AdamW
// hyperparameters themselves stay in train.* (adamw_optimizer.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/param_layout.h"

namespace mt {

class ConfigSchema;
class ConfigOrigins;
struct AdamWConfig;

enum class OptimizerName { kAdamW, kMuon };
// Muon's step size for a (rows x cols) matrix, as a multiple of the lr:
//   moonlight  update_rms * sqrt(max(rows, cols)): the update's RMS matches
//              AdamW's typical 0.2-0.4, so AdamW's lr and weight decay carry
//              over (Liu et al. 2025, "Muon is Scalable for LLM Training", §2.2)
//   keller     sqrt(max(1, rows / cols)) (Jordan's muon.py; lr ~0.02)
//   none       1
enum class MuonLrScale { kMoonlight, kKeller, kNone };
// How the moments (AdamW's m and v, Muon's momentum) are stored. bf16 halves
// their memory and traffic (DeepSeek-V3 keeps AdamW's moments in bf16,
// DeepSeek-AI 2024, §3.3.3); each new moment is rounded stochastically with
// counter-based bits (kernels/cpu/adamw.h), since round-to-nearest would
// freeze a second moment that moves by less than half an ulp per step.
// Master weights stay fp32 either way.
enum class StatePrecision { kFp32, kBf16 };

struct OptimizerConfig {
  OptimizerName name = OptimizerName::kAdamW;  // base optimizer of the hidden matrices
  bool hyperball = false;                       // wrap the classes in hyperball_wrap
  // Classes the wrapper holds at fixed norm: attn, mlp, shared, experts,
  // latent, head, router (tensor_class_name). Embeddings and norms never.
  std::vector<std::string> hyperball_wrap = {"attn", "mlp", "shared", "experts", "latent", "head"};
  // Peak lr of the "aux" tensors (TensorRule::aux): with Muon or Hyperball,
  // every tensor plain AdamW updates (their train.lr means something else);
  // with plain AdamW, the embedding, norms, router and LM head (so that the
  // hidden matrices and the rest can be tuned apart). 0 = train.lr. The
  // schedule's shape applies to both.
  double aux_lr = 0.0;
  double muon_momentum = 0.95;      // beta of Muon's momentum
  bool muon_nesterov = true;        // Nesterov-style momentum
  int64_t ns_steps = 5;             // Newton-Schulz iterations
  std::vector<double> ns_coefficients = {3.4445, -4.7750, 2.0315};  // (a, b, c) of the quintic
  MuonLrScale muon_lr_scale = MuonLrScale::kMoonlight;
  double muon_update_rms = 0.2;     // moonlight scale: target RMS of the update at lr 1
  StatePrecision state_precision = StatePrecision::kFp32;  // m, v and Muon's momentum
};

// Declares every key under `table` ("optim").
void declare_keys(ConfigSchema& s, OptimizerConfig& c, const std::string& table);
// Cross-field checks (wrap names known, three coefficients, ...), naming the key.
Status validate(const OptimizerConfig& c, const ConfigOrigins& o, const std::string& table);

// ---- which tensor is which --------------------------------------------------

// There are no bias vectors in this model (the aux-loss-free router bias is
// not a gradient-trained parameter).
enum class TensorClass { kEmbedding, kNorm, kHead, kRouter, kAttention, kDenseMlp, kSharedExpert, kExpert, kLatent };
TensorClass tensor_class(const ParamEntry& e);
const char* tensor_class_name(TensorClass c);  // embed, norm, head, router, attn, mlp, shared, experts, latent

enum class BaseOptimizer { kAdamW, kMuon };
struct TensorRule {
  BaseOptimizer base = BaseOptimizer::kAdamW;
  bool hyperball = false;    // weight and update norms held fixed (no weight decay)
  double weight_decay = 0;   // decoupled, per step: x *= 1 - lr * weight_decay
  bool aux = false;          // its lr is optim.aux_lr (when set) instead of train.lr
};
// What the optimizer does to tensor `e` under `c` (AdamW's decay from `a`:
// matrices, and the embedding when decay_embeddings; never norms).
TensorRule tensor_rule(const ParamEntry& e, const OptimizerConfig& c, const AdamWConfig& a);

// Muon's step size multiplier for a rows x cols matrix (MuonLrScale).
double muon_lr_multiplier(const OptimizerConfig& c, int64_t rows, int64_t cols);

}  // namespace mt
