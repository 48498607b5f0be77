// run_report.h — the training report: RUN_DIR/metrics.jsonl (and the events) turned into a
// self-contained RUN_DIR/report.html (loss, learning rate, gradient norm,
// throughput and MFU, router losses, dropped tokens, expert load balance).
// Written by `moetrain train` at the end of a run and by `moetrain report`.
#pragma once
#include <string>

#include "core/status.h"

namespace mt::report {

// Reads RUN_DIR's metrics.jsonl and events.jsonl (rundir/), writes
// `out_path`. Errors name the file and line.
Status write_run_report(const std::string& run_dir, const std::string& out_path, const std::string& title);

}  // namespace mt::report
