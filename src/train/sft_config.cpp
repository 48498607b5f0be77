// sft_config.cpp — a fine-tuning run's config from its checkpoint (see sft_config.h).
#include "train/sft_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "train/inference_model.h"
#include "train/sft_data.h"

namespace mt {

Result<RunConfig> make_sft_config(const SftRequest& r) {
  auto base = load_checkpoint_config(r.init);
  if (!base) return Status::errorf("--init: {}", base.status().message());
  RunConfig c = base->cfg;  // the model as its last step trained it
  c.phases.clear();
  c.data = DataConfig{};
  c.data.sft = r.data;
  c.data.sft_held_out = r.held_out;
  c.data.sft_tokenizer = base->ckpt_dir;
  c.data.sft_epochs = r.epochs;
  c.train.init_from = base->ckpt_dir;
  c.train.schedule.lr *= 0.1;
  c.train.schedule.kind = ScheduleKind::kCosine;
  c.train.eval_every = 0;
  const std::string source = fmt::format("<sft of {}>", base->ckpt_dir);
  auto first = parse_run_config(to_toml(c), source, r.sets);
  if (!first) return first.status();
  c = with_absolute_paths(*first);
  // One pass over the packed rows unless the steps were asked for.
  auto src = open_sft_source(c);
  if (!src) return src.status();
  const int64_t global_batch = c.train.batch_size * c.train.grad_accum;
  if (!sets_key(r.sets, "train.steps")) c.train.steps = std::max<int64_t>(1, (*src)->capacity() / global_batch);
  if (!sets_key(r.sets, "train.warmup_steps")) c.train.schedule.warmup_steps = std::max<int64_t>(1, c.train.steps / 20);
  if (!sets_key(r.sets, "train.eval_every") && !c.data.sft_held_out.empty())
    c.train.eval_every = std::max<int64_t>(1, c.train.steps / 10);
  if (!sets_key(r.sets, "train.checkpoint_every"))
    c.train.checkpoint_every = std::min(c.train.checkpoint_every, std::max<int64_t>(1, c.train.steps / 4));
  // Parsed once more: the resolved keys validate together, and the saved config.toml is what --resume reads.
  return parse_run_config(to_toml(c), source, {});
}

}  // namespace mt
