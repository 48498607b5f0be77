// rl_config.cpp — the [rl] keys (see rl_config.h).
#include "train/rl_config.h"

namespace mt {

void declare_keys(ConfigSchema& s, RlConfig& c) {
  s.add("rl.enabled", &c.enabled,
        "a reinforcement-learning run: rollouts of data.sft's task items, rewarded by their verifier, train the "
        "model with GRPO's objective (moetrain rl sets it)");
  s.add("rl.group_size", &c.group_size,
        "G: completions sampled per prompt (train.batch_size x grad_accum / G prompts "
        "per rollout batch)")
      .range(2, 1 << 16);
  s.add("rl.passes", &c.passes, "optimizer steps on each batch of rollouts (1 = strictly on-policy)")
      .range(1, 1 << 16)
      .unit("steps");
  s.add("rl.max_new_tokens", &c.max_new_tokens, "a completion's budget; the end-of-document id ends it sooner")
      .range(1, 1 << 20)
      .unit("tokens");
  s.add("rl.temperature", &c.temperature, "sampling temperature of the rollouts").above(0);
  s.add("rl.top_p", &c.top_p, "nucleus sampling of the rollouts (1 = off)").above(0).max(1);
  s.add("rl.clip_low", &c.clip_low, "PPO's clip below 1: the ratio's floor is 1 - clip_low").range(0, 1);
  s.add("rl.clip_high", &c.clip_high, "PPO's clip above 1 (DAPO's clip-higher: larger than clip_low)").range(0, 10);
  s.add("rl.kl_beta", &c.kl_beta, "weight of the k3 estimate of KL(policy || reference) per token")
      .range(0, 100)
      .note("0 = no KL term and no reference model");
  s.add("rl.reference", &c.reference, "checkpoint or run directory of the frozen reference model")
      .note("\"\" = train.init_from (the policy's starting point)");
  s.add_enum("rl.loss", &c.loss, {"grpo", "dr_grpo"},
             "grpo: advantages scaled by the group's standard deviation, tokens averaged per completion; dr_grpo: "
             "unscaled advantages, every token weighing 1 / (completions x max_new_tokens) (Liu et al. 2025)");
  s.add_enum("rl.objective", &c.objective, {"grpo", "reverse_kl", "forward_kl", "teacher_sft"},
             "what the rollouts train: grpo on their rewards; reverse_kl: on-policy distillation (the model samples, "
             "reverse KL to rl.teacher over the vocabulary); forward_kl: knowledge distillation on the teacher's "
             "samples; teacher_sft: cross-entropy on the teacher's samples")
      .note("moetrain distill sets it from --mode");
  s.add("rl.teacher", &c.teacher, "distillation's teacher: a checkpoint or run directory with the same tokenizer")
      .note("required unless rl.objective = \"grpo\"");
  s.add("rl.rollout_lag", &c.rollout_lag,
        "iterations between the model that samples an iteration's rollouts and the one they train: 0 = on-policy; "
        "1 = sampled by the model at the previous iteration's start, in the background while that iteration "
        "trains (one step stale)")
      .range(0, 1)
      .unit("iterations");
  s.add("rl.rollout_threads", &c.rollout_threads,
        "OpenMP threads of the background generation when rl.rollout_lag = 1 (the training keeps train.threads)")
      .range(1, 4096);
  s.add_enum("rl.frozen_layout", &c.frozen_layout, {"sharded", "replicated"},
             "the reference and the teacher across ranks: sharded like the policy (each rank keeps its FSDP chunks "
             "and experts; forwards all-gather unit by unit), or a whole copy on every rank (no communication)")
      .note("one process: always whole");
  s.add("rl.write_rollouts", &c.write_rollouts,
        "write every rollout to RUN_DIR/rollouts.jsonl: text (prompt + completion), outcome (success/failure by "
        "the verifier), topic (the family) and provenance, the JSONL `data build` ingests as kind = \"rollouts\"");
  s.add("rl.eval_every", &c.eval_every, "held-out pass@1 (greedy) and pass@k every N steps, and at the end")
      .range(0, int64_t(1) << 40)
      .unit("steps")
      .note("0 = train.eval_every");
  s.add("rl.eval_items", &c.eval_items, "held-out items per evaluation, the file's first N")
      .range(0, 1 << 24)
      .note("0 = all");
  s.add("rl.eval_k", &c.eval_k, "samples per held-out item for pass@k").range(1, 1 << 12);
}

const char* rl_loss_name(RlLoss l) { return l == RlLoss::kDrGrpo ? "dr_grpo" : "grpo"; }

const char* rl_objective_name(RlObjective o) {
  switch (o) {
    case RlObjective::kGrpo:
      return "grpo";
    case RlObjective::kReverseKl:
      return "reverse_kl";
    case RlObjective::kForwardKl:
      return "forward_kl";
    case RlObjective::kTeacherSft:
      return "teacher_sft";
  }
  return "?";
}

}  // namespace mt
