// tensorboard_writer.h — a run's scalars as a TensorBoard event file,
// RUN_DIR/tensorboard/events.out.tfevents.moetrain: TFRecord-framed Event
// messages (TensorFlow's protos; encoded as the .cpp says why), a
// file_version event first, then one
// event per logged step holding that step's scalars. `tensorboard --logdir
// RUN_DIR/tensorboard` (or a parent holding many runs) plots them.
//
// A resumed run rewrites the file from the steps it keeps (the metrics log
// hands them over), so a step never appears twice, whatever reads the file.
// The name is fixed: one file per run, replaced atomically.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"
#include "rundir/append_log.h"

namespace mt {

// One logged step: its scalars by tag (TensorBoard stores them as float).
struct ScalarStep {
  int64_t step = 0;
  double wall_time = 0;  // seconds since the Unix epoch
  std::vector<std::pair<std::string, double>> scalars;
};

class TensorBoardWriter {
 public:
  static constexpr const char* kFileName = "events.out.tfevents.moetrain";
  // Creates `dir` if needed and writes the event file anew holding `history`.
  static Result<std::unique_ptr<TensorBoardWriter>> open(const std::string& dir, const std::vector<ScalarStep>& history,
                                                         FileSystem& fs = default_file_system());
  Status add(const ScalarStep& s);
  const std::string& path() const { return log_->path(); }

 private:
  explicit TensorBoardWriter(std::unique_ptr<AppendLog> log) : log_(std::move(log)) {}
  std::unique_ptr<AppendLog> log_;
};

// The framed records of a file_version event and of one step (exposed for tests).
std::string tensorboard_file_version_record(double wall_time);
std::string tensorboard_scalars_record(const ScalarStep& s);

}  // namespace mt
