// memory.cpp — see memory.h.
#include "core/memory.h"

#include <unistd.h>

namespace mt {

double physical_memory_bytes() { return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE)); }

}  // namespace mt
