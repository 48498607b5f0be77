// rl_config.h — the [rl] keys of a reinforcement-learning run (`moetrain rl`,
// train/rl_feed.h): GRPO (Shao et al. 2024) on task items with verifiable
// answers. The prompts are data.sft's task items (their answers are what the
// verifier checks); the held-out items (data.sft_held_out) give pass@1 and
// pass@k. The global batch of train.batch_size x train.grad_accum rows is
// rl.group_size completions of each of (rows / group_size) prompts.
#pragma once
#include <cstdint>
#include <string>

#include "core/config_schema.h"

namespace mt {

enum class FrozenLayout { kSharded, kReplicated };

// How GRPO's per-token losses are aggregated and its advantages scaled.
//   grpo     A = (r - mean) / (std + 1e-4) over the group; each completion's
//            tokens averaged, then the completions (DeepSeekMath)
//   dr_grpo  A = r - mean; every token weighs 1 / (completions x
//            rl.max_new_tokens): no length or difficulty bias (Liu et al. 2025)
enum class RlLoss { kGrpo, kDrGrpo };

// What the rollouts train: GRPO on their rewards, or distillation toward a
// teacher (`moetrain distill`): on-policy (the student samples, reverse KL
// to the teacher over the vocabulary at every sampled position), or the two
// off-policy baselines on the teacher's samples (forward KL to its
// distribution: knowledge distillation; cross-entropy on its tokens: SFT on
// teacher samples).
enum class RlObjective { kGrpo, kReverseKl, kForwardKl, kTeacherSft };

struct RlConfig {
  bool enabled = false;         // a reinforcement-learning run (`moetrain rl` sets it)
  int64_t group_size = 8;       // G: completions sampled per prompt
  int64_t passes = 1;           // optimizer steps on each batch of rollouts (1 = strictly on-policy)
  int64_t max_new_tokens = 16;  // a completion's budget (the end-of-document id ends it sooner)
  double temperature = 1.0;     // sampling of the rollouts
  double top_p = 1.0;
  double clip_low = 0.2, clip_high = 0.2;  // PPO's epsilon below and above 1
  double kl_beta = 0.0;                    // weight of the k3 KL term to the reference; 0 = no reference
  std::string reference;                   // checkpoint of the frozen reference; "" = train.init_from
  RlLoss loss = RlLoss::kGrpo;
  RlObjective objective = RlObjective::kGrpo;
  std::string teacher;      // distillation: the teacher's checkpoint or run directory
  // 0: each iteration's rollouts are sampled by the model as it is at the
  // iteration's start (on-policy); 1: by the model at the previous
  // iteration's start, generated in the background while that iteration
  // trains (one step stale, as asynchronous RL systems run).
  int64_t rollout_lag = 0;
  int64_t rollout_threads = 1;  // OpenMP threads of the background generation (rl.rollout_lag = 1)
  // The reference and the teacher across ranks: sharded like the policy, or a whole copy on each.
  FrozenLayout frozen_layout = FrozenLayout::kSharded;
  // Every rollout to RUN_DIR/rollouts.jsonl, in the form `data build` ingests
  // as kind = "rollouts" (outcome first, family and provenance kept).
  bool write_rollouts = false;
  int64_t eval_every = 0;   // held-out pass@1 / pass@k every N steps (and at the end); 0 = train.eval_every
  int64_t eval_items = 64;  // held-out items per evaluation (the first N); 0 = all
  int64_t eval_k = 4;       // samples per held-out item for pass@k
};

void declare_keys(ConfigSchema& s, RlConfig& c);
const char* rl_loss_name(RlLoss l);
const char* rl_objective_name(RlObjective o);
// Whether the objective's rollouts are the teacher's samples (the off-policy baselines).
inline bool samples_from_teacher(RlObjective o) {
  return o == RlObjective::kForwardKl || o == RlObjective::kTeacherSft;
}

}  // namespace mt
