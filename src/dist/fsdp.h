// fsdp.h — ZeRO-3 as a ParamProvider: the Transformer sees whole units while
// this rank stores only its ShardPlan chunks of parameters and gradients.
// acquire: all-gather the unit (already in flight if prefetched); release
// after the forward: free it; release after the backward: start the
// reduce-scatter of its gradients, which lands (summed in rank order) on top
// of the owner's gradient shard before the step ends. The next layer's
// gather is started while the current one computes (prefetch); the last
// layer stays gathered between forward and backward. Units whose group has
// one rank (np = 1, or experts under fsdp = 1) are used in place, with no
// copy at all. With EP, experts(l) serves only this EP rank's experts.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "dist/comm.h"
#include "dist/mesh.h"
#include "dist/shard_plan.h"
#include "model/parallel_hooks.h"

namespace mt {

enum class Prefetch { kOff, kNextLayer };

class FsdpProvider final : public ParamProvider {
 public:
  // params / grads: this rank's local storage (plan.local_size() floats each);
  // grads accumulate (the caller zeroes them once per optimizer step).
  FsdpProvider(Mesh& mesh, const ShardPlan& plan, int64_t n_layers, float* params, float* grads,
               Prefetch prefetch, ExpertDispatcher* dispatcher);
  ~FsdpProvider() override;

  RootParams acquire_root(Grads grads) override;
  void release_root() override;
  LayerParams acquire_layer(int64_t layer, Pass pass) override;
  void release_layer(int64_t layer, Pass pass) override;
  int64_t replicas() const override { return mesh_.world().size(); }
  double sum_over_replicas(double local) override;
  ExpertDispatcher* dispatcher() override { return dispatcher_; }

 private:
  struct Unit;    // one ShardUnit with its gather/grad buffers and state
  struct Layer;   // a layer's dense and expert units
  Comm& comm_of(const ShardUnit& u);
  void start_gather(Unit& u);
  void finish_gather(Unit& u, const char* what);
  void free_params(Unit& u);
  ParamSpan span(Unit& u);
  void begin_grads(Unit& u);
  void start_reduce(Unit& u);
  void finish_reduce(Unit& u);
  void start_layer(int64_t layer);

  Mesh& mesh_;
  const ShardPlan& plan_;
  int64_t L_;
  float* params_;
  float* grads_;
  Prefetch prefetch_;
  ExpertDispatcher* dispatcher_;
  Grads mode_ = Grads::kNo;
  std::unique_ptr<Unit> embed_, tail_;
  std::vector<Layer> layers_;
  // Buffer pools: two per kind (a layer and the one being prefetched, or a
  // layer and the one whose reduce-scatter is still in flight).
  struct Pool;
  std::unique_ptr<Pool> dense_pool_, expert_pool_;
};

}  // namespace mt
