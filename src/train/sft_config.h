// sft_config.h — the run config of a fine-tuning run (`moetrain sft`): the
// starting checkpoint's own config (its model, precision, layout and
// optimizer keys, as the checkpoint saved them) with the data replaced by
// supervised examples and the weights taken from the checkpoint, then the
// user's --set overrides. Defaults that differ from pretraining, as the
// fine-tuning recipes of TRL and Megatron-LM do:
//   train.lr           a tenth of the checkpoint's
//   train.schedule     "cosine" to train.min_lr_ratio, warmup 5% of the steps
//   train.steps        one pass: the packed rows of data.sft_epochs epochs
//                      over the global batch (unless --set)
//   train.eval_every   a tenth of the steps when there are held-out examples
// Any of them can be --set; a key that cannot be (the model's shape) is
// refused by the trainer's layout check on train.init_from.
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "train/run_config.h"

namespace mt {

struct SftRequest {
  std::string init;      // checkpoint or run directory to fine-tune
  std::string data;      // examples (JSONL)
  std::string held_out;  // "" = none
  int64_t epochs = 1;
  std::vector<std::string> sets;
};

Result<RunConfig> make_sft_config(const SftRequest& r);

}  // namespace mt
