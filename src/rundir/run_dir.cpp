// run_dir.cpp — see run_dir.h.
#include "rundir/run_dir.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/file_io.h"
#include "rundir/output_dir.h"

namespace mt {
namespace fs = std::filesystem;

std::string saved_config_path(const std::string& run_dir) { return run_dir + "/config.toml"; }

bool run_dir_in_use(const std::string& run_dir) {
  std::error_code ec;
  for (const char* name : {"config.toml", "metrics.jsonl", "checkpoints"})
    if (fs::exists(fs::path(run_dir) / name, ec)) return true;
  return false;
}

Result<std::string> prepare_run_dir(const std::string& run_dir, RunDirMode mode) {
  std::error_code ec;
  if (fs::exists(run_dir, ec) && !fs::is_directory(run_dir, ec))
    return Status::errorf("{}: the run directory exists and is not a directory", run_dir);
  if (mode == RunDirMode::kResume || !run_dir_in_use(run_dir)) return std::string();
  if (mode == RunDirMode::kFresh)
    return Status::errorf(
        "{}: the run directory already holds a run (config.toml, metrics.jsonl or checkpoints/); nothing was "
        "changed. Continue it with --resume, start over with --move-aside (the old run is renamed, not deleted), "
        "or choose another --run-dir",
        run_dir);
  return move_aside(run_dir);
}

Status save_run_config(const std::string& run_dir, const std::string& resolved_toml) {
  return write_file_atomic(saved_config_path(run_dir), resolved_toml);
}

}  // namespace mt
