// phased_data.h — the trainer's data, phase by phase: one token source per
// data segment of the phase schedule (phase_schedule.h), the segments' plans
// against one pool of documents (data/mixture.h), and the sequences that
// spike rollbacks skipped. Every sequence a step reads is a pure function of
// (config, step, skips), so a resume needs the step and the skips only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "data/mixture.h"
#include "data/token_source.h"
#include "train/phase_schedule.h"
#include "train/run_config.h"

namespace mt {

class Dataset;

// One data segment's mixture planned against the pool the earlier segments
// left (tokens_before of each bucket).
struct SegmentMixture {
  std::string label;  // 'phase[1] "main"' or 'phases[0..1] "ramp" .. "main"'
  Mixture mixture;
  MixturePlan plan;
  std::vector<int64_t> taken;  // per dataset bucket: full-scale tokens of the earlier segments
};

// Loads every segment's mixture and plans it after the earlier segments.
// Errors name the phase: a mixture that does not load, or whose seed or
// scale differs from the first segment's (one pool, one downsampling ratio).
// Violations (data read twice) stay in each plan; check them with
// check_segments.
Result<std::vector<SegmentMixture>> plan_segments(const Dataset& ds, const PhaseSchedule& s);
// Ok, or one error naming every phase and bucket whose data would repeat, or
// a segment that reads more sequences than its mixture's budget.
Status check_segments(const std::vector<SegmentMixture>& plans, const PhaseSchedule& s);

class PhasedData {
 public:
  // The schedule is the config's (PhaseSchedule::make); the data keeps it.
  static Result<std::unique_ptr<PhasedData>> open(const RunConfig& c, PhaseSchedule s);
  const PhaseSchedule& schedule() const { return sched_; }

  // Writes sequence i (0 <= i < batch_at(step)) of optimizer step `step`.
  void sequence(int64_t step, int64_t i, int64_t seq_len, int64_t ahead, int32_t* out) const;
  // Tokens per bucket read by steps [0, steps) (skipped data included), over
  // every segment, buckets in order of first use. Empty without buckets.
  std::vector<std::pair<std::string, int64_t>> ledger(int64_t steps) const;
  // Tokens per bucket that phase `p` read (from its first step to its end;
  // sequences a rollback skipped inside it count in it).
  std::vector<std::pair<std::string, int64_t>> phase_ledger(size_t p) const;
  // Per bucket, the tokens of the sequences at [from, to) of step `step`'s
  // segment (positions with skips applied): what a skipped step or window held.
  std::vector<std::pair<std::string, int64_t>> tokens_between(int64_t step, int64_t from, int64_t to) const;
  // The buckets of the ledger (in its order), and the one sequence i of step
  // `step` comes from (an index into them; -1 without buckets).
  const std::vector<std::string>& bucket_names() const { return names_; }
  int64_t bucket_of(int64_t step, int64_t i) const;
  // Position in its segment of step `step`'s first sequence, skips applied.
  int64_t position(int64_t step) const;

  // A spike rollback from spike step `spike` (0-based; already read) back to
  // step `to` (the checkpoint's next step): the segment of `spike` skips up
  // to the spike's data. Returns the skipped range [from, to) of positions in
  // that segment, or an error when its mixture cannot give the extra data.
  // `before` is position(spike) + batch, taken before the checkpoint's skips
  // were restored.
  Result<std::pair<int64_t, int64_t>> skip_for_rollback(int64_t spike, int64_t to, int64_t before);
  int64_t spike_end(int64_t spike) const { return position(spike) + sched_.batch_at(spike); }

  // Sequences each segment skipped (checkpointed).
  const std::vector<int64_t>& skips() const { return skip_; }
  void set_skips(std::vector<int64_t> s) { skip_ = std::move(s); }

  // The held-out passes read the first segment's source (one set of buckets
  // for the whole run, so curves compare across phases).
  const TokenSource& eval_source() const { return *src_.front(); }
  // Segment `seg`'s source (index = position in the segment).
  const TokenSource& source(size_t seg) const { return *src_[seg]; }
  int64_t vocab_size() const { return src_.front()->vocab_size(); }
  // The end-of-document id of every segment's source (one dataset), or -1.
  int32_t document_separator() const { return src_.front()->document_separator(); }
  std::string describe() const;

 private:
  // Position in segment `seg` after steps [0, steps): 0 before it starts,
  // its whole read (skips included) once it is over.
  int64_t segment_end(size_t seg, int64_t steps) const;
  explicit PhasedData(PhaseSchedule s) : sched_(std::move(s)) {}
  PhaseSchedule sched_;
  std::vector<std::unique_ptr<TokenSource>> src_;  // per segment
  std::vector<int64_t> skip_;                      // per segment
  std::vector<std::string> names_;                 // every segment's buckets, in order of first use
  std::vector<std::vector<int64_t>> name_of_;      // per segment: its bucket index -> index in names_
};

}  // namespace mt
