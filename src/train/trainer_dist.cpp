// trainer_dist.cpp — what changes when the trainer is one rank of an MPI job
// (docs/distributed.md): start-up agreement check, the ep x fsdp mesh, the
// data-parallel split of each micro-batch (rank r computes sequences
// [r*B/N, (r+1)*B/N) of every micro-batch of B, so the global batch is the
// same for any world size), sharded parameters / gradients / optimizer state,
// sums of the step's statistics over ranks, and sharded checkpoints. One
// process runs the same code as a world of one: a LocalComm, a 1 x 1 mesh and
// a shard plan that owns every element, whose FSDP units are used in place.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ckpt/checkpoint.h"
#include "core/hash.h"
#include "core/stop_signal.h"
#include "core/threads.h"
#include "dist/expert_parallel.h"
#include "dist/fsdp.h"
#include "dist/gather_layout.h"
#include "dist/mesh.h"
#include "dist/mpi_comm.h"
#include "dist/shard_plan.h"
#include "kernels/cpu/gemm.h"
#include "model/context_chunks.h"
#include "train/init_weights.h"
#include "train/trainer.h"

#include <unistd.h>

#include "rundir/events_log.h"
#include "rundir/heartbeat.h"

#include <future>

#include "core/timer.h"
#include "train/trainer_dist.h"

namespace mt {


namespace {

// xxh64 of this executable's bytes: ranks running different builds disagree.
std::string binary_id() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string b = ss.str();
  return hex64(xxh64(b.data(), b.size()));
}

// Every rank must hold the same value of `what`; names the first that differs.
Status check_agreement(Comm& world, const std::string& what, const std::string& value, const std::string& hint) {
  const std::string mine = hex64(xxh64(value.data(), value.size()));
  const std::vector<std::string> all = world.allgather_strings(mine, "start-up agreement check");
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      return Status::errorf("rank {}'s {} differs from rank 0's (xxh64 {} vs {}): {}", r, what, all[r], all[0], hint);
  return Status::ok();
}

}  // namespace

Status Trainer::setup_dist(const TrainerOptions& opt) {
  if (!opt.comm) own_comm_ = std::make_unique<LocalComm>();
  Comm& w = opt.comm ? *opt.comm : *own_comm_;
  set_comm_context("start-up");
  if (w.size() > 1) {
    // Same binary, same resolved config and same run options everywhere:
    // otherwise the ranks would disagree on every size below.
    MT_RETURN_IF_ERROR(check_agreement(w, "moetrain binary", binary_id(),
                                       "every rank must run the same build of moetrain"));
    const std::string options = fmt::format("{}\nrun_dir={}\nresume={}", to_toml(cfg_), opt.run_dir, opt.resume);
    MT_RETURN_IF_ERROR(check_agreement(w, "resolved config and run options", options,
                                       "every rank must get the same --config, --set, --run-dir and --resume"));
  }
  auto shape = resolve_mesh(w.size(), cfg_.dist.ep, cfg_.dist.fsdp, cfg_.model.n_experts);
  if (!shape) return Status::errorf("{}: {}", cfg_.source, shape.status().message());
  const TrainConfig& tc = cfg_.train;
  const int64_t N = w.size(), cp = cfg_.dist.cp;
  MT_RETURN_IF_ERROR(check_context_parallel(N));
  const int64_t replicas = N / cp;  // rank groups that split the batch (cp ranks share each sequence)
  if (tc.batch_size % replicas != 0) {
    // Under Slurm the rank count is the job's task count: name it too.
    const char* tasks = std::getenv("SLURM_NTASKS");
    return Status::errorf(
        "{}: train.batch_size = {} must be a multiple of the {} {}{}: each micro-batch of batch_size sequences is "
        "split evenly over them",
        cfg_.source, tc.batch_size, replicas,
        cp > 1 ? fmt::format("rank groups ({} ranks / dist.cp = {}, sharing each sequence)", N, cp) : "ranks",
        tasks ? fmt::format(" (the Slurm job's SLURM_NTASKS = {})", tasks) : "");
  }
  const int64_t Bl = tc.batch_size / replicas;
  for (const PhaseSpan& ph : data_->schedule().phases())  // every phase's sequence length
    if (cfg_.model.n_experts > 0 && (Bl * ph.seq_len / cp) % cfg_.model.group_size(ph.seq_len) != 0)
      return Status::errorf(
          "{}: model.routing_group = {} tokens must divide each rank's {} tokens per micro-batch "
          "(batch_size / ranks x seq_len{}), so no routing group straddles two ranks",
          cfg_.source, cfg_.model.group_size(ph.seq_len), Bl * ph.seq_len / cp,
          ph.seq_len != tc.seq_len ? fmt::format(" of {}", ph.name) : "");
  if (tc.threads == 0 && N > 1) set_num_threads(default_rank_threads());
  dist_ = std::make_unique<Dist>(w, shape.value());
  dist_->local_batch = Bl;
  dist_->offset = w.rank() / cp * Bl;
  dist_->cp = cp;
  dist_->mesh = std::make_unique<Mesh>(w, shape.value());
  if (cp > 1) dist_->cp_group = w.split(int(w.rank() / cp), int(w.rank() % cp));
  return Status::ok();
}

Status Trainer::check_context_parallel(int64_t world) const {
  const int64_t cp = cfg_.dist.cp;
  if (cp == 1) return Status::ok();
  const ConfigOrigins& o = cfg_.origins;
  if (world % cp != 0)
    return o.error("dist.cp", fmt::format("{} does not divide the {} ranks this job was started with", cp, world));
  const ModelConfig& m = cfg_.model;
  for (int64_t l = 0; l < m.n_layers; ++l)
    if (m.is_delta(l))
      return o.error("dist.cp", fmt::format("layer {} is a gated-delta layer (model.layer_pattern): its recurrent "
                                            "state runs along the whole sequence, which context parallelism splits",
                                            l));
  for (const PhaseSpan& ph : data_->schedule().phases()) {
    const std::string where = ph.seq_len != cfg_.train.seq_len ? fmt::format(" of phase {}", ph.name) : "";
    if (ph.seq_len % (2 * cp) != 0)
      return o.error("dist.cp", fmt::format("sequences of {} tokens{} do not divide into 2 x {} = {} chunks "
                                            "(train.seq_len must be a multiple of 2 dist.cp)",
                                            ph.seq_len, where, cp, 2 * cp));
    const int64_t c = context_chunk_len(ph.seq_len, cp);
    if (m.window > 1 && m.window < ph.seq_len && m.window - 1 > c)
      return o.error("model.window",
                     fmt::format("{} needs the {} tokens before each chunk, more than a chunk of {} tokens{} holds "
                                 "(seq_len / 2 dist.cp): a halo comes from the one chunk before",
                                 m.window, m.window - 1, c, where));
    if (m.n_experts > 0 && c % m.group_size(ph.seq_len) != 0)
      return o.error("model.routing_group",
                     fmt::format("{} tokens must divide a context-parallel chunk of {} tokens{} (seq_len / 2 "
                                 "dist.cp), so every routing group stays in one chunk as in one process",
                                 m.group_size(ph.seq_len), c, where));
  }
  return Status::ok();
}

ContextExchange* Trainer::context_exchange(int64_t seq_len) {
  if (dist_->cp == 1) return nullptr;
  if (!dist_->context || dist_->context->seq_len() != seq_len)
    dist_->context = std::make_unique<ContextParallel>(*dist_->cp_group, seq_len);
  return dist_->context.get();
}

bool Trainer::is_root() const { return dist_->world.rank() == 0; }
int64_t Trainer::local_batch() const { return dist_->local_batch; }
int64_t Trainer::batch_offset() const { return dist_->offset; }

std::vector<Optimizer::Range> Trainer::owned_ranges(int64_t rank) const {
  const ShardPlan plan(model_->layout(), cfg_.model, dist_->shape, rank);
  std::vector<Optimizer::Range> out;
  for (const OwnedRange& r : plan.owned()) out.push_back({r.lo, r.hi, r.local});
  return out;
}

Status Trainer::init_local_params() {
  const ParamLayout& L = model_->layout();
  Dist& d = *dist_;
  d.plan = std::make_unique<ShardPlan>(L, cfg_.model, d.shape, d.world.rank());
  auto store = WeightStore::open(cfg_, opt_.run_dir, d.world.rank(), d.world.size(), d.plan->local_size());
  if (!store) return store.status();
  store_ = std::move(store.value());
  std::vector<std::vector<Optimizer::Range>> all_owned;
  for (int64_t r = 0; r < d.world.size(); ++r) all_owned.push_back(owned_ranges(r));
  optim_ = std::make_unique<Optimizer>(L, cfg_.train.optim, cfg_.train.optimizer, cfg_.train.schedule.lr,
                                       std::move(all_owned), d.world, store_->dir());
  MT_RETURN_IF_ERROR(optim_->storage_status());
  // A resume reads its own checkpoint over whatever this writes: the init checkpoint is not needed then.
  const bool resuming = opt_.resume && !opt_.run_dir.empty() && find_latest_checkpoint_dir(opt_.run_dir).is_ok();
  if (!cfg_.train.init_from.empty() && !resuming) {
    // Fine-tuning: the checkpoint's weights, every rank its shard of them.
    auto start = load_init_weights(cfg_, L);
    if (!start) return start.status();
    for (const OwnedRange& r : d.plan->owned())
      std::copy(start->params.begin() + r.lo, start->params.begin() + r.hi, store_->params().begin() + r.local);
    optim_->init_radii(start->params.data());
    init_router_bias_ = std::move(start->router_bias);
    init_from_ = fmt::format("weights of {} (step {}), fresh optimizer state", start->ckpt_dir, start->step);
  } else if (d.plan->local_size() == L.total()) {
    // A world of one owns every element in layout order: initialise in place.
    init_params(store_->params().data(), L, cfg_.model, cfg_.train.seed);
    optim_->init_radii(store_->params().data());
  } else {
    // Values depend only on (seed, tensor name): initialise the whole model and keep this rank's shard.
    std::vector<float> full(L.total());
    init_params(full.data(), L, cfg_.model, cfg_.train.seed);
    for (const OwnedRange& r : d.plan->owned())
      std::copy(full.begin() + r.lo, full.begin() + r.hi, store_->params().begin() + r.local);
    optim_->init_radii(full.data());
  }
  if (d.shape.ep > 1)
    d.ep = std::make_unique<EpDispatcher>(d.mesh->ep(), cfg_.model, d.local_batch, model_->rows(),
                                          cfg_.dist.ep_overlap ? EpOverlap::kOn : EpOverlap::kOff);
  StreamOptions so{cfg_.stream.prefetch_layers, cfg_.stream.io_threads, cfg_.stream.expert_density, {}};
  for (const ParamEntry& e : L.entries())
    if (e.expert >= 0) so.expert_tensors.push_back({e.offset, e.numel});
  d.fsdp = std::make_unique<FsdpProvider>(
      *d.mesh, *d.plan, cfg_.model.n_units(), store_->params().data(), store_->grads().data(),
      cfg_.dist.prefetch ? Prefetch::kNextLayer : Prefetch::kOff, d.ep.get(), store_->streamed() ? &so : nullptr);
  d.ledger = std::make_unique<GradLedger>(L);
  d.fsdp->set_grad_ledger(d.ledger.get());
  return Status::ok();
}

int64_t Trainer::compute_memory_bytes() const {
  return model_->activation_bytes() + dist_->fsdp->buffer_bytes();
}

int64_t Trainer::store_bytes() const {
  return int64_t(sizeof(float)) * (store_->params().size() + store_->grads().size()) + optim_->state_bytes();
}

Status Trainer::check_stream_budget() {
  const StreamConfig& sc = cfg_.stream;
  const double gib = double(int64_t(1) << 30);
  const int64_t bufs = dist_->fsdp->buffer_bytes();
  // auto: recompute layer activations only when the kept ones do not fit.
  if (sc.compute_memory_bytes > 0 && cfg_.train.activation_checkpointing == ActivationCheckpointing::kAuto &&
      model_->activation_bytes() + bufs > sc.compute_memory_bytes)
    model_->set_layer_activations(LayerActivations::kRecompute);
  const int64_t acts = model_->activation_bytes(), have = acts + bufs;
  const bool recompute = model_->layer_activations() == LayerActivations::kRecompute;
  const int64_t state = store_bytes();
  if (is_root() && opt_.print_config)
    fmt::print(stderr,
               "# stream: store {}{}: {:.4g} GiB of training state on this rank; compute memory {:.4g} GiB "
               "(activations {:.4g} GiB{}, layer buffers {:.4g} GiB for {} prefetched layers){}\n",
               sc.store == StreamStore::kDisk ? "disk " : "host memory", store_->dir(), double(state) / gib,
               double(have) / gib, double(acts) / gib, recompute ? " with layers recomputed" : "", double(bufs) / gib,
               sc.prefetch_layers,
               sc.compute_memory_bytes > 0 ? fmt::format(", budget {:.4g} GiB", double(sc.compute_memory_bytes) / gib)
                                           : std::string());
  if (sc.compute_memory_bytes == 0 || have <= sc.compute_memory_bytes) return Status::ok();
  return cfg_.origins.error(
      "stream.compute_memory_bytes",
      fmt::format("{} bytes cannot hold this run's compute memory of {} bytes: activations of one micro-batch {} "
                  "({}; train.batch_size, train.seq_len) and layer buffers {} (stream.prefetch_layers + 1 weight "
                  "slots and 2 gradient slots of the largest unit, the embedding and head)",
                  sc.compute_memory_bytes, have, acts,
                  recompute ? "layers recomputed, only their inputs kept"
                            : "every layer's kept; train.activation_checkpointing = \"layers\" or \"auto\" keeps "
                              "only layer inputs",
                  bufs));
}

void Trainer::begin_step() {
  // No gemm_weights_changed() here: whatever sets the weights bumps the
  // packed copies' version itself (refresh_bf16_params: initialisation,
  // restore, rollback; apply_update), so the copies the update filled
  // (gemm_pack_final_weights) stay current into this step.
  set_comm_context(fmt::format("step {}", step_ + 1));
  beat("step");
  if (opt_.faults) opt_.faults->at_step_begin(dist_->world.rank(), step_ + 1);
  dist_->world.stats().reset();
}

ForwardStats Trainer::forward_backward(float grad_scale, const float* bias) {
  return model_->forward_backward(*dist_->fsdp, batch_.data(), grad_scale, bias);
}

double Trainer::forward_loss(const float* bias) {
  double share = model_->forward(*dist_->fsdp, batch_.data(), bias).loss;
  dist_->world.allreduce_sum(&share, 1, "allreduce (eval loss)");
  return share;
}

bool Trainer::all_ranks(bool ok) {
  int64_t failed = ok ? 0 : 1;
  dist_->world.allreduce_sum(&failed, 1, "allreduce (eval data)");
  return failed == 0;
}

void Trainer::reduce_step_stats(StepResult& r) {
  Comm& w = dist_->world;
  // losses: shares of the global means; router losses: per-rank means over equal token counts.
  double d[4] = {r.loss, r.mtp_loss, r.aux_loss, r.z_loss};
  w.allreduce_sum(d, 4, "allreduce (step statistics)");
  r.loss = d[0];
  r.mtp_loss = d[1];
  r.aux_loss = d[2] / double(w.size());
  r.z_loss = d[3] / double(w.size());
  // How many ranks a stop signal reached, per signal: every rank then knows
  // the same (SIGUSR1, "requeue me", wins over SIGTERM, a scheduler's, which
  // wins over SIGINT). SIGUSR1 counts in the high bits of SIGTERM's slot, so
  // the reduction keeps its size (the closed-form volume in comm_volume.h).
  const int sig = stop_signal_received();
  constexpr int64_t kUsr1 = int64_t(1) << 32;
  std::vector<int64_t> n = {r.dropped,     r.assignments,
                            sig == SIGINT, sig == SIGTERM ? 1 : sig == SIGUSR1 ? kUsr1 : 0,
                            r.keys_global, r.keys_local};
  for (const auto& layer : r.expert_load) n.insert(n.end(), layer.begin(), layer.end());
  n.insert(n.end(), r.bucket_dropped.begin(), r.bucket_dropped.end());
  w.allreduce_sum(n.data(), int64_t(n.size()), "allreduce (step statistics)");
  r.dropped = n[0];
  r.assignments = n[1];
  r.stop_signal = n[3] >= kUsr1 ? SIGUSR1 : n[3] > 0 ? SIGTERM : n[2] > 0 ? SIGINT : 0;
  r.keys_global = n[4];
  r.keys_local = n[5];
  size_t k = 6;
  for (auto& layer : r.expert_load)
    for (auto& c : layer) c = n[k++];
  for (auto& c : r.bucket_dropped) c = n[k++];
}

double Trainer::global_grad_norm() {
  const double local = optim_->local_sum_squares(store_->grads().data());
  double ss = local;
  dist_->world.allreduce_sum(&ss, 1, "allreduce (gradient norm)");
  grad_culprits_.clear();
  if (!std::isfinite(ss)) {
    // Every rank takes this branch (the sum is global): find whose shard it is.
    const int n = dist_->world.size();
    std::vector<double> all(size_t(n), 0.0);
    std::vector<int64_t> counts(static_cast<size_t>(n), 1), offsets(static_cast<size_t>(n), 0);
    for (int r = 0; r < n; ++r) offsets[size_t(r)] = r;
    dist_->world.allgatherv(&local, 1, all.data(), counts.data(), offsets.data(), DType::kF64,
                            "allgather (non-finite gradient)");
    for (int r = 0; r < n; ++r)
      if (!std::isfinite(all[size_t(r)])) grad_culprits_ += (grad_culprits_.empty() ? "" : ", ") + std::to_string(r);
  }
  return std::sqrt(ss);
}

void Trainer::apply_update(double lr, double norm) {
  // The bf16 GEMM shadow is refreshed, and the gradients are zeroed for the
  // next step, by the update's own pass.
  // Each plain AdamW tensor's packed GEMM copies are filled as its values
  // become final, from cache (gemm_pack_final_weights), not by the next
  // step's first products from memory.
  Optimizer::FinalRange pack;
  if (packed_base_) pack = [](const float* p, int64_t n) { gemm_pack_final_weights(p, n); };
  optim_->update(store_->params().data(), store_->grads().data(), lr, step_ + 1, norm,
                 params_bf16_.empty() ? nullptr : params_bf16_.data(), store_->grads().data(), pack);
  gemm_weights_changed();  // an evaluation before the next step reads the new values
}

void Trainer::zero_grads() {
  float* g = store_->grads().data();
  const int64_t n = int64_t(store_->grads().size());
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) g[i] = 0.0f;
}

void Trainer::beat(const char* phase) {
  if (opt_.heartbeat_dir.empty()) return;
  static const std::string host = [] {
    char name[256] = {0};
    gethostname(name, sizeof name - 1);
    return std::string(name);
  }();
  write_heartbeat(opt_.heartbeat_dir, {dist_->world.rank(), int64_t(getpid()), step_ + 1, host, phase, wall_seconds(),
                                       last_step_s_, last_wait_s_});
}

void Trainer::finish_step(StepResult& r) {
  r.comm = dist_->world.stats();
  last_step_s_ = r.seconds;
  last_wait_s_ = r.comm.wait_seconds;
  r.world_size = dist_->world.size();
}

// ---- checkpoints ----------------------------------------------------------------

std::vector<TensorView> Trainer::checkpoint_views() const {
  std::vector<TensorView> views;
  const ParamLayout& L = model_->layout();
  // The piece of every tensor that falls in one of this rank's owned ranges,
  // with the optimizer's state of it (adam_m/adam_v, or muon_m).
  for (const OwnedRange& r : dist_->plan->owned())
    for (size_t i = 0; i < L.entries().size(); ++i) {
      const ParamEntry& e = L.entries()[i];
      const int64_t lo = std::max(r.lo, e.offset), hi = std::min(r.hi, e.offset + e.numel);
      if (lo >= hi) continue;
      const int64_t local = r.local + (lo - r.lo), off = lo - e.offset, count = hi - lo;
      views.push_back({e.name, e.shape, store_->params().data() + local, off, count});
      for (const Optimizer::StateSlot& s : optim_->state_at(int64_t(i), local))
        views.push_back({s.prefix + e.name, e.shape, s.data, off, count, s.data_bf16});
    }
  if (!router_bias_.empty() && is_root())
    views.push_back({"router_bias", {int64_t(router_bias_.size())}, router_bias_.data()});
  // Hyperball's radii (replicated): rank 0 writes them.
  if (!optim_->radii().empty() && is_root())
    views.push_back({"hyperball_radius", {int64_t(optim_->radii().size())}, optim_->radii().data()});
  return views;
}

Status Trainer::load_checkpoint_tensors(const LoadedCheckpoint& ck) {
  // Any world size wrote it: take this rank's ranges of the whole tensors.
  std::vector<float> widened;
  for (const TensorView& v : checkpoint_views()) {
    if (v.name == "router_bias" || v.name == "hyperball_radius") continue;
    if (!v.data_bf16) {
      MT_RETURN_IF_ERROR(load_range_into(ck, v.name, v.offset, v.count, const_cast<float*>(v.data)));
      continue;
    }
    // Moments held in bf16: saved from bf16 they round back exactly; saved
    // by an fp32-state run they round to nearest once (docs/optimizers.md).
    widened.resize(size_t(v.count));
    MT_RETURN_IF_ERROR(load_range_into(ck, v.name, v.offset, v.count, widened.data()));
    convert_f32_to_bf16_span(const_cast<bf16*>(v.data_bf16), widened.data(), v.count);
  }
  if (!router_bias_.empty())
    MT_RETURN_IF_ERROR(load_into(ck, "router_bias", {int64_t(router_bias_.size())}, router_bias_.data()));
  std::vector<float>& radii = optim_->radii();
  if (!radii.empty()) MT_RETURN_IF_ERROR(load_into(ck, "hyperball_radius", {int64_t(radii.size())}, radii.data()));
  return Status::ok();
}

void Trainer::gather_params(std::vector<float>& full) const {
  gather_layout(dist_->world, model_->layout(), cfg_.model, dist_->shape, store_->params().data(), full);
}

// Whole-model hash, independent of the world size: every rank's buffers are
// gathered and put back in layout order (each rank's plan is computable).
// The hash reads the model a chunk of the layout at a time, so a store
// larger than memory (stream.store = "disk") is hashed in a few MiB; xxh64
// over the chunks in order is the hash of the whole.
std::string Trainer::state_hash() const {
  Hasher h;
  using Read = std::function<void(int64_t lo, int64_t n, float* out)>;  // this rank's local storage
  const Read reads[] = {
      [&](int64_t lo, int64_t n, float* out) {
        std::copy(store_->params().data() + lo, store_->params().data() + lo + n, out);
      },
      [&](int64_t lo, int64_t n, float* out) { optim_->read_m(lo, n, out); },
      [&](int64_t lo, int64_t n, float* out) { optim_->read_v(lo, n, out); }};  // v: 0 where Muon keeps none
  for (const Read& read : reads)
    for_each_gathered_chunk(
        dist_->world, model_->layout(), cfg_.model, dist_->shape, read,
        [&](int64_t, const std::vector<float>& chunk) { h.update(chunk.data(), chunk.size() * sizeof(float)); });
  h.update(router_bias_.data(), router_bias_.size() * sizeof(float));
  h.update(optim_->radii().data(), optim_->radii().size() * sizeof(float));  // nothing without Hyperball
  return hex64(h.digest());
}

}  // namespace mt
