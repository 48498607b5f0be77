// trainer_dist.h — the trainer's place in the world (trainer_dist.cpp):
// always present; one process is a world of one (LocalComm, a 1 x 1 mesh,
// a one-rank shard plan that owns everything). Shared with trainer.cpp only
// so that Trainer's destructor sees a complete type.
#pragma once
#include <memory>

#include "comm/comm.h"
#include "dist/context_parallel.h"
#include "dist/expert_parallel.h"
#include "dist/fsdp.h"
#include "dist/mesh.h"
#include "dist/shard_plan.h"
#include "model/grad_ledger.h"
#include "train/trainer.h"

namespace mt {

struct Trainer::Dist {
  Dist(Comm& w, const MeshShape& s) : world(w), shape(s) {}
  Comm& world;
  MeshShape shape;
  int64_t local_batch = 0, offset = 0;
  // Context parallelism: the cp consecutive ranks that share sequences, and
  // the exchange of the current phase's sequence length (null when cp = 1).
  int64_t cp = 1;
  std::unique_ptr<Comm> cp_group;
  std::unique_ptr<ContextParallel> context;
  std::unique_ptr<Mesh> mesh;
  std::unique_ptr<ShardPlan> plan;
  std::unique_ptr<EpDispatcher> ep;
  std::unique_ptr<GradLedger> ledger;  // which gradients the step wrote: first writes assign
  std::unique_ptr<FsdpProvider> fsdp;
};

}  // namespace mt
