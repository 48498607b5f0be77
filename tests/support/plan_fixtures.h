// plan_fixtures.h — the clusters the planner's tests share (and the models
// of support/fixtures.h).
#pragma once
#include <cstdint>

#include "plan/cluster.h"
#include "support/fixtures.h"

namespace mt::testing {

// `racks` nodes of 8 H100s, the device's default efficiencies.
inline plan::ClusterConfig h100_cluster(int64_t racks = 1) {
  plan::ClusterConfig c;
  c.source = "test";
  c.device = *plan::find_device("H100");
  c.eff = c.device.eff;
  c.gpus_per_rack = 8;
  c.racks = racks;
  return c;
}

}  // namespace mt::testing
