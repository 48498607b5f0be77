// arch_step.h — the resumable steps of `moetrain arch compare`: each result
// is a JSON file written atomically under the output directory and never
// recomputed once there, so a killed comparison restarts where it stopped and
// every measured figure is taken once (a restart reads it back: identical by
// construction). Also the child processes the measured steps run.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace mt {

// The JSON at `path` when a previous invocation wrote it; else `compute()`'s
// result, written to `path` (atomically) first.
Result<nlohmann::json> cached_step(const std::string& path, const std::function<Result<nlohmann::json>()>& compute);

// A finished child: its exit status (128 + signal), its stdout, and where its stderr went.
struct ChildOutput {
  int exit_code = 0;
  std::string out;
  std::string log_path;
};

// Runs `argv` (argv[0] a program on PATH or a path) to its end with stdout
// captured in `out_path` and stderr in `log_path` (both replaced). The child
// dies with this process. Errors: it could not be started.
Result<ChildOutput> run_child(const std::vector<std::string>& argv,
                              const std::vector<std::pair<std::string, std::string>>& env, const std::string& out_path,
                              const std::string& log_path);

// The last line of `text` that parses as a JSON object (a child's --json output among other lines); null if none.
nlohmann::json last_json_line(const std::string& text);

}  // namespace mt
