// metrics_line.h — one logged step as the JSON object of RUN_DIR/metrics.jsonl
// (rundir/metrics_log.h writes it, and mirrors its numbers to TensorBoard):
// step, time (Unix seconds), loss (next token), aux_loss, z_loss, mtp_loss
// and mtp_weight (multi-token prediction runs: the modules' mean
// cross-entropy and its lambda), lr, grad_norm, tokens_per_s, mfu,
// dropped_frac, step_time_s, tokens and expert_load (per MoE layer, the
// fraction of routed choices each expert received); with a dataset,
// bucket_tokens (bucket -> tokens consumed so far); after an eval pass,
// eval_loss and bucket_eval_loss (bucket -> held-out loss); comm (world size,
// bytes per collective kind, wait_s and compute_s of rank 0); stream (weight
// streaming); spike and skipped_bucket_tokens (the spike guard).
#pragma once
#include <nlohmann/json.hpp>

#include "train/step_result.h"

namespace mt {

nlohmann::json metrics_line(const StepResult& r, double tokens_per_s, double mfu, double unix_time,
                            const std::vector<std::string>& bucket_names = {});

}  // namespace mt
