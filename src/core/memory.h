// memory.h — this machine's physical memory, the bound that commands check
// a request against before allocating (Linux overcommits: an allocation past
// it does not fail cleanly, the OOM killer ends the process later).
#pragma once

namespace mt {

// Bytes of physical memory (sysconf), as a double so sums stay finite.
double physical_memory_bytes();

}  // namespace mt
