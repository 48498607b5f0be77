// trainer.h — the training loop: data -> forward/backward over
// gradient-accumulation micro-batches -> clip + optimizer -> metrics line ->
// checkpoint. Owns this rank's shard of the flat parameter/gradient buffers,
// optimizer state and the aux-loss-free router biases, and runs FSDP x EP
// (trainer_dist.cpp, docs/distributed.md); one process is a world of one
// whose shard is the whole model, so every rank of every world size runs the
// same code. Deterministic: the state after step s is a pure function of
// (config, seed, s), whether or not the run was resumed.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "core/float_buffer.h"
#include <functional>
#include <map>

#include "ckpt/checkpoint.h"  // find_latest_checkpoint_dir: the trainer's callers resume with it
#include "core/status.h"
#include "train/phased_data.h"
#include "comm/comm.h"
#include "model/transformer.h"
#include "optim/optimizer.h"
#include "rundir/metrics_log.h"
#include "train/checkpointer.h"
#include "train/fault_injection.h"
#include "train/health_monitor.h"
#include "train/run_config.h"
#include "train/step_result.h"
#include "train/rl_feed.h"
#include "train/weight_store.h"

namespace mt {

struct TensorView;
struct LoadedCheckpoint;

struct TrainerOptions {
  std::string run_dir;          // metrics.jsonl and checkpoints/ go here; empty = none
  bool resume = false;          // continue from the newest valid checkpoint, if any
  double peak_gflops = 0.0;     // MFU denominator; 0 = measure at start
  bool progress = true;         // live progress line on stderr
  bool print_config = true;
  Comm* comm = nullptr;         // the world; null = a world of one (the trainer owns a LocalComm)
  FaultInjector* faults = nullptr;  // test hook called at fixed points; null = none
  // Stop after this step (with a checkpoint there) as if interrupted; the
  // schedule is still train.steps', so a resume continues the same run. A
  // ladder takes cooldown branches from such stops. 0 = run to the end.
  int64_t stop_at_step = 0;
  // Supervised runs: every rank keeps DIR/rank_R.json current (heartbeat.h). "" = none.
  std::string heartbeat_dir;
};

// Limits of the CPU kernels on a valid config (at most 256 experts, top-k
// at most 64; no multi-head latent attention or group-limited routing yet,
// which only the planner models), as errors naming the key.
Status check_trainer_limits(const RunConfig& cfg);

// On resume: whether train.steps may change from `was` to `now` at `step`
// (only if every learning rate and batch already applied is unchanged).
Status check_run_length_change(const std::string& dir, const RunConfig& was, const RunConfig& now, int64_t step);

class Trainer {
 public:
  static Result<std::unique_ptr<Trainer>> create(const RunConfig& cfg, const TrainerOptions& opt);
  ~Trainer();

  // Trains until train.steps, writing metrics and checkpoints.
  Status run();
  // One optimizer step (used by run() and by `moetrain bench`).
  StepResult train_step();

  int64_t step() const { return step_; }
  // The stop signal (SIGINT, SIGTERM) that ended run() early with a
  // checkpoint, or 0 (core/stop_signal.h; the caller installs the handlers).
  int stopped_by_signal() const { return stopped_by_signal_; }
  // Model FLOPs of a step with no assignment dropped (model/flops.h), and
  // of the step `r` as it ran: less its dropped assignments' expert work.
  double flops_per_step() const;
  double flops_of(const StepResult& r) const;
  double peak_gflops() const { return peak_gflops_; }
  // xxh64 over parameters, optimizer moments and router biases of the whole
  // model, in layout order: the same for any world size (under MPI a
  // collective that gathers every rank's shard).
  std::string state_hash() const;
  const Transformer& model() const { return *model_; }
  // Activations plus the layer buffers (streaming, FSDP): what compute memory
  // holds; with streaming the parameters stay in the store.
  int64_t compute_memory() const { return compute_memory_bytes(); }

 private:
  Trainer(const RunConfig& cfg, const TrainerOptions& opt);
  Status save_checkpoint();
  Status restore(const std::string& dir, bool keep_spike_counters = false);
  void write_metrics(const StepResult& r);
  void update_router_bias(const StepResult& r);
  void evaluate(StepResult& r);  // held-out loss per bucket (or overall) into r
  // Reinforcement learning (rl.enabled): the micro-batches of a step on the
  // feed's rollouts, its held-out pass@k, and the whole model's parameters
  // they are sampled from (gathered from every rank's shard).
  ForwardStats rl_micro_batch(int64_t micro, float grad_scale, const float* bias, RlStepFigures& f);
  void rl_evaluate(StepResult& r);
  void gather_params(std::vector<float>& full) const;
  void note_phase_end(int64_t steps_done);
  // The model of a phase's shape (sequence length, RoPE base) over the same parameters.
  std::unique_ptr<Transformer> make_model(const PhaseSpan& ph, LayerActivations acts);
  Status enter_phase(int64_t step);  // the model (and EP buffers) for the phase of step `step`
  void print_ledger() const;         // rank 0, at the end: tokens and capacity drops per bucket  // phased runs:
                                     // events.jsonl's phase_end, with the phase's ledger

  // Distribution (trainer_dist.cpp): one path for any world size; a single
  // process runs it as a world of one.
  struct Dist;
  std::unique_ptr<Comm> own_comm_;  // the LocalComm of a world of one
  std::unique_ptr<Dist> dist_;
  Status setup_dist(const TrainerOptions& opt);  // mesh, shard plan, start-up agreement check
  // dist.cp against the world, the model and every phase's sequences (errors name the key).
  Status check_context_parallel(int64_t world) const;
  // The K/V exchange of sequences of seq_len tokens (made anew when a phase changes it); null without dist.cp.
  ContextExchange* context_exchange(int64_t seq_len);
  int64_t local_batch() const;     // sequences of each micro-batch this rank computes
  int64_t batch_offset() const;    // index of its first one within the micro-batch
  bool is_root() const;            // rank 0 (writes metrics, prints)
  ForwardStats forward_backward(float grad_scale, const float* bias);
  double forward_loss(const float* bias);  // evaluation forward on batch_: global mean loss
  bool all_ranks(bool ok);         // logical and over ranks
  void reduce_step_stats(StepResult& r);   // sums / means over ranks
  double global_grad_norm();               // pre-clip L2 norm of the whole gradient (all ranks)
  void apply_update(double lr, double norm);  // clip by the global norm + the optimizer on the shard; zeroes the grads
  void zero_grads();                          // a pass of its own, after a skipped step
  Status health_check(int64_t step);          // health_->check with the recompute check's forward on this rank
  Status rollback(int64_t spike_step);     // spike policy rollback: newest checkpoint, skip the data since
  // Per-bucket tokens of the sequences [from, to) of step `step`'s segment, into skipped_tokens_.
  void record_skipped(int64_t step, int64_t from, int64_t to);
  const PhaseSchedule& schedule() const { return data_->schedule(); }
  void begin_step();                       // per-step comm accounting (and fault injection)
  void finish_step(StepResult& r);         // comm figures of the step into r
  void beat(const char* phase);            // heartbeat (supervised runs)
  double last_step_s_ = -1, last_wait_s_ = -1;  // of the last step, for the heartbeat
  // The layout ranges rank r's buffers hold (any rank's: the plans are pure functions).
  std::vector<Optimizer::Range> owned_ranges(int64_t rank) const;
  // Deterministic init of the full model, keeping this rank's shard; creates
  // the optimizer (Hyperball's radii come from the whole initial model).
  Status init_local_params();
  // This rank's pieces of every saved tensor (whole tensors in one process).
  std::vector<TensorView> checkpoint_views() const;
  std::unique_ptr<Checkpointer> ckpt_;  // the checkpoints: snapshot, background write, collective commit
  // A run that stops because it diverged, or failed a health check, still
  // commits the checkpoint being written: it was snapshotted before the bad
  // step, or right after a check that passed, so it is the last good one
  // (collective; every rank reaches it from the same reduced verdict).
  Status stop_keeping_last_checkpoint(Status why);
  // With periodic health checks (health.every > 0), a checkpoint is taken
  // only right after a check passed: the step's own, or one run for it.
  Status checked_checkpoint(int64_t step);
  int stopped_by_signal_ = 0;
  Status load_checkpoint_tensors(const LoadedCheckpoint& ck);

  RunConfig cfg_;
  TrainerOptions opt_;
  std::unique_ptr<PhasedData> data_;  // the phases' sources, their plans and the skipped data
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Optimizer> optim_;
  // This rank's parameters and gradients: in place, or streamed from host
  // memory or from memory-mapped files (chosen once, at creation).
  std::unique_ptr<WeightStore> store_;
  std::vector<float> router_bias_;
  std::vector<float> init_router_bias_;  // train.init_from's router biases, until create() installs them
  std::string init_from_;                // what train.init_from started the run from ("" = seeded init)
  int64_t compute_memory_bytes() const;  // activations + the provider's buffers
  int64_t store_bytes() const;           // parameters, gradients, optimizer state of this rank
  Status check_stream_budget();          // stream.compute_memory_bytes against compute_memory_bytes()
  std::vector<bf16> params_bf16_;  // bf16 precision: GEMM copy of params_, refreshed after every update
  const float* packed_base_ = nullptr;  // the parameters registered for packed GEMM weights (train.pack_weights)
  void refresh_bf16_params();
  std::vector<int32_t> batch_;
  int64_t step_ = 0;
  std::unique_ptr<HealthMonitor> health_;  // health checks, spike verdicts, rollback limits
  std::string grad_culprits_;  // ranks whose gradient shard was not finite this step ("" if none)
  std::map<std::string, int64_t> skipped_tokens_;  // per bucket, skipped by the spike guard
  std::vector<int64_t> dropped_total_;  // per bucket (PhasedData::bucket_names()): assignments dropped so far
  double peak_gflops_ = 0.0;
  std::unique_ptr<MetricsLog> metrics_;  // rank 0 with a run directory
  std::unique_ptr<RlFeed> rl_;           // rl.enabled: the rollouts the steps train on
  PolicyObjective policy_;               // the model's objective on them
  std::vector<float> pol_weights_, pol_adv_, pol_old_, pol_ref_;  // (local_batch x T) of a micro-batch
  std::vector<float> pol_teacher_;                                // (local_batch x T x V): distillation
  std::vector<PolicyTokenStats> pol_stats_;
  mutable std::vector<float> full_params_;  // gather_params' buffer
};

}  // namespace mt
