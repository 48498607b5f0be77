// threads.h — one place that sets the number of worker threads (OpenMP, which
// oneDNN shares).
#pragma once

namespace mt {
void set_num_threads(int n);  // n <= 0: leave the OpenMP default
int num_threads();
}  // namespace mt
