// mesh.h — the device mesh ep x fsdp over the world's ranks. Rank r sits at
// ep_rank = r % ep, fsdp_rank = r / ep: the ranks of one EP group are
// consecutive (one host, fast links), and the ranks sharing one EP rank's
// experts form its FSDP group. Dense parameters are sharded over the whole
// world; each EP rank's experts over its FSDP group.
#pragma once
#include <cstdint>
#include <memory>

#include "core/status.h"
#include "comm/comm.h"

namespace mt {

struct MeshShape {
  int64_t ep = 1, fsdp = 1;
  int64_t world() const { return ep * fsdp; }
};

struct MeshCoord {
  int64_t ep_rank = 0, fsdp_rank = 0;
};

inline MeshCoord mesh_coord(const MeshShape& s, int64_t rank) { return {rank % s.ep, rank / s.ep}; }

// Checks the requested layout against the world and the model; fsdp = 0
// means "the rest" (world / ep). Messages name the dist.* keys.
Result<MeshShape> resolve_mesh(int64_t world, int64_t ep, int64_t fsdp, int64_t n_experts);

// The communicators of one rank's place in the mesh.
class Mesh {
 public:
  Mesh(Comm& world, const MeshShape& shape);  // collective (splits the world)
  Comm& world() { return world_; }
  Comm& ep() { return *ep_; }      // same fsdp_rank, ordered by ep_rank
  Comm& fsdp() { return *fsdp_; }  // same ep_rank, ordered by fsdp_rank
  const MeshShape& shape() const { return shape_; }
  const MeshCoord& coord() const { return coord_; }

 private:
  Comm& world_;
  MeshShape shape_;
  MeshCoord coord_;
  std::unique_ptr<Comm> ep_, fsdp_;
};

}  // namespace mt
