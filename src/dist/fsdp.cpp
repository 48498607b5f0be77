// fsdp.cpp — unit buffers, gather/free, gradient reduce-scatter, the
// prefetch schedule and weight streaming. Layer l uses weight slot
// l % slots and gradient slot l % 2, so the layer being computed, those
// being prefetched and the one still reducing never collide.
#include "dist/fsdp.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/timer.h"
#include "dist/stager.h"
#include "kernels/cpu/magnitude_prune.h"

namespace mt {

struct FsdpProvider::Unit {
  const ShardUnit* su = nullptr;
  Comm* comm = nullptr;
  float* pbuf = nullptr;  // whole unit, gathered (null until a slot is assigned)
  float* gbuf = nullptr;  // whole-unit gradient
  float* scratch = nullptr;
  std::unique_ptr<Request> gather;
  enum class State { kFree, kInFlight, kReady } state = State::kFree;
  ReduceScatter rs;
  // Streaming a one-rank unit: the copy in flight of its weights, of its
  // gradient back to the store, and whether the store's gradient is zero.
  int64_t fetch = 0, writeback = 0;
  bool store_grad_zero = false;
  std::vector<std::pair<int64_t, int64_t>> sparse;  // sparse streaming: (offset in the unit, numel) per tensor
  std::vector<float> own_p, own_g, own_scratch;  // root units only (layers use the pools)
  bool empty() const { return su->size() == 0; }
};

struct FsdpProvider::Layer {
  Unit dense, experts;
};

struct FsdpProvider::Pool {
  std::vector<std::vector<float>> p;  // per weight slot
  std::vector<float> g[2], scratch[2];  // per gradient slot (scratch: the reduce-scatter's)
  std::vector<int64_t> p_owner;
  int64_t g_owner[2] = {-1, -1};
  explicit Pool(int64_t slots) : p(size_t(slots)), p_owner(size_t(slots), -1) {}
  int64_t slots() const { return int64_t(p.size()); }
  void size_for(const ShardUnit& u, int64_t group) {
    for (auto& b : p)
      if (int64_t(b.size()) < u.size()) b.resize(u.size());
    for (int i = 0; i < 2; ++i) {
      if (int64_t(g[i].size()) < u.size()) g[i].resize(u.size());
      const int64_t sc = u.whole() ? 0 : group * u.mine();
      if (int64_t(scratch[i].size()) < sc) scratch[i].resize(sc);
    }
  }
  int64_t bytes() const {
    int64_t n = 0;
    for (const auto& b : p) n += int64_t(b.size());
    for (int i = 0; i < 2; ++i) n += int64_t(g[i].size() + scratch[i].size());
    return int64_t(sizeof(float)) * n;
  }
};

FsdpProvider::FsdpProvider(Mesh& mesh, const ShardPlan& plan, int64_t n_layers, float* params, float* grads,
                           Prefetch prefetch, ExpertDispatcher* dispatcher, const StreamOptions* stream)
    : mesh_(mesh), plan_(plan), L_(n_layers), params_(params), grads_(grads), prefetch_(prefetch),
      dispatcher_(dispatcher) {
  stream_ = stream != nullptr;
  depth_ = stream_ ? stream->prefetch_layers : (prefetch == Prefetch::kNextLayer ? 1 : 0);
  if (stream_) {
    stager_ = std::make_unique<Stager>(stream->io_threads);
    density_ = stream->expert_density;
  }
  const int64_t slots = stream_ ? depth_ + 1 : 2;
  dense_pool_ = std::make_unique<Pool>(slots);
  expert_pool_ = std::make_unique<Pool>(slots);
  embed_ = std::make_unique<Unit>();
  tail_ = std::make_unique<Unit>();
  embed_->su = &plan.embed();
  tail_->su = &plan.tail();
  layers_.resize(L_);
  for (int64_t l = 0; l < L_; ++l) {
    layers_[l].dense.su = &plan.dense(l);
    layers_[l].experts.su = &plan.experts(l);
  }
  for (Unit* u : {embed_.get(), tail_.get()}) u->comm = &comm_of(*u->su);
  if (stream_ && density_ < 1.0)
    for (Layer& ly : layers_)
      for (const auto& [off, n] : stream->expert_tensors)
        if (off >= ly.experts.su->lo && off + n <= ly.experts.su->hi) ly.experts.sparse.push_back({off - ly.experts.su->lo, n});
  for (Layer& ly : layers_)
    for (Unit* u : {&ly.dense, &ly.experts}) {
      u->comm = &comm_of(*u->su);
      if (!copied(*u)) continue;
      (u == &ly.dense ? *dense_pool_ : *expert_pool_).size_for(*u->su, u->comm->size());
    }
  // Root units keep their own buffers for the whole micro-batch.
  for (Unit* u : {embed_.get(), tail_.get()}) {
    if (!copied(*u)) continue;
    u->own_p.resize(u->su->size());
    u->own_g.resize(u->su->size());
    u->own_scratch.resize(u->su->whole() ? 0 : u->comm->size() * u->su->mine());
    u->pbuf = u->own_p.data();
    u->gbuf = u->own_g.data();
    u->scratch = u->own_scratch.data();
  }
}

FsdpProvider::~FsdpProvider() {
  if (stager_) stager_->wait_all();  // no copy may outlive the buffers
}

bool FsdpProvider::copied(const Unit& u) const { return !u.empty() && (stream_ || !u.su->whole()); }

int64_t FsdpProvider::buffer_bytes() const {
  int64_t n = dense_pool_->bytes() + expert_pool_->bytes();
  for (const Unit* u : {embed_.get(), tail_.get()})
    n += int64_t(sizeof(float) * (u->own_p.size() + u->own_g.size() + u->own_scratch.size()));
  return n;
}

void FsdpProvider::store_grads_zeroed() {
  if (ledger_) ledger_->clear_all();
  for (Unit* u : {embed_.get(), tail_.get()}) u->store_grad_zero = true;
  for (Layer& ly : layers_)
    for (Unit* u : {&ly.dense, &ly.experts}) u->store_grad_zero = true;
}

Comm& FsdpProvider::comm_of(const ShardUnit& u) {
  return u.group == ShardGroup::kWorld ? mesh_.world() : mesh_.fsdp();
}

void FsdpProvider::start_gather(Unit& u) {
  if (!copied(u) || u.state != Unit::State::kFree) return;
  const ShardUnit& s = *u.su;
  if (s.whole()) {  // streaming a one-rank unit: a copy from the store
    u.fetch = stager_->copy(u.pbuf, params_ + s.local, s.size());
    stats_.floats_in += s.size();
  } else {
    u.gather = u.comm->iallgatherv(params_ + s.local, s.mine(), u.pbuf, s.counts.data(), s.displs.data(), DType::kF32,
                                   CommKind::kAllGather);
    if (stream_) stats_.floats_in += s.mine();
  }
  u.state = Unit::State::kInFlight;
}

void FsdpProvider::finish_gather(Unit& u, const char* what) {
  if (!copied(u)) return;
  if (u.state == Unit::State::kFree) start_gather(u);
  if (u.state == Unit::State::kInFlight) {
    if (u.su->whole()) {
      stats_.stall_s += stager_->wait(u.fetch);
    } else {
      u.comm->wait(u.gather.get(), what);
      u.gather.reset();
    }
    u.state = Unit::State::kReady;
    if (!u.sparse.empty()) prune(u);
  }
}

void FsdpProvider::prune(Unit& u) {
  const double t0 = now_seconds();
  const int64_t n = int64_t(u.sparse.size());
  int64_t dense = 0, wire = 0, largest = 0;
  for (const auto& t : u.sparse) largest = std::max(largest, t.second);
  // One scratch slice per thread, sized once (grows only if the thread count does).
  const int threads = omp_get_max_threads();
  if (int64_t(prune_scratch_.size()) < threads * largest) prune_scratch_.resize(size_t(threads * largest));
  // One tensor per iteration: the result does not depend on the thread count.
#pragma omp parallel reduction(+ : dense, wire)
  {
    float* scratch = prune_scratch_.data() + int64_t(omp_get_thread_num()) * largest;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const auto [off, numel] = u.sparse[size_t(i)];
      const int64_t keep = std::llround(density_ * double(numel));
      const int64_t nz = prune_to_largest(u.pbuf + off, numel, keep, scratch);
      dense += 4 * numel;
      wire += sparse_wire_bytes(numel, nz);
    }
  }
  stats_.sparse_dense_bytes += dense;
  stats_.sparse_wire_bytes += wire;
  stats_.prune_s += now_seconds() - t0;
}

void FsdpProvider::free_params(Unit& u) {
  if (!copied(u)) return;
  MT_CHECK(u.state == Unit::State::kReady, "freeing a unit that is not gathered");
  u.state = Unit::State::kFree;
}

ParamSpan FsdpProvider::span(Unit& u) {
  const ShardUnit& s = *u.su;
  ParamSpan sp;
  sp.lo = s.lo;
  if (u.empty()) return sp;
  if (mode_ == Grads::kYes) sp.ledger = ledger_;
  if (!copied(u)) {
    sp.p = params_ + s.local;
    sp.g = mode_ == Grads::kYes ? grads_ + s.local : nullptr;
  } else {
    sp.p = u.pbuf;
    sp.g = mode_ == Grads::kYes ? u.gbuf : nullptr;
  }
  return sp;
}

void FsdpProvider::begin_grads(Unit& u) {
  if (!copied(u)) return;
  finish_reduce(u);
  const size_t bytes = sizeof(float) * size_t(u.su->size());
  if (!u.su->whole() || u.store_grad_zero) {
    std::memset(u.gbuf, 0, bytes);
    if (ledger_) ledger_->clear(u.su->lo, u.su->hi);
  } else {  // streaming: continue the store's sum (gradient accumulation), as in place
    const double t0 = now_seconds();
    std::memcpy(u.gbuf, grads_ + u.su->local, bytes);
    stats_.stall_s += now_seconds() - t0;
    stats_.floats_in += u.su->size();
    if (ledger_) ledger_->mark_written(u.su->lo, u.su->hi);
  }
}

void FsdpProvider::start_reduce(Unit& u) {
  if (!copied(u)) return;
  if (u.su->whole()) {
    u.writeback = stager_->copy(grads_ + u.su->local, u.gbuf, u.su->size());
    u.store_grad_zero = false;
    stats_.floats_out += u.su->size();
    return;
  }
  u.rs.start(*u.comm, u.gbuf, u.su->counts.data(), u.su->displs.data(), u.scratch);
  if (stream_) stats_.floats_out += u.su->mine();
}

void FsdpProvider::finish_reduce(Unit& u) {
  if (u.writeback) {
    stats_.stall_s += stager_->wait(u.writeback);
    u.writeback = 0;
  }
  if (!u.rs.active()) return;
  u.rs.finish(grads_ + u.su->local, ReduceScatter::Mode::kAccumulate, "gradient reduce-scatter");
}

// Binds layer l's units to weight slot l % slots and starts their gathers.
void FsdpProvider::start_layer(int64_t l) {
  if (l < 0 || l >= L_) return;
  Layer& ly = layers_[l];
  for (int kind = 0; kind < 2; ++kind) {
    Unit* u = kind == 0 ? &ly.dense : &ly.experts;
    Pool* pool = kind == 0 ? dense_pool_.get() : expert_pool_.get();
    const int64_t slot = l % pool->slots();
    if (!copied(*u) || u->state != Unit::State::kFree) continue;
    const int64_t owner = pool->p_owner[size_t(slot)];
    MT_CHECK(owner == -1 || owner == l ||
                 (kind == 0 ? layers_[owner].dense : layers_[owner].experts).state == Unit::State::kFree,
             "FSDP slot {} still holds layer {} while layer {} starts", slot, owner, l);
    pool->p_owner[size_t(slot)] = l;
    u->pbuf = pool->p[size_t(slot)].data();
    start_gather(*u);
  }
}

RootParams FsdpProvider::acquire_root(Grads grads) {
  mode_ = grads;
  start_gather(*embed_);
  start_gather(*tail_);
  for (int64_t d = 0; d < depth_; ++d) start_layer(d);
  finish_gather(*embed_, "all-gather (embedding)");
  finish_gather(*tail_, "all-gather (final norm, head)");
  if (mode_ == Grads::kYes) {
    begin_grads(*embed_);
    begin_grads(*tail_);
  }
  return RootParams{span(*embed_), span(*tail_)};
}

LayerParams FsdpProvider::acquire_layer(int64_t l, Pass pass) {
  Layer& ly = layers_[l];
  start_layer(l);
  for (int64_t d = 1; d <= depth_; ++d) start_layer(pass == Pass::kForward ? l + d : l - d);
  finish_gather(ly.dense, "all-gather (layer weights)");
  finish_gather(ly.experts, "all-gather (expert weights)");
  if (pass == Pass::kBackward && mode_ == Grads::kYes) {
    const int slot = int(l % 2);
    for (int kind = 0; kind < 2; ++kind) {
      Unit* u = kind == 0 ? &ly.dense : &ly.experts;
      Pool* pool = kind == 0 ? dense_pool_.get() : expert_pool_.get();
      if (!copied(*u)) continue;
      const int64_t owner = pool->g_owner[slot];
      if (owner >= 0 && owner != l) finish_reduce(kind == 0 ? layers_[owner].dense : layers_[owner].experts);
      pool->g_owner[slot] = l;
      u->gbuf = pool->g[slot].data();
      u->scratch = pool->scratch[slot].data();
      begin_grads(*u);
    }
  }
  return LayerParams{span(ly.dense), span(ly.experts)};
}

void FsdpProvider::release_layer(int64_t l, Pass pass) {
  Layer& ly = layers_[l];
  // The last layer's backward comes right after its forward: keep it.
  if (pass == Pass::kForward && mode_ == Grads::kYes && l == L_ - 1) return;
  free_params(ly.dense);
  free_params(ly.experts);
  if (pass == Pass::kBackward) {
    start_reduce(ly.dense);
    start_reduce(ly.experts);
  }
  mesh_.world().progress();
}

void FsdpProvider::release_root() {
  if (mode_ == Grads::kYes) {
    start_reduce(*embed_);
    start_reduce(*tail_);
    for (Layer& ly : layers_) {
      finish_reduce(ly.dense);
      finish_reduce(ly.experts);
    }
    finish_reduce(*embed_);
    finish_reduce(*tail_);
  }
  for (Unit* u : {embed_.get(), tail_.get()})
    if (copied(*u)) u->state = Unit::State::kFree;
  for (Layer& ly : layers_)
    for (Unit* u : {&ly.dense, &ly.experts}) {
      MT_CHECK(u->state != Unit::State::kInFlight, "a gather is still in flight at the end of the micro-batch");
      u->state = Unit::State::kFree;
    }
  for (Pool* p : {dense_pool_.get(), expert_pool_.get()}) {
    std::fill(p->p_owner.begin(), p->p_owner.end(), -1);
    p->g_owner[0] = p->g_owner[1] = -1;
  }
}

double FsdpProvider::sum_over_replicas(double local) {
  mesh_.world().allreduce_sum(&local, 1, "allreduce (token count)");
  return local;
}

}  // namespace mt
