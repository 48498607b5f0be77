// step_result.h — what one optimizer step reports (Trainer::train_step):
// losses, rates, routing, communication and streaming figures. The metrics
// line (metrics_line.h), the bench and the progress line read it.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm.h"

namespace mt {

// A reinforcement-learning step (train/rl_feed.h): its iteration's rollouts,
// the policy's tokens, and the held-out evaluation when one ran (NaN if not).
struct RlStepFigures {
  bool on = false;
  int64_t iteration = 0, pass = 0;  // the rollout batch and the optimizer pass over it (0-based)
  double reward = 0, well_formed = 0, length = 0, truncated = 0, solved_groups = 0, zero_signal = 0;
  double tool_use = 0;                    // share of rollouts that called a tool (agentic items)
  double rollout_s = 0;                       // generation + verification (first pass only; 0 otherwise)
  int64_t rollout_age = 0;                    // iterations since the model that sampled the rollouts (rl.rollout_lag)
  double rollout_ahead_s = 0;  // their generation in the background, overlapped with the previous iteration
  double entropy = 0, kl = 0, clip_frac = 0;  // means over the step's completion tokens
  int64_t policy_tokens = 0;                  // completion tokens the step trained on (every rank's)
  double pass1 = std::nan(""), pass_k = std::nan(""), sample_acc = std::nan(""), eval_tool_use = std::nan("");
  int64_t eval_items = 0, eval_k = 0;
  double eval_s = 0;
};

struct StepResult {
  int64_t step = 0;  // 1-based index of the step just taken
  double loss = 0, aux_loss = 0, z_loss = 0, lr = 0, grad_norm = 0;
  double mtp_loss = 0, mtp_weight = 0;  // multi-token prediction: mean CE of the modules (unweighted), lambda
  double seconds = 0;                   // wall time of the step (compute only)
  int64_t tokens = 0;                   // tokens in this step
  std::string phase;                    // phased runs: the name of the step's phase ("" otherwise)
  int64_t dropped = 0, assignments = 0;
  // Document masking: keys attended by one global / one local layer over the
  // step's tokens, every rank's (model FLOPs count them; 0 without masking).
  int64_t keys_global = 0, keys_local = 0;
  // Dropped assignments by the bucket their token came from (every rank's;
  // sums to `dropped`), indexed like PhasedData::bucket_names(); empty without buckets.
  std::vector<int64_t> bucket_dropped;
  std::vector<int64_t> bucket_dropped_total;  // run() on logged steps: the same since the start of the run
  // A stop signal (core/stop_signal.h) reached some rank by this step: every
  // rank learns it from the same reduction, so all stop after the same step.
  int stop_signal = 0;
  std::vector<std::vector<int64_t>> expert_load;  // per MoE layer, summed over micro-batches
  // This rank's collectives during the step (bytes received per kind, time
  // blocked in them); zeros in one process. compute = seconds - comm wait.
  CommStats comm;
  int64_t world_size = 1;
  // Filled by run() on logged steps: tokens each bucket supplied so far
  // (dataset runs), and held-out losses when an eval pass ran (NaN if not).
  std::vector<std::pair<std::string, int64_t>> bucket_tokens;
  double eval_loss = std::nan("");
  std::vector<std::pair<std::string, double>> bucket_eval_loss;
  // Spike guard: a non-empty `spike` says the update was not applied and why;
  // skipped_bucket_tokens (logged steps) is the data skipped so far per bucket.
  std::string spike;
  double loss_z = 0, norm_z = 0;
  std::vector<std::pair<std::string, int64_t>> skipped_bucket_tokens;
  // Weight streaming (stream.enabled; zeros otherwise): bytes read from the
  // store into compute memory and written back during the step, seconds the
  // compute waited for them, and the compute memory (activations + layer
  // buffers) of the step.
  int64_t stream_bytes_in = 0, stream_bytes_out = 0;
  double stream_stall_s = 0;
  int64_t compute_memory_bytes = 0;
  int64_t store_bytes = 0;  // parameters, gradients and optimizer state in this rank's store
  // Sparse streaming (stream.expert_density < 1): pruned expert tensors' bytes dense and on the sparse wire.
  int64_t sparse_dense_bytes = 0, sparse_wire_bytes = 0;
  RlStepFigures rl;
};

}  // namespace mt
