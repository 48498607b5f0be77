// mesh.cpp — layout validation and the EP / FSDP sub-communicators.
#include "dist/mesh.h"

#include "core/check.h"

namespace mt {

Result<MeshShape> resolve_mesh(int64_t world, int64_t ep, int64_t fsdp, int64_t n_experts) {
  if (ep < 1) return Status::errorf("dist.ep: must be >= 1, got {}", ep);
  if (fsdp < 0) return Status::errorf("dist.fsdp: must be >= 0 (0 = ranks / dist.ep), got {}", fsdp);
  if (fsdp == 0) {
    if (world % ep != 0)
      return Status::errorf("dist.ep = {} does not divide the {} ranks this job was started with", ep, world);
    fsdp = world / ep;
  }
  if (ep * fsdp != world)
    return Status::errorf("dist.ep x dist.fsdp = {} x {} = {} but the job has {} ranks (mpirun -np): they must be equal",
                          ep, fsdp, ep * fsdp, world);
  if (ep > 1 && n_experts == 0) return Status::errorf("dist.ep = {} needs an MoE model (model.n_experts = 0)", ep);
  if (ep > 1 && n_experts % ep != 0)
    return Status::errorf("dist.ep = {} must divide model.n_experts = {} (each EP rank owns whole experts)", ep,
                          n_experts);
  return MeshShape{ep, fsdp};
}

Mesh::Mesh(Comm& world, const MeshShape& shape) : world_(world), shape_(shape) {
  MT_CHECK(shape.world() == world.size(), "mesh {}x{} on {} ranks", shape.ep, shape.fsdp, world.size());
  coord_ = mesh_coord(shape, world.rank());
  ep_ = world.split(int(coord_.fsdp_rank), int(coord_.ep_rank));
  fsdp_ = world.split(int(coord_.ep_rank), int(coord_.fsdp_rank));
}

}  // namespace mt
