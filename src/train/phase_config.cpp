// phase_config.cpp — the [[phase]] keys.
#include "train/phase_config.h"

#include "core/config_schema.h"

namespace mt {

const char* lr_segment_name(LrSegment s) {
  switch (s) {
    case LrSegment::kSchedule:
      return "schedule";
    case LrSegment::kWarmup:
      return "warmup";
    case LrSegment::kStable:
      return "stable";
    case LrSegment::kDecay:
      return "decay";
  }
  return "?";
}

void declare_phase_keys(ConfigSchema& s, std::vector<PhaseConfig>& phases) {
  s.add_table_array<PhaseConfig>(
      "phase", &phases,
      [](ConfigSchema& e, PhaseConfig& ph) {
        e.add("name", &ph.name, "a label for metrics, reports and messages (\"\" = phase N)");
        e.add("steps", &ph.steps, "length of the phase in optimizer steps")
            .range(0, int64_t(1) << 40)
            .unit("steps")
            .note("0 = given by tokens, or the rest of train.steps");
        e.add("tokens", &ph.tokens,
              "length of the phase in tokens: the steps it takes to train them (the last "
              "step may pass the count, as the planner's phases do)")
            .min(0)
            .unit("tokens")
            .note(
                "0 = given by steps; neither = what the other phases leave of train.steps "
                "(one phase at most)");
        e.add("global_batch", &ph.global_batch,
              "sequences per optimizer step: train.batch_size per micro-batch, global_batch / batch_size micro-batches")
            .range(0, int64_t(1) << 40)
            .note("0 = train.batch_size x train.grad_accum");
        e.add("ramp_from", &ph.ramp_from,
              "sequences per step at the phase start, ramped linearly (in tokens with a tokens length, in steps with "
              "a steps length) to global_batch, each step rounded to a multiple of train.batch_size")
            .range(0, int64_t(1) << 40)
            .note("0 = constant batch");
        e.add("mixture", &ph.mixture,
              "mixture TOML of this phase (with data.dataset); phases in a row with the same mixture read one "
              "schedule, a new mixture continues each bucket's documents where the earlier phases left them")
            .note("\"\" = data.mixture");
        e.add_enum("lr", &ph.lr, {"schedule", "warmup", "stable", "decay"},
                   "learning rate over the phase: the run's schedule at the run's step, or a segment of the phase's "
                   "own (warmup 0 -> train.lr, stable train.lr, decay train.lr -> train.lr x min_lr_ratio, cosine "
                   "when train.schedule = \"cosine\")");
        e.add("aux_loss_coef", &ph.aux_loss_coef, "load-balancing loss weight over the phase")
            .min(-1)
            .note("-1 = model.aux_loss_coef");
        e.add("z_loss_coef", &ph.z_loss_coef, "router z-loss weight over the phase")
            .min(-1)
            .note("-1 = model.z_loss_coef");
        e.add("mtp_loss_weight", &ph.mtp_loss_weight, "multi-token-prediction loss weight (lambda) over the phase")
            .min(-1)
            .note("-1 = model.mtp_loss_weight and its switch");
        e.add("seq_len", &ph.seq_len,
              "tokens per sequence over the phase (a longer context; with data.dataset): the phase reads its own "
              "data segment, planned at this length")
            .range(0, 1 << 24)
            .unit("tokens")
            .note("0 = train.seq_len");
        e.add("rope_theta", &ph.rope_theta, "RoPE base over the phase (raised with a longer context)")
            .min(0)
            .note("0 = model.rope_theta");
        e.add_choice("rope_scaling", &ph.rope_scaling, {"", "none", "linear", "yarn"},
                     "RoPE scaling over the phase (as model.rope_scaling)")
            .note("\"\" = model.rope_scaling");
        e.add("rope_factor", &ph.rope_factor, "RoPE scaling factor over the phase")
            .min(0)
            .note("0 = model.rope_factor");
        e.add("rope_original_len", &ph.rope_original_len, "yarn: the context trained before the phase's extension")
            .range(0, int64_t(1) << 31)
            .unit("tokens")
            .note("0 = model.rope_original_len");
      },
      "one [[phase]] table per training phase, in order: its length, batch (an optional ramp), mixture and "
      "learning-rate segment; none = one phase, the whole run");
}

}  // namespace mt
