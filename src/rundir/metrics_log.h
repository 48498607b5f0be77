// metrics_log.h — RUN_DIR/metrics.jsonl, one JSON object per logged step
// (the fields are the trainer's: train/metrics_line.h), mirrored as
// TensorBoard scalars in RUN_DIR/tensorboard/ (tensorboard_writer.h).
// Opening for a resume keeps the lines up to the restored step and drops the
// rest (written by the interrupted run after its last checkpoint), rewriting
// both files atomically, so they read like an uninterrupted run.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"
#include "rundir/append_log.h"
#include "rundir/tensorboard_writer.h"

namespace mt {

enum class TensorBoard { kOff, kOn };

std::string metrics_path(const std::string& run_dir);     // RUN_DIR/metrics.jsonl
std::string tensorboard_dir(const std::string& run_dir);  // RUN_DIR/tensorboard

class MetricsLog {
 public:
  // Keeps the lines of steps <= keep_through (all of a fresh run's: none).
  static Result<std::unique_ptr<MetricsLog>> open(const std::string& run_dir, int64_t keep_through, TensorBoard tb,
                                                  FileSystem& fs = default_file_system());
  // One logged step: an object with an integer "step" and "time" (seconds
  // since the Unix epoch).
  Status append(const nlohmann::json& line);

 private:
  MetricsLog(std::unique_ptr<AppendLog> log, std::unique_ptr<TensorBoardWriter> tb)
      : log_(std::move(log)), tb_(std::move(tb)) {}
  std::unique_ptr<AppendLog> log_;
  std::unique_ptr<TensorBoardWriter> tb_;  // null when off
};

// Every line of RUN_DIR/metrics.jsonl that parses as an object with an
// integer step, in file order (none if the file is absent): a live run's log,
// whose last line may be torn.
std::vector<nlohmann::json> read_metrics_lines(const std::string& run_dir);
// The same, strictly, for a finished run: an error names the file if it is
// missing, and file:line for a line that is not a step object.
Result<std::vector<nlohmann::json>> load_metrics(const std::string& run_dir);
// The last step line (null if none), and its step (0 if none), read from
// the file's tail: cheap on a long run.
nlohmann::json last_metrics_line(const std::string& run_dir);
int64_t latest_logged_step(const std::string& run_dir);
// Writes TO_RUN/metrics.jsonl holding FROM_RUN's lines of steps <= step,
// atomically (a ladder's cooldown branch starts as a copy of its full run).
Status copy_metrics_through(const std::string& from_run, const std::string& to_run, int64_t step,
                            FileSystem& fs = default_file_system());

// The TensorBoard scalars of one metrics line: every number under its JSON
// path ("loss", "bucket_eval_loss/code/q0", "comm/wait_s"), step and time
// excepted; expert_load becomes router/layer_L/max_load and min_load, each
// expert's share times the number of experts (1 = even routing).
std::vector<std::pair<std::string, double>> metric_scalars(const nlohmann::json& line);

}  // namespace mt
