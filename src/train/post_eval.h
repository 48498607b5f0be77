// post_eval.h — scoring the runs of a ladder or a mixture search after they
// train, with `moetrain eval` itself: a child process of the run queue per
// finished run, so one code path produces every task accuracy and
// bits-per-byte figure, wherever it is used. Here: the [eval] keys both files
// share, the queued eval of a run's final checkpoint, and reading what it
// wrote (RUN_DIR/eval.json, `moetrain eval --out`'s format).
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "train/run_queue.h"

namespace mt {

class ConfigSchema;
class ConfigOrigins;

struct EvalTargets {
  std::vector<std::string> tasks;  // task files, JSONL (relative to the config file until checked; train/task_file.h)
  std::string metric = "acc";      // "acc" or "acc_norm": the accuracy a ladder records per task
  std::vector<std::string> names;  // task names (file stems, as `moetrain eval` reports them); set by check
  std::vector<std::string> generative;  // the names of generative tasks (exact match: acc, no acc_norm); set by check
  std::vector<std::string> text_sets;  // text sets (train/text_set.h) scored for held-out loss (relative until checked)
  std::vector<std::string> text_set_names;  // their names (file names up to the first dot); set by check
  bool enabled() const { return !tasks.empty() || !text_sets.empty(); }
};

// eval.tasks, eval.text_sets, and eval.metric when `with_metric` (the
// ladder's; a mixture search names the metric in each target instead).
void declare_keys(ConfigSchema& s, EvalTargets& e, bool with_metric);

// Resolves the task files and text sets against `config_path`, reads each
// (a bad line is an error naming FILE:LINE, before anything trains), checks
// their names are distinct (tasks among tasks, sets among sets), and that
// eval.metric = "acc_norm" names no generative task.
Status check_eval_targets(EvalTargets& e, const std::string& config_path, const ConfigOrigins& o);

// `moetrain eval --threads 1` of RUN_DIR's newest checkpoint (its final one
// once the run has finished) with every task, every text set and the held-out pass, into
// RUN_DIR/eval.json; it starts once queue entry `after` has finished.
QueuedRun queued_eval(const EvalTargets& e, const std::string& name, const std::string& run_dir,
                      const std::string& log_path, int64_t step, size_t after);

// RUN_DIR/eval.json, checked: of checkpoint step `step`, with every task and set.
Result<nlohmann::json> read_eval(const std::string& run_dir, int64_t step, const EvalTargets& e);

// A task's figures in an eval.json ({"acc", "acc_norm", "docs", and their
// standard errors; a generative task's breakdowns}, without the per-item
// log-likelihoods or outputs), and the held-out bits per byte per bucket
// ({bucket: bpb}; empty without held-out buckets).
nlohmann::json task_result(const nlohmann::json& eval, const std::string& task);
nlohmann::json bucket_bits_per_byte(const nlohmann::json& eval);
// The text sets' bits per byte ({set: bpb}; empty without sets).
nlohmann::json text_set_bits_per_byte(const nlohmann::json& eval);

}  // namespace mt
