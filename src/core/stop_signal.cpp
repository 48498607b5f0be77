// stop_signal.cpp — see stop_signal.h. The handler only stores the signal
// number (async-signal-safe); the trainer polls it once per step.
#include "core/stop_signal.h"

#include <signal.h>

namespace mt {
namespace {
volatile sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) {
  if (g_stop_signal == 0) g_stop_signal = sig;
}
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
  sa.sa_flags = SA_RESETHAND | SA_RESTART;  // a second Ctrl-C takes the default action: exit now
  sigaction(SIGINT, &sa, nullptr);
}

int stop_signal_received() { return g_stop_signal; }

}  // namespace mt
