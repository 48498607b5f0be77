// gather_layout.h — the whole flat layout read back from every rank's
// shard: what sampling (which needs the full model), the state hash and a
// sharded frozen model's checkpoint identity read. A chunk of the layout at
// a time, so a store larger than memory passes through in a few MiB.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "comm/comm.h"
#include "dist/mesh.h"
#include "model/config.h"
#include "model/param_layout.h"

namespace mt {

// Collective. Calls f(lo, chunk) over the layout [0, total) in order, each
// chunk gathered from every rank's owned elements (ShardPlan of `shape`) of
// what read(local offset, n, out) reads from that rank's local storage.
void for_each_gathered_chunk(Comm& world, const ParamLayout& layout, const ModelConfig& model, const MeshShape& shape,
                             const std::function<void(int64_t lo, int64_t n, float* out)>& read,
                             const std::function<void(int64_t lo, const std::vector<float>& chunk)>& f);

// Collective: the whole layout from every rank's local storage `local` into full.
void gather_layout(Comm& world, const ParamLayout& layout, const ModelConfig& model, const MeshShape& shape,
                   const float* local, std::vector<float>& full);

}  // namespace mt
