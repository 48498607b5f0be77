// parallel_hooks.h — how parallelism is applied to the single-device model
// from outside (torchtitan style). The Transformer asks a ParamProvider for
// each unit's weights just before it uses them and tells it when it is done
// (FSDP all-gathers and frees there, and reduce-scatters the unit's
// gradients); the MoE block sends its routed rows through an
// ExpertDispatcher (EP all-to-all). One process: FlatParams (views of the
// whole flat buffers) and the identity dispatcher, so the single-device path
// runs exactly the arithmetic it always ran. dist/ implements both for MPI.
// Legend: E experts, F expert hidden, Din expert input dim.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "model/grad_ledger.h"

namespace mt {

struct FfnActs;
struct FfnScratch;
class ExpertDispatcher;

// Values (and gradients) of the global flat-layout elements [lo, lo + n):
// element `off` of the layout is at p[off - lo]. A span only ever serves the
// offsets of the unit it was acquired for.
struct ParamSpan {
  const float* p = nullptr;
  float* g = nullptr;  // gradients, accumulated (+=) or first-written (grad_whole); null in forward-only passes
  int64_t lo = 0;
  // Which gradients this step wrote (grad_ledger.h); null: the provider
  // keeps none, and every product adds into the gradients.
  GradLedger* ledger = nullptr;
  const float* at(int64_t off) const { return p + (off - lo); }
  // The gradient at `off`, to add into (marks its tensor written).
  float* grad(int64_t off) const {
    if (ledger) ledger->touch(off);
    return g + (off - lo);
  }
  // The gradient of [off, off + n) for a product that writes all of it next:
  // beta 0 when no tensor of the range was written since it was last
  // cleared, so that the product need not read the zeros back.
  WeightGrad grad_whole(int64_t off, int64_t n) const {
    return {g + (off - lo), ledger ? ledger->first_write_beta(off, n) : 1.0f};
  }
};

// The tensors outside the blocks: `embed` serves the embedding (and the tied
// head), `tail` the final norm and an untied head.
struct RootParams {
  ParamSpan embed, tail;
  // The span holding tensor offset `off` (tail starts at the final norm).
  const ParamSpan& of(int64_t off) const { return off >= tail.lo ? tail : embed; }
};

// One block: `dense` serves attention, norms, router, latent projections and
// shared experts (everything but routed experts); `experts` serves the routed
// experts this process computes (ExpertRows::first ...).
struct LayerParams {
  ParamSpan dense, experts;
};

enum class Pass { kForward, kBackward };
enum class Grads { kNo, kYes };  // forward only (evaluation), or forward + backward

// Contract, per micro-batch: acquire_root, then for each layer in order
// acquire_layer(l, kForward) / release_layer(l, kForward); with Grads::kYes
// then for each layer in reverse acquire_layer(l, kBackward) /
// release_layer(l, kBackward); finally release_root. Spans stay valid until
// the matching release. Gradients written into a span are owned by the
// provider after release (FSDP reduce-scatters them into its shard).
class ParamProvider {
 public:
  virtual ~ParamProvider() = default;
  virtual RootParams acquire_root(Grads grads) = 0;
  virtual void release_root() = 0;
  virtual LayerParams acquire_layer(int64_t layer, Pass pass) = 0;
  virtual void release_layer(int64_t layer, Pass pass) = 0;

  // Data parallelism: how many replicas each process a different slice of
  // the global batch (loss gradients are divided by it), and the sum over
  // them of a per-replica count (the cross-entropy denominator).
  virtual int64_t replicas() const { return 1; }
  virtual double sum_over_replicas(double local) { return local; }
  // Routed-expert transport; null = every expert is local (identity).
  virtual ExpertDispatcher* dispatcher() { return nullptr; }
};

// The whole flat parameter and gradient buffers (one process), with an
// optional ledger of the gradients written (the caller clears it with the
// gradients).
class FlatParams final : public ParamProvider {
 public:
  FlatParams(const float* params, float* grads, GradLedger* ledger = nullptr) : span_{params, grads, 0, ledger} {}
  RootParams acquire_root(Grads) override { return {span_, span_}; }
  void release_root() override {}
  LayerParams acquire_layer(int64_t, Pass) override { return {span_, span_}; }
  void release_layer(int64_t, Pass) override {}

 private:
  ParamSpan span_;
};

// Rows the local experts work on, as laid out after dispatch: local expert i
// (global expert first + i) owns rows [begin[i], begin[i + 1]), padded with
// zero rows. Forward fills x and expects y, h, z to be written (h, z are
// kept for the backward); backward fills x, h, z (saved) and dy and expects
// dx to be written, with dz, dh as scratch.
struct ExpertRows {
  int64_t first = 0, count = 0;
  const int64_t* begin = nullptr;          // (count + 1)
  float *x = nullptr, *y = nullptr;        // (rows, Din)
  float *h = nullptr, *z = nullptr;        // (rows, 2F), (rows, F)
  float *dy = nullptr, *dx = nullptr;      // (rows, Din)
  float *dz = nullptr, *dh = nullptr;      // (rows, F), (rows, 2F)
};

// Moves routed rows between this process's tokens and the experts' owners.
// The local layout is FfnActs' (a.begin: rows grouped by global expert, the
// a.kept real rows first in each segment, then padding). Every transfer is
// split in two so the MoE block can compute between them while the rows are
// in flight (the shared experts, the router's backward): *_start packs and
// posts it, *_finish waits and unpacks. Each start is followed by its finish
// before the next start.
// Context parallelism (dist.cp): this process holds two load-balanced
// chunks of every sequence of its micro-batch (model/context_chunks.h);
// attention layers read the other ranks' keys and values through this
// exchange. Rows are (B, heads, rows, width) of elem_bytes each; `full`
// holds all T positions of a sequence, `local` this rank's Tl rows.
class ContextExchange {
 public:
  virtual ~ContextExchange() = default;
  virtual int64_t cp() const = 0;
  virtual int64_t seq_len() const = 0;                        // T, the whole sequence
  virtual const std::vector<int32_t>& positions() const = 0;  // this rank's rows, increasing
  // Fills the rows of `full` that this rank's queries read in a layer of
  // `window` (<= 0: global): every position (all-gather) on a global layer;
  // on a window layer this rank's rows and the window - 1 rows before each
  // of its chunks (the halo, from the previous chunk's owner), every other
  // row zero.
  virtual void gather(void* full, const void* local, int64_t B, int64_t heads, int64_t width, int64_t elem_bytes,
                      int64_t window) = 0;
  // local = the sum over the ranks of their `full` gradient rows at this
  // rank's positions (window layers: each halo's rows go back to their owner).
  virtual void reduce(float* local, const float* full, int64_t B, int64_t heads, int64_t width, int64_t window) = 0;
};

class ExpertDispatcher {
 public:
  virtual ~ExpertDispatcher() = default;
  // Forward, after the gather into a.xe: rows to their experts.
  virtual void dispatch_start(int64_t layer, FfnActs& a, int64_t Din) = 0;
  virtual ExpertRows dispatch_finish(int64_t layer, FfnActs& a, int64_t Din) = 0;
  // Forward, after the experts wrote y: outputs back into a.ye.
  virtual void combine_start(int64_t layer, FfnActs& a, int64_t Din) = 0;
  virtual void combine_finish(int64_t layer, FfnActs& a, int64_t Din) = 0;
  // Backward, after moe_combine_backward filled s.dye: output gradients to the experts.
  virtual void dispatch_grad_start(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) = 0;
  virtual ExpertRows dispatch_grad_finish(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) = 0;
  // Backward, after the experts wrote dx: input gradients back into s.dxe.
  virtual void combine_grad_start(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) = 0;
  virtual void combine_grad_finish(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) = 0;
  // Lets a transfer in flight advance (MPI progresses only inside its
  // calls); the block calls it between the pieces of work it overlaps.
  virtual void progress() {}
};

// Every expert is local: the rows stay where they are (no copies, nothing in flight).
class IdentityDispatcher final : public ExpertDispatcher {
 public:
  explicit IdentityDispatcher(int64_t n_experts) : E_(n_experts) {}
  void dispatch_start(int64_t, FfnActs&, int64_t) override {}
  ExpertRows dispatch_finish(int64_t layer, FfnActs& a, int64_t Din) override;
  void combine_start(int64_t, FfnActs&, int64_t) override {}
  void combine_finish(int64_t, FfnActs&, int64_t) override {}
  void dispatch_grad_start(int64_t, const FfnActs&, FfnScratch&, int64_t) override {}
  ExpertRows dispatch_grad_finish(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) override;
  void combine_grad_start(int64_t, const FfnActs&, FfnScratch&, int64_t) override {}
  void combine_grad_finish(int64_t, const FfnActs&, FfnScratch&, int64_t) override {}

 private:
  int64_t E_;
};

}  // namespace mt
