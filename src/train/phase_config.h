// phase_config.h — one [[phase]] table of a run config: a stretch of the run
// with its own length, global batch (optionally ramped), data mixture and
// learning-rate segment. The shape follows the planner's phases
// (plan/layout.h: name, tokens, ramp_from, the batch) so that `moetrain
// plan` of a run config plans exactly the trainer's phases; the trainer adds
// `steps` (a length the planner cannot express) and what only a training run
// has (mixture, lr). phase_schedule.h expands the phases into steps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mt {

class ConfigSchema;

// The learning rate over a phase: the run's schedule (train.schedule over
// every step of the run, at the run's step), or a segment of its own.
enum class LrSegment {
  kSchedule,  // learning_rate(train.*, step, train.steps): a phase boundary changes nothing
  kWarmup,    // linear from 0 to train.lr over the phase
  kStable,    // train.lr
  kDecay,  // from train.lr to train.lr x min_lr_ratio over the phase (cosine if train.schedule = "cosine", else linear)
};

struct PhaseConfig {
  std::string name;   // a label for metrics, reports and messages; "" = "phase N"
  int64_t steps = 0;  // length in optimizer steps, or
  double tokens = 0;  // length in tokens (steps = what it takes to train them); neither = the rest of train.steps
  int64_t global_batch = 0;  // sequences per step (a multiple of train.batch_size); 0 = batch_size x grad_accum
  int64_t ramp_from = 0;     // sequences per step at the phase start, ramped linearly to global_batch; 0 = constant
  std::string mixture;       // mixture TOML of this phase; "" = data.mixture
  LrSegment lr = LrSegment::kSchedule;
  // Loss weights of this phase; < 0 = the model's (model.aux_loss_coef,
  // model.z_loss_coef, the MTP weight model.mtp_loss_weight* gives).
  double aux_loss_coef = -1, z_loss_coef = -1, mtp_loss_weight = -1;
  int64_t seq_len = 0;    // tokens per sequence over the phase (with data.dataset); 0 = train.seq_len
  double rope_theta = 0;  // RoPE base over the phase; 0 = model.rope_theta
  // RoPE scaling over the phase ("" = model.rope_scaling; 0 = the model's factor / original length).
  std::string rope_scaling;
  double rope_factor = 0;
  int64_t rope_original_len = 0;
};

// Declares the [[phase]] table array bound to `phases`.
void declare_phase_keys(ConfigSchema& s, std::vector<PhaseConfig>& phases);

const char* lr_segment_name(LrSegment s);

}  // namespace mt
