// rl_run_config.h — the run config of a reinforcement-learning run (`moetrain
// rl`): the starting checkpoint's own config (its model, precision, layout
// and optimizer keys) with rl.enabled, the task items as data.sft (their
// prompts rolled out, their answers verified) and the weights taken from the
// checkpoint, then the user's --set overrides. Defaults that differ from
// pretraining, as TRL's GRPOTrainer and the DeepSeekMath recipe set them:
//   train.lr             a tenth of the checkpoint's, constant after a warmup of 5% of the steps
//   train.batch_size     rl.group_size x 8 prompts per rollout batch
//   train.seq_len        the longest prompt + rl.max_new_tokens, rounded up to 16
//   train.steps          100
//   train.eval_every     a tenth of the steps (held-out pass@1 and pass@k)
//   train.checkpoint_every  a quarter of the steps
// Any of them can be --set. `moetrain distill` builds the same run with
// rl.objective and rl.teacher set.
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "train/run_config.h"

namespace mt {

struct RlRequest {
  std::string init;      // checkpoint or run directory to start from
  std::string tasks;     // task items (JSONL, `moetrain tasks make`)
  std::string held_out;  // "" = none
  // Distillation (`moetrain distill`): the teacher and the objective; grpo = reinforcement learning.
  std::string teacher;
  RlObjective objective = RlObjective::kGrpo;
  std::vector<std::string> sets;
};

Result<RunConfig> make_rl_config(const RlRequest& r);

}  // namespace mt
