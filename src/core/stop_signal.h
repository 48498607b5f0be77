// stop_signal.h — Ctrl-C (SIGINT) and SIGTERM (a scheduler's preemption
// notice) as a request to stop: the trainer finishes the step it is in,
// commits a checkpoint there and exits, so `--resume` continues the same
// run. A second signal ends the process at once (the handler is installed
// with SA_RESETHAND: the default action is back after the first).
#pragma once

namespace mt {

void install_stop_signal_handlers();  // SIGINT and SIGTERM
// The first stop signal received since the handlers were installed (0: none).
int stop_signal_received();

}  // namespace mt
