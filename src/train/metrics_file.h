// metrics_file.h — DIR/metrics.jsonl: one JSON object per logged step with
// step, loss (next token), aux_loss, z_loss, mtp_loss and mtp_weight (multi-
// token prediction runs: the modules' mean cross-entropy and its lambda), lr, grad_norm, tokens_per_s, mfu,
// dropped_frac, step_time_s, tokens and expert_load (per MoE layer, the
// fraction of routed choices each expert received); with a dataset,
// bucket_tokens (bucket -> tokens consumed so far); after an eval pass,
// eval_loss and bucket_eval_loss (bucket -> held-out loss); comm (world
// size, bytes per collective kind, wait_s and compute_s of rank 0). On resume, lines past
// the restored step (written by the interrupted run) are dropped, so the file
// reads like an uninterrupted run.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/status.h"

namespace mt {

struct StepResult;

Result<std::FILE*> open_metrics_file(const std::string& run_dir, int64_t resume_step);
void append_metrics_line(std::FILE* f, const StepResult& r, double tokens_per_s, double mfu);

}  // namespace mt
