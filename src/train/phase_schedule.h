// phase_schedule.h — a run's phases expanded into steps: for every optimizer
// step, its phase, global batch (hence micro-batches), learning rate, and
// where its data comes from. A pure function of the config, so the trainer,
// `moetrain plan` of a run config and `data plan` agree to the sequence, and a
// resume at any step (a phase boundary included) needs only the step number.
//
// Data segments: phases in a row that read the same mixture (at the same
// sequence length) form one segment and read one sampler schedule
// (data/sampler.h) front to back, so a batch ramp followed by the main phase
// reads what one phase of both would. A new mixture starts a new segment.
// A run without [[phase]] tables is one phase over train.steps whose every
// step is as it always was (train.batch_size x grad_accum sequences, the
// run's learning-rate schedule).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "train/phase_config.h"
#include "train/run_config.h"

namespace mt {

struct PhaseSpan {
  std::string name;        // the config's, or "phase N"
  int64_t first_step = 0;  // index of its first step in the run (0-based)
  int64_t steps = 0;
  int64_t global_batch = 0;  // sequences per step (the last, for a ramp)
  int64_t ramp_from = 0;     // 0 = constant batch
  int64_t seq_len = 0;
  ModelConfig model;      // the phase's model config: its RoPE (base and scaling), the run's otherwise
  std::string mixture;    // resolved ("" without a dataset)
  LrSegment lr = LrSegment::kSchedule;
  double aux_loss_coef = -1, z_loss_coef = -1, mtp_loss_weight = -1;  // < 0 = the model's
  int64_t segment = 0;                                                // index of its data segment
  int64_t first_sequence = 0;  // in its segment: sequences read by the segment's earlier phases
  int64_t sequences = 0;       // sequences it reads
  // A ramp: sequences each step reads, and how many the phase read before it.
  std::vector<int64_t> ramp_batch, ramp_before;
  int64_t tokens() const { return sequences * seq_len; }
  int64_t batch_at(int64_t i) const { return ramp_batch.empty() ? global_batch : ramp_batch[size_t(i)]; }
  int64_t before(int64_t i) const { return ramp_before.empty() ? i * global_batch : ramp_before[size_t(i)]; }
};

struct DataSegment {
  std::string mixture;
  int64_t seq_len = 0;
  int64_t first_phase = 0, phases = 0;
  int64_t first_step = 0, steps = 0;  // the steps of its phases
  int64_t sequences = 0;  // read by its phases together
};

class PhaseSchedule {
 public:
  // Errors name the [[phase]] key (phase[i].steps, ...) at its line.
  static Result<PhaseSchedule> make(const RunConfig& c);

  bool phased() const { return phased_; }  // the config has [[phase]] tables
  int64_t total_steps() const { return total_steps_; }
  const std::vector<PhaseSpan>& phases() const { return phases_; }
  const std::vector<DataSegment>& segments() const { return segments_; }

  // Of optimizer step `step` (0-based, < total_steps()):
  size_t phase_at(int64_t step) const;
  int64_t batch_at(int64_t step) const;        // sequences
  int64_t micro_batches(int64_t step) const;   // batch_at / train.batch_size
  int64_t first_sequence(int64_t step) const;  // index in its segment of its first sequence
  double learning_rate(int64_t step) const;    // before any spike-guard factor
  // Tokens trained by steps [0, step); step may equal total_steps().
  int64_t tokens_before(int64_t step) const;
  int64_t total_tokens() const { return tokens_before(total_steps_); }
  int64_t max_seq_len() const;  // over the phases (what the memory check sizes)
  // `--stop-at`: a step number, or a phase's name for the step that ends it
  // (a cooldown branch, an early teacher). Errors list the phases.
  Result<int64_t> stop_step(const std::string& spec) const;

 private:
  bool phased_ = false;
  int64_t total_steps_ = 0;
  int64_t micro_ = 1;  // train.batch_size
  ScheduleParams schedule_;
  std::vector<PhaseSpan> phases_;
  std::vector<DataSegment> segments_;
  std::vector<int64_t> tokens_before_phase_;  // per phase
};

// The run config with train.steps resolved from its phases (the sum of their
// lengths, or checked against them): parse_run_config calls it.
Status resolve_phase_steps(RunConfig& c);

}  // namespace mt
