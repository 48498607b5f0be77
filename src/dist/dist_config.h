// dist_config.h — the [dist] keys: how `mpirun -np N moetrain train` lays
// the N ranks out as an ep x fsdp mesh (docs/distributed.md). One process is
// a world of one and needs none of them.
#pragma once
#include <cstdint>
#include <string>

namespace mt {

class ConfigSchema;

struct DistConfig {
  int64_t ep = 1;             // expert-parallel ranks: routed experts split over them (must divide n_experts)
  int64_t fsdp = 0;           // FSDP ranks sharing each EP rank's experts; 0 = ranks / ep
  // Context-parallel ranks: each sequence in 2 cp load-balanced chunks over cp consecutive ranks
  // (dist/context_parallel.h); the ranks / cp groups split the batch.
  int64_t cp = 1;
  double timeout_s = 600.0;   // seconds a rank may wait in a collective before the job ends naming the silent ranks
  bool prefetch = true;       // gather layer l+1 while layer l computes
  bool ep_overlap = true;     // EP row all-to-alls in flight while the shared experts / router backward compute
};

void declare_keys(ConfigSchema& s, DistConfig& d, const std::string& table = "dist");

}  // namespace mt
