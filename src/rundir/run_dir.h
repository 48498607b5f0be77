// run_dir.h — a run directory belongs to one run. It holds config.toml (the
// resolved configuration, written when the run starts and rewritten when a
// resume legitimately changes it), metrics.jsonl, checkpoints/ and the
// report. Starting a run in a used directory is refused unless the caller
// continues it (--resume) or moves the old run aside (--move-aside: renamed
// to DIR.prev-N, never deleted); --resume without --config reads config.toml.
#pragma once
#include <string>

#include "core/status.h"

namespace mt {

enum class RunDirMode {
  kFresh,      // must be absent or empty
  kResume,     // continue whatever run is there (absent or empty: start it)
  kMoveAside,  // a used directory is renamed to DIR.prev-N first
};

// The file holding a run's resolved configuration.
std::string saved_config_path(const std::string& run_dir);

// True when the directory holds anything of a run (config, metrics, checkpoints).
bool run_dir_in_use(const std::string& run_dir);

// Checks (and for kMoveAside, performs) what `mode` needs before a run
// starts. Returns where the old run went for kMoveAside ("" if nothing moved).
// Errors name the directory and the flags that would resolve them.
Result<std::string> prepare_run_dir(const std::string& run_dir, RunDirMode mode);

// Writes config.toml atomically.
Status save_run_config(const std::string& run_dir, const std::string& resolved_toml);

}  // namespace mt
