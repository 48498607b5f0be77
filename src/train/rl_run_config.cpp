// rl_run_config.cpp — a reinforcement-learning run's config from its checkpoint (see rl_run_config.h).
#include "train/rl_run_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "train/gen_tasks.h"
#include "train/inference_model.h"

namespace mt {

Result<RunConfig> make_rl_config(const RlRequest& r) {
  auto base = load_checkpoint_config(r.init);
  if (!base) return Status::errorf("--init: {}", base.status().message());
  RunConfig c = base->cfg;  // the model as its last step trained it
  c.phases.clear();
  c.data = DataConfig{};
  c.data.sft = r.tasks;
  c.data.sft_held_out = r.held_out;
  c.data.sft_tokenizer = base->ckpt_dir;
  c.train.init_from = base->ckpt_dir;
  c.train.schedule.lr *= 0.1;
  c.train.schedule.kind = ScheduleKind::kConstant;
  c.train.schedule.warmup_steps = 0;
  c.train.steps = 100;
  c.train.grad_accum = 1;
  // Rollout batches of 8 prompts: the group size may come from --set.
  int64_t group = c.rl.group_size;
  for (const std::string& s : r.sets)
    if (s.rfind("rl.group_size=", 0) == 0) group = std::max<int64_t>(1, std::atoll(s.c_str() + 14));
  c.train.batch_size = group * 8;
  c.train.seq_len = 4096;  // room for any rl.max_new_tokens until the prompts size the rows below
  c.train.eval_every = 0;
  c.rl.enabled = true;
  c.rl.objective = r.objective;
  c.rl.teacher = r.teacher;
  const std::string source = fmt::format("<rl of {}>", base->ckpt_dir);
  // The longest prompt sets the rows, unless train.seq_len is --set.
  auto first = parse_run_config(to_toml(c), source, r.sets);
  if (!first) return first.status();
  c = with_absolute_paths(*first);
  if (!sets_key(r.sets, "train.seq_len")) {
    auto codec = open_codec(c.data.sft_tokenizer);
    if (!codec) return codec.status();
    int64_t longest = 0;
    for (const std::string& path : {c.data.sft, c.data.sft_held_out}) {
      if (path.empty()) continue;
      auto items = read_gen_tasks(path);
      if (!items) return items.status();
      for (const GenItem& it : *items)
        longest = std::max<int64_t>(longest, 1 + int64_t((*codec)->encode(it.prompt).size()));
    }
    c.train.seq_len = (longest + c.rl.max_new_tokens + 15) / 16 * 16;
  }
  // Adam's first steps from fresh moments move every weight by about the
  // learning rate whatever the gradient's size; a short warmup keeps them from
  // undoing the checkpoint (measured: at lr 1e-3 without it the policy's reward fell to 0 in 3 steps).
  if (!sets_key(r.sets, "train.warmup_steps")) c.train.schedule.warmup_steps = std::max<int64_t>(1, c.train.steps / 20);
  if (!sets_key(r.sets, "train.eval_every")) c.train.eval_every = std::max<int64_t>(1, c.train.steps / 10);
  if (!sets_key(r.sets, "train.checkpoint_every"))
    c.train.checkpoint_every = std::max<int64_t>(1, std::min(c.train.checkpoint_every, c.train.steps / 4));
  // Parsed once more: the resolved keys validate together, and the saved config.toml is what --resume reads.
  return parse_run_config(to_toml(c), source, {});
}

}  // namespace mt
