// init_weights.cpp — a fine-tuning run's starting weights (see init_weights.h).
#include "train/init_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "train/inference_model.h"

namespace mt {

Result<InitWeights> load_init_weights(const RunConfig& cfg, const ParamLayout& layout) {
  auto m = load_inference_model(cfg.train.init_from);
  if (!m) return Status::errorf("train.init_from: {}", m.status().message());
  const auto& want = layout.entries();
  const auto& have = m->layout.entries();
  for (size_t i = 0; i < std::max(want.size(), have.size()); ++i) {
    if (i >= have.size())
      return Status::errorf("train.init_from: {} has no tensor {} (the run's model has more: its model keys differ)",
                            m->ckpt_dir, want[i].name);
    if (i >= want.size())
      return Status::errorf("train.init_from: {} has tensor {} that the run's model lacks (its model keys differ)",
                            m->ckpt_dir, have[i].name);
    if (want[i].name != have[i].name || want[i].shape != have[i].shape)
      return Status::errorf(
          "train.init_from: {}: tensor {} of shape [{}] where the run's model has {} of shape [{}] (its model keys "
          "differ from the checkpoint's)",
          m->ckpt_dir, have[i].name, fmt::join(have[i].shape, ", "), want[i].name, fmt::join(want[i].shape, ", "));
  }
  const bool bias = cfg.model.aux_free_bias && cfg.model.n_experts > 0;
  if (bias != !m->router_bias.empty())
    return Status::errorf("train.init_from: {} {} router biases, the run's model.aux_free_bias is {}", m->ckpt_dir,
                          m->router_bias.empty() ? "has no" : "has", cfg.model.aux_free_bias);
  return InitWeights{m->ckpt_dir, m->step, std::move(m->params), std::move(m->router_bias)};
}

}  // namespace mt
