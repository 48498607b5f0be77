// phases.h — a run in phases (layout.h: [[phase]]): each phase's steps, step
// time, MFU, memory and days; a batch ramp split into its constant-batch
// levels; and the run's totals. make_plan (plan.h) reports them; a layout
// without phases is one phase, the layout itself, over the whole budget.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/config.h"
#include "plan/cluster.h"
#include "plan/layout.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "plan/perf.h"

namespace mt::plan {

// One constant-batch stretch of a ramp.
struct RampLevel {
  int64_t global_batch = 0;   // sequences per step
  double tokens = 0;          // tokens trained at this batch
  double steps = 0;           // tokens / (global_batch x seq_len), fractional
  double step_s = 0, mfu = 0; // filled by plan_phases
};

// A linear ramp of the global batch from `from` to `to` sequences over
// `tokens` tokens: the batch after t tokens is B(t) = from + (to - from) t /
// tokens, each step rounded to the nearest level. Levels are `to`, to - q,
// to - 2q, ... down to the one nearest `from` (never below q), with q the
// quantum (dp x micro_batch) times the smallest factor that keeps the levels
// at most `max_levels`; level b trains on the tokens where B(t) lies within
// q/2 of b. Sum of steps -> tokens ln(to / from) / ((to - from) seq_len) as
// q -> 0 (the integral of dt / (B(t) seq_len)).
std::vector<RampLevel> ramp_levels(int64_t from, int64_t to, int64_t quantum, double tokens, int64_t seq_len,
                                   int64_t max_levels = 256);

struct PhasePlan {
  std::string name;               // "phase N" when the file gives none
  double tokens = 0;
  int64_t ramp_from = 0;          // sequences at the start of a ramp; 0 = constant batch
  Parallel par;                   // at the phase's (final) batch
  ModelStats stats;               // at the phase's sequence length
  MemoryBreakdown mem;            // the fullest over the ramp's levels
  StepTime time;                  // at the phase's (final) batch
  std::vector<RampLevel> ramp;    // a ramp's levels, smallest batch first; empty for a constant batch
  int64_t steps = 0;              // constant batch: ceil(tokens / tokens per step); ramp: ceil(sum of levels' steps)
  double days = 0;                // steps x step time (a ramp: sum over levels of steps x step time)
  double gpu_hours = 0;           // days x 24 x GPUs
  double mfu = 0;                 // token-weighted over the ramp's levels (time.mfu without a ramp)
  double mfu_by_time = 0;         // time-weighted over the ramp's levels: model FLOPs / peak FLOPs
};

struct PhaseTotals {
  double tokens = 0;
  int64_t steps = 0;
  double days = 0, gpu_hours = 0;
  double mfu_by_tokens = 0;       // sum of tokens x MFU / tokens
  double mfu_by_time = 0;         // sum of GPU-hours x MFU / GPU-hours: model FLOPs / peak FLOPs over the run
  double memory_bytes = 0;        // the fullest phase's memory per GPU
  size_t fullest = 0;             // index of that phase
  size_t main = 0;                // the phase with the most tokens (the plan's detailed sections describe it)
  bool fits = true;               // every phase fits
};

// Plans every phase of `l` (or `l` itself over `tokens` when it has none).
// Phase tokens must add up to `tokens`; one phase with tokens = 0 takes the
// rest. Errors name the phase (its layout's source is "FILE phase[i]").
Result<std::vector<PhasePlan>> plan_phases(const ModelConfig& m, int64_t model_seq_len, const ClusterConfig& c,
                                           const LayoutConfig& l, double tokens);

PhaseTotals phase_totals(const std::vector<PhasePlan>& phases);

}  // namespace mt::plan
