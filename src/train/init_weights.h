// init_weights.h — the weights a fine-tuning run starts from (train.init_from):
// a checkpoint's parameters and router biases, checked against the layout
// the run's model keys give, so a run never starts from a model of another
// shape. The optimizer state is not read: fine-tuning starts it fresh, as
// TRL's SFTTrainer and Megatron-LM's --finetune do.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/param_layout.h"
#include "train/run_config.h"

namespace mt {

struct InitWeights {
  std::string ckpt_dir;  // the step_XXXXXXXX directory read
  int64_t step = 0;
  std::vector<float> params;       // flat, in the run's layout order
  std::vector<float> router_bias;  // empty when the checkpoint has none
};

// Errors name train.init_from and the first tensor whose name or shape differs
// (the model keys the run sets must give the checkpoint's model).
Result<InitWeights> load_init_weights(const RunConfig& cfg, const ParamLayout& layout);

}  // namespace mt
