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
//
// Weight streaming (stream.enabled, docs/streaming.md): this rank's storage
// is the store, and nothing is computed on it in place. Units of a one-rank
// group are copied into the same pooled buffers by background threads
// (dist/stager.h) `depth` layers ahead, and their gradients copied back;
// units of larger groups are all-gathered from the store as before. A
// copied-back gradient starts from the store's value (or from zeros when the
// store's is known to be zero), so the sums are the in-place ones, in the
// same order: streaming is bit-identical to computing in place.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "comm/comm.h"
#include "dist/mesh.h"
#include "dist/shard_plan.h"
#include "model/parallel_hooks.h"

namespace mt {

enum class Prefetch { kOff, kNextLayer };

struct StreamOptions {
  int64_t prefetch_layers = 1;  // layers fetched ahead of the one computing
  int64_t io_threads = 1;       // copy threads
  // Sparse streaming: each routed-expert tensor (global offset, numel) is
  // pruned to this fraction of its largest-magnitude weights as it arrives;
  // gradients reach the dense store weights (straight-through). 1 = dense.
  double expert_density = 1.0;
  std::vector<std::pair<int64_t, int64_t>> expert_tensors;
};

// What streaming moved since reset_stream_stats(): floats read from the
// store (weights, and gradients resumed from it), floats written back, and
// the seconds the compute thread waited for a copy.
struct StreamStats {
  int64_t floats_in = 0, floats_out = 0;
  double stall_s = 0.0;
  // Sparse streaming: bytes of the pruned expert tensors dense, and in the
  // sparse wire format (bitmap + kept values); seconds spent pruning.
  int64_t sparse_dense_bytes = 0, sparse_wire_bytes = 0;
  double prune_s = 0.0;
};

class Stager;

class FsdpProvider final : public ParamProvider {
 public:
  // params / grads: this rank's local storage (plan.local_size() floats each);
  // grads accumulate (the caller zeroes them once per optimizer step).
  FsdpProvider(Mesh& mesh, const ShardPlan& plan, int64_t n_layers, float* params, float* grads,
               Prefetch prefetch, ExpertDispatcher* dispatcher, const StreamOptions* stream = nullptr);
  ~FsdpProvider() override;

  // Every gradient of the store is zero (the trainer zeroed it): streaming
  // starts a unit's first backward from zeros instead of reading it, and
  // the ledger, if any, starts a new step.
  void store_grads_zeroed();
  // Which gradients the step's products wrote (grad_ledger.h), handed out
  // with every span of a backward; kept current as unit buffers are cleared
  // or loaded. Null (the default): every product adds into its gradient.
  void set_grad_ledger(GradLedger* ledger) { ledger_ = ledger; }
  const StreamStats& stream_stats() const { return stats_; }
  void reset_stream_stats() { stats_ = StreamStats(); }
  // Bytes of this provider's own buffers (pools and root units): with the
  // activations, the compute memory of a streamed run.
  int64_t buffer_bytes() const;

  RootParams acquire_root(Grads grads) override;
  void release_root() override;
  LayerParams acquire_layer(int64_t layer, Pass pass) override;
  void release_layer(int64_t layer, Pass pass) override;
  int64_t replicas() const override { return mesh_.world().size(); }
  double sum_over_replicas(double local) override;
  ExpertDispatcher* dispatcher() override { return dispatcher_; }
  // A new dispatcher (a training phase with another sequence length sizes its buffers anew).
  void set_dispatcher(ExpertDispatcher* d) { dispatcher_ = d; }

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
  bool copied(const Unit& u) const;  // computed on a buffer, not in place on the store
  void prune(Unit& u);               // sparse streaming of a fetched expert unit

  Mesh& mesh_;
  const ShardPlan& plan_;
  int64_t L_;
  float* params_;
  float* grads_;
  Prefetch prefetch_;
  ExpertDispatcher* dispatcher_;
  Grads mode_ = Grads::kNo;
  GradLedger* ledger_ = nullptr;
  bool stream_ = false;
  int64_t depth_ = 1;                 // layers prefetched ahead
  std::unique_ptr<Stager> stager_;
  double density_ = 1.0;
  std::vector<float> prune_scratch_;  // sparse streaming: a slice per thread
  StreamStats stats_;
  std::unique_ptr<Unit> embed_, tail_;
  std::vector<Layer> layers_;
  // Buffer pools per kind: depth + 1 weight slots (the layer computing and
  // those prefetched; at least two without streaming) and two gradient slots
  // (a layer and the one whose reduce-scatter or copy-back is in flight).
  struct Pool;
  std::unique_ptr<Pool> dense_pool_, expert_pool_;
};

}  // namespace mt
