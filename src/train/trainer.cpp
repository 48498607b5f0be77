// trainer.cpp — construction, the step, the loop.
#include "train/trainer.h"
#include "train/held_out.h"
#include "rundir/events_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>

#include <unistd.h>

#include "core/check.h"
#include "core/hash.h"
#include "core/machine_peak.h"
#include "core/memory.h"
#include "core/progress.h"
#include "core/threads.h"
#include "core/timer.h"
#include "data/sampler.h"
#include "data/plain_source.h"
#include "optim/lr_schedule.h"
#include "report/run_report.h"
#include "model/attention_kernel.h"
#include "model/flops.h"
#include "model/param_count.h"
#include "dist/mpi_comm.h"
#include "train/metrics_line.h"
#include "rundir/run_dir.h"
#include "train/trainer_dist.h"

namespace mt {

Trainer::Trainer(const RunConfig& cfg, const TrainerOptions& opt) : cfg_(cfg), opt_(opt) {}

Trainer::~Trainer() {
  if (!params_bf16_.empty()) gemm_register_bf16_shadow(nullptr, nullptr, 0);
  gemm_unregister_packed_weights(packed_base_);
  // The disk store is scratch (checkpoints hold the run): the optimizer's
  // files go here, the store's own and its directory when store_ goes.
  if (optim_) optim_->remove_state_files();
}

Status check_trainer_limits(const RunConfig& cfg) {
  // The CPU router keeps each token's top-k state in fixed-size arrays
  // (kernels/cpu/router.cpp). Checked here, not in the config: the planner
  // reads the same files for models of any size.
  // Modelled by the planner (plan/), not yet implemented by the CPU model (issue 14).
  if (cfg.model.max_groups_per_token > 0)
    return cfg.origins.error("model.max_groups_per_token",
                             fmt::format("{}: the planner models group-limited routing; the trainer does not "
                                         "implement it yet (use 0)", cfg.model.max_groups_per_token));
  if (cfg.model.n_experts > 256)
    return cfg.origins.error("model.n_experts", fmt::format("the CPU trainer supports at most 256, got {}",
                                                            cfg.model.n_experts));
  if (cfg.model.n_experts > 0 && cfg.model.top_k > 64)
    return cfg.origins.error("model.top_k", fmt::format("the CPU trainer supports at most 64, got {}", cfg.model.top_k));
  // Fits in this machine's memory? (An allocation past it would not fail
  // cleanly: Linux overcommits and the OOM killer ends the process later.)
  // Parameters, gradients and both AdamW moments in fp32 (Muon: one moment
  // fewer, at most three more floats of exchange buffers), a bf16 shadow,
  // then the activations of one micro-batch as the sizing pass counts them.
  const TrainConfig& tc = cfg.train;
  const double muon_extra = tc.optimizer.name == OptimizerName::kMuon ? 8.0 : 0.0;
  const double param_bytes =
      total_params(cfg.model) * (16.0 + muon_extra + (tc.precision == MatmulPrecision::kBf16 ? 2.0 : 0.0));
  // The longest sequence of any phase sizes the activations.
  auto phases = PhaseSchedule::make(cfg);
  if (!phases) return phases.status();
  const int64_t T = phases->max_seq_len();
  const double tokens = double(tc.batch_size) * double(T);
  const double rough_acts = tokens * double(cfg.model.n_layers) * double(cfg.model.d_model) * 64.0;
  const double limit = physical_memory_bytes();
  // The disk store keeps the training state in files: only compute memory counts.
  const bool on_disk = cfg.stream.enabled && cfg.stream.store == StreamStore::kDisk;
  const double state_bytes = on_disk ? 0.0 : param_bytes;
  double need = state_bytes + rough_acts;
  if (need < limit)
    need = state_bytes + double(Transformer::activation_bytes(cfg.model, tc.batch_size, T, tc.precision));
  if (need > limit)
    return Status::errorf(
        "{}: the run needs about {:.3g} GiB (parameters, gradients, optimizer state and activations of one "
        "micro-batch: model.* sizes, train.batch_size, train.seq_len), this machine has {:.3g} GiB",
        cfg.source, need / double(1 << 30), limit / double(1 << 30));
  return Status::ok();
}

Result<std::unique_ptr<Trainer>> Trainer::create(const RunConfig& given, const TrainerOptions& opt) {
  // Saved with absolute paths (config.toml, manifests): the run resumes from any directory.
  const RunConfig cfg = with_absolute_paths(given);
  MT_RETURN_IF_ERROR(check_trainer_limits(cfg));
  std::unique_ptr<Trainer> t(new Trainer(cfg, opt));
  const TrainConfig& tc = cfg.train;
  set_num_threads(int(tc.threads));
  {
    auto schedule = PhaseSchedule::make(cfg);
    if (!schedule) return schedule.status();
    auto data = PhasedData::open(cfg, std::move(*schedule));
    if (!data) return data.status();
    t->data_ = std::move(*data);
  }

  const MatmulPrecision prec = tc.precision;
  MT_RETURN_IF_ERROR(t->setup_dist(opt));  // no-op in one process
  // The periodic eval reads train.eval_batches batches from each bucket's
  // held-out split; a bucket too small for them is left out, and said so.
  if (tc.eval_every > 0 && !cfg.data.dataset.empty()) {
    auto fits = check_held_out_fits(t->data_->eval_source(),
                                    {tc.batch_size, t->schedule().phases().front().seq_len, tc.eval_batches},
                                    fmt::format("{}: train.eval_batches", cfg.source));
    if (!fits) return fits.status();
    if (!fits.value().empty() && t->is_root()) fmt::print(stderr, "# warning: {}\n", fits.value());
  }
  t->health_ = std::make_unique<HealthMonitor>(tc, t->dist_->world, opt.run_dir);
  t->model_ =
      t->make_model(t->schedule().phases().front(), tc.activation_checkpointing == ActivationCheckpointing::kLayers
                                                        ? LayerActivations::kRecompute
                                                        : LayerActivations::kKeep);
  // The store (the whole model, or this rank's shard) and the optimizer
  MT_RETURN_IF_ERROR(t->init_local_params());
  if (t->store_->streamed()) MT_RETURN_IF_ERROR(t->check_stream_budget());  // may turn recomputation on (auto)
  if (cfg.model.aux_free_bias) t->router_bias_.assign(t->model_->n_moe_layers() * cfg.model.n_experts, 0.0f);
  if (!t->init_router_bias_.empty()) t->router_bias_ = std::move(t->init_router_bias_);
  t->batch_.resize(tc.batch_size * t->model_->tokens_per_sequence());
  if (cfg.rl.enabled) {
    if (t->store_->streamed())
      return cfg.origins.error("stream.enabled",
                               "reinforcement learning samples from the whole model in memory: "
                               "weight streaming is not supported with rl.enabled");
    auto feed = RlFeed::open(cfg, t->dist_->world, t->dist_->shape, t->local_batch());
    if (!feed) return feed.status();
    t->rl_ = std::move(*feed);
    const size_t n = size_t(t->local_batch() * t->model_->seq_len());
    t->pol_weights_.resize(n);
    t->pol_adv_.resize(n);
    t->pol_old_.resize(n);
    t->pol_ref_.resize(n);
    t->pol_stats_.resize(n);
    if (cfg.rl.objective == RlObjective::kReverseKl || cfg.rl.objective == RlObjective::kForwardKl)
      t->pol_teacher_.resize(n * size_t(cfg.model.vocab_size));
    if (t->is_root() && opt.print_config && !t->rl_->teacher_identity().empty())
      fmt::print(stderr, "# teacher: {}, {}\n", t->rl_->teacher_identity(), t->rl_->teacher_layout());
  }
  // The bf16 shadow of the parameters is for computing on them in place;
  // streamed layers are converted as their GEMMs read them.
  if (prec == MatmulPrecision::kBf16 && !t->store_->streamed()) {
    t->params_bf16_.resize(t->store_->params().size());
    gemm_register_bf16_shadow(t->store_->params().data(), t->params_bf16_.data(), int64_t(t->store_->params().size()));
  }
  // Packed copies of weights the model reads in place; streamed layers arrive in other buffers.
  if (tc.pack_weights && !t->store_->streamed()) {
    t->packed_base_ = t->store_->params().data();
    gemm_register_packed_weights(t->packed_base_, int64_t(t->store_->params().size()));
  }

  if (!opt.run_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opt.run_dir, ec);
    if (ec) return Status::errorf("{}: cannot create run directory: {}", opt.run_dir, ec.message());
    if (opt.resume) {
      auto latest = find_latest_checkpoint_dir(opt.run_dir);
      if (latest.is_ok()) {
        MT_RETURN_IF_ERROR(t->restore(latest.value()));
      } else if (has_committed_checkpoints(opt.run_dir)) {
        // Checkpoints exist but none is valid: starting over would silently
        // discard the run, so stop and let the user decide.
        return Status::errorf("{}: --resume found checkpoints but none is valid: {}", opt.run_dir,
                              latest.status().message());
      }
    }
    if (t->is_root()) {  // rank 0 writes the metrics and the resolved config of the whole job
      auto f = MetricsLog::open(opt.run_dir, t->step_, tc.tensorboard ? TensorBoard::kOn : TensorBoard::kOff);
      if (!f) return f.status();
      t->metrics_ = std::move(f.value());
      MT_RETURN_IF_ERROR(save_run_config(opt.run_dir, to_toml(cfg)));
      // What this invocation runs, as resolved (the kernels that `auto`
      // picked on this CPU): a reader can tell runs and resumes apart.
      nlohmann::json start = {{"event", "start"},
                              {"step", t->step_},
                              {"resumed", t->step_ > 0},
                              {"world_size", t->dist_->world.size()},
                              {"threads", num_threads()},
                              {"precision", tc.precision == MatmulPrecision::kBf16 ? "bf16" : "fp32"},
                              {"attention_kernel", attention_kernel_name(tc.attention_kernel, prec)},
                              {"init_from", t->init_from_}};
      if (t->rl_ && !t->rl_->teacher_identity().empty()) {
        start["teacher"] = t->rl_->teacher_identity();
        start["teacher_layout"] = t->rl_->teacher_layout();
      }
      if (t->rl_ && !t->rl_->reference_layout().empty()) start["reference_layout"] = t->rl_->reference_layout();
      append_event(opt.run_dir, start);
    }
  }
  if (t->rl_) MT_RETURN_IF_ERROR(t->rl_->open_rollout_log(opt.run_dir));  // after restore: the iterations it holds
  if (t->step_ < t->schedule().total_steps()) MT_RETURN_IF_ERROR(t->enter_phase(t->step_));
  t->refresh_bf16_params();
  t->peak_gflops_ = opt.peak_gflops > 0 ? opt.peak_gflops : [&] {
    PeakResult p = measure_peak(0.1);
    const double one = prec == MatmulPrecision::kBf16 ? bf16_matmul_peak(p).gflops : p.fp32_gflops;
    return one * double(t->dist_->world.size());  // each rank measured its own cores
  }();
  // A disk store is written from its mappings, at once, without a host-memory copy.
  const bool background = tc.async_checkpoint && !t->store_->params().mapped();
  t->ckpt_ = std::make_unique<Checkpointer>(
      t->dist_->world, CheckpointerOptions{opt.run_dir, to_toml(cfg), tc.keep_checkpoints,
                                           background ? CheckpointWrite::kBackground : CheckpointWrite::kNow});
  if (opt.print_config) {
    fmt::print(stderr, "# moetrain: resolved config ({})\n{}\n", cfg.source, to_toml(cfg));
    fmt::print(stderr, "# data: {}\n# parameters: {} ({} active in matmuls per token), start step {}\n",
               t->data_->describe(), t->model_->layout().total(), active_matmul_params(cfg.model), t->step_);
    if (!t->init_from_.empty()) fmt::print(stderr, "# init: {}\n", t->init_from_);
    // What `moetrain plan` counts as activations on the cpu cluster (Transformer::activation_bytes).
    fmt::print(stderr, "# activations: {} bytes per rank ({} sequences of {} tokens{})\n",
               t->model_->activation_bytes(), t->local_batch(), t->model_->rows(),
               t->dist_->cp > 1 ? fmt::format(", 1/{} of each, dist.cp", t->dist_->cp) : "");
  }
  return t;
}

std::unique_ptr<Transformer> Trainer::make_model(const PhaseSpan& ph, LayerActivations acts) {
  auto model = std::make_unique<Transformer>(ph.model, local_batch(), ph.seq_len, cfg_.train.precision, acts,
                                             context_exchange(ph.seq_len));
  model->set_attention_kernel(cfg_.train.attention_kernel);
  if (cfg_.train.document_mask) model->set_document_separator(data_->document_separator());
  return model;
}

Status Trainer::enter_phase(int64_t step) {
  const PhaseSpan& ph = schedule().phases()[schedule().phase_at(step)];
  const RopeParams a = ph.model.rope_params();
  if (ph.seq_len == model_->seq_len() && a == model_->config().rope_params()) return Status::ok();
  // Another sequence length (a context extension) or RoPE base: the same
  // parameters, activations and RoPE tables of the new shape.
  model_ = make_model(ph, model_->layer_activations());
  batch_.resize(cfg_.train.batch_size * model_->tokens_per_sequence());
  if (dist_->shape.ep > 1) {  // its buffers are sized for the tokens of a micro-batch
    dist_->ep = std::make_unique<EpDispatcher>(dist_->mesh->ep(), model_->config(), local_batch(), model_->rows(),
                                               cfg_.dist.ep_overlap ? EpOverlap::kOn : EpOverlap::kOff);
    dist_->fsdp->set_dispatcher(dist_->ep.get());
  }
  if (store_->streamed()) MT_RETURN_IF_ERROR(check_stream_budget());
  if (is_root() && opt_.print_config)
    fmt::print(
        stderr, "# phase \"{}\" from step {}: sequences of {} tokens, RoPE base {:g}{}\n", ph.name, step + 1,
        ph.seq_len, a.theta,
        a.scaling == RopeScalingKind::kNone
            ? std::string()
            : fmt::format(", {} scaling x{:g}", a.scaling == RopeScalingKind::kYarn ? "yarn" : "linear", a.factor));
  return Status::ok();
}

double Trainer::flops_per_step() const { return flops_of(StepResult{}); }

double Trainer::flops_of(const StepResult& r) const {
  // A step not yet run: the next one (the last, past the end).
  const int64_t T = model_->seq_len();
  const int64_t tokens =
      r.tokens > 0 ? r.tokens : schedule().batch_at(std::min(step_, schedule().total_steps() - 1)) * T;
  if (r.keys_global > 0)  // document masking: the attention work the documents allowed
    return step_flops(cfg_.model, T, double(tokens), r.dropped,
                      AttentionKeys{double(r.keys_global), double(r.keys_local)});
  return step_flops(cfg_.model, T, double(tokens), r.dropped);
}

StepResult Trainer::train_step() {
  const TrainConfig& tc = cfg_.train;
  StepResult r;
  begin_step();
  const double t0 = now_seconds();
  // The gradients are zero here: from construction, then from the previous
  // step's update (which zeroes them as it reads them) or its skip.
  dist_->fsdp->store_grads_zeroed();
  dist_->fsdp->reset_stream_stats();
  // The step's phase sets its batch (micro-batches of train.batch_size) and learning rate.
  const PhaseSchedule& sched = schedule();
  const int64_t accum = sched.micro_batches(step_);
  const float grad_scale = 1.0f / float(accum);
  const float* bias = router_bias_.empty() ? nullptr : router_bias_.data();
  // Multi-token prediction: each sequence brings mtp_depth more targets, and
  // lambda follows the data position (the same after a resume) unless the phase sets it.
  const PhaseSpan& phase = sched.phases()[sched.phase_at(step_)];
  MT_CHECK(phase.seq_len == model_->seq_len(), "step {} runs {} with sequences of {}, the model holds {} (enter_phase)",
           step_ + 1, phase.name, phase.seq_len, model_->seq_len());
  const int64_t T = phase.seq_len;
  const int64_t ahead = cfg_.model.mtp_depth, stride = model_->tokens_per_sequence();
  model_->set_mtp_loss_weight(
      phase.mtp_loss_weight >= 0
          ? phase.mtp_loss_weight
          : mtp_loss_weight_at(
                cfg_.model, sched.tokens_before(step_) + (data_->position(step_) - sched.first_sequence(step_)) * T));
  model_->set_router_loss_coefs(phase.aux_loss_coef >= 0 ? phase.aux_loss_coef : cfg_.model.aux_loss_coef,
                                phase.z_loss_coef >= 0 ? phase.z_loss_coef : cfg_.model.z_loss_coef);
  r.bucket_dropped.assign(data_->bucket_names().size(), 0);
  if (rl_) {
    // The iteration's rollouts, sampled from the model as it is now (the
    // iteration's first pass), unless a checkpoint restored them.
    r.rl.on = true;
    r.rl.iteration = rl_->iteration_of(step_);
    r.rl.pass = step_ % cfg_.rl.passes;
    if (!rl_->holds(step_)) {
      gather_params(full_params_);
      rl_->make_rollouts(step_, full_params_.data(), bias);
      r.rl.rollout_s = rl_->rollout_stats().seconds;
      r.rl.rollout_ahead_s = rl_->rollout_stats().ahead_seconds;
    }
    r.rl.rollout_age = rl_->rollout_stats().age;
    model_->set_mtp_loss_weight(0.0);  // the objective is the policy's; MTP modules idle
  }
  for (int64_t micro = 0; micro < accum; ++micro) {
    // This rank's slice of the micro-batch (all of it in one process).
    const int64_t first = micro * tc.batch_size + batch_offset();
    ForwardStats st;
    if (rl_) {
      st = rl_micro_batch(micro, grad_scale, bias, r.rl);
    } else {
      for (int64_t b = 0; b < local_batch(); ++b)
        data_->sequence(step_, first + b, T, ahead, batch_.data() + b * stride);
      st = forward_backward(grad_scale, bias);
    }
    r.loss += st.loss / double(accum);
    r.mtp_loss += st.mtp_loss / double(accum);
    r.mtp_weight = st.mtp_weight;
    r.aux_loss += st.aux_loss / double(accum);
    r.z_loss += st.z_loss / double(accum);
    r.dropped += st.dropped;
    r.assignments += st.assignments;
    r.keys_global += st.keys_global;
    r.keys_local += st.keys_local;
    if (!r.bucket_dropped.empty())  // each dropped assignment to the bucket of its sequence
      for (int64_t b = 0; b < int64_t(st.dropped_per_sequence.size()); ++b)
        if (const int64_t d = st.dropped_per_sequence[size_t(b)]; d > 0)
          r.bucket_dropped[size_t(data_->bucket_of(step_, first + b))] += d;
    if (r.expert_load.empty()) r.expert_load = st.expert_load;
    else
      for (size_t l = 0; l < st.expert_load.size(); ++l)
        for (size_t e = 0; e < st.expert_load[l].size(); ++e) r.expert_load[l][e] += st.expert_load[l][e];
  }
  if (opt_.faults)
    opt_.faults->on_gradients(dist_->world.rank(), step_ + 1, store_->grads().data(), int64_t(store_->grads().size()));
  reduce_step_stats(r);  // over ranks
  if (rl_) {
    if (rl_->first_pass(step_)) rl_->finish_first_pass();
    // Token means over every rank's completion tokens (rl_micro_batch summed them).
    double sums[4] = {r.rl.entropy, r.rl.kl, r.rl.clip_frac, double(r.rl.policy_tokens)};
    dist_->world.allreduce_sum(sums, 4, "all-reduce (rl token stats)");
    const double n = std::max(1.0, sums[3]);
    r.rl.entropy = sums[0] / n;
    r.rl.kl = sums[1] / n;
    r.rl.clip_frac = sums[2] / n;
    r.rl.policy_tokens = int64_t(sums[3]);
    const RolloutStats& rs = rl_->rollout_stats();
    r.rl.reward = rs.reward;
    r.rl.well_formed = rs.well_formed;
    r.rl.length = rs.length;
    r.rl.truncated = rs.truncated;
    r.rl.solved_groups = rs.solved_groups;
    r.rl.zero_signal = rs.zero_signal;
    r.rl.tool_use = rs.tool_use;
  }
  if (dropped_total_.size() != r.bucket_dropped.size()) dropped_total_.assign(r.bucket_dropped.size(), 0);
  for (size_t b = 0; b < r.bucket_dropped.size(); ++b) dropped_total_[b] += r.bucket_dropped[b];
  r.lr = sched.learning_rate(step_) * health_->lr_factor(step_);
  r.grad_norm = global_grad_norm();
  // Loss and norm are global: every rank reaches the same verdict.
  const SpikeVerdict v = health_->judge(step_ + 1, r.loss, r.grad_norm);
  r.loss_z = v.loss_z;
  r.norm_z = v.norm_z;
  if (!v.spike) {
    apply_update(r.lr, r.grad_norm);
    update_router_bias(r);
  } else {
    zero_grads();  // not consumed by an update
    r.spike = v.why + (grad_culprits_.empty() ? "" : " (non-finite gradient on rank " + grad_culprits_ + ")");
    if (tc.spike.policy != SpikePolicy::kRollback)  // rollback records its whole window in run()
      record_skipped(step_, data_->position(step_), data_->spike_end(step_));
  }
  if (sched.phased()) r.phase = phase.name;
  ++step_;
  r.step = step_;
  r.tokens = accum * tc.batch_size * T;
  r.seconds = now_seconds() - t0;
  store_->report(dist_->fsdp->stream_stats(), compute_memory_bytes(), store_bytes(), r);
  finish_step(r);
  return r;
}

ForwardStats Trainer::rl_micro_batch(int64_t micro, float grad_scale, const float* bias, RlStepFigures& f) {
  const int64_t T = model_->seq_len(), stride = model_->tokens_per_sequence(), lb = local_batch();
  const int64_t first = micro * cfg_.train.batch_size + batch_offset();
  const int64_t accum = schedule().micro_batches(step_);
  const bool first_pass = rl_->first_pass(step_);
  for (int64_t b = 0; b < lb; ++b) {
    rl_->fill_row(first + b, T, stride, batch_.data() + b * stride, pol_weights_.data() + b * T,
                  pol_adv_.data() + b * T);
    if (!first_pass) {
      std::copy(rl_->old_logp(first + b), rl_->old_logp(first + b) + T, pol_old_.begin() + b * T);
      if (const float* ref = rl_->ref_logp(first + b)) std::copy(ref, ref + T, pol_ref_.begin() + b * T);
    }
  }
  // The weights sum to 1 over the global batch; the micro-batch's losses
  // enter the step scaled by grad_scale = 1 / accum, so they carry accum.
  for (float& w : pol_weights_) w *= float(accum);
  const bool kl = cfg_.rl.kl_beta > 0;
  if (first_pass && kl) rl_->reference_logp(batch_.data(), lb, stride, pol_ref_.data());
  const RlObjective objective = cfg_.rl.objective;
  if (objective == RlObjective::kTeacherSft) {  // the teacher's samples as supervised examples: cross-entropy
    ForwardStats st = forward_backward(grad_scale, bias);
    for (int64_t n = 0; n < lb * T; ++n) f.policy_tokens += pol_weights_[size_t(n)] > 0 ? 1 : 0;
    return st;
  }
  const bool distill = objective == RlObjective::kReverseKl || objective == RlObjective::kForwardKl;
  if (distill) rl_->teacher_logp(batch_.data(), lb, stride, pol_teacher_.data());
  policy_.teacher_logp = distill ? pol_teacher_.data() : nullptr;
  policy_.divergence =
      objective == RlObjective::kForwardKl ? DistillDivergence::kForwardKl : DistillDivergence::kReverseKl;
  policy_.weights = pol_weights_.data();
  policy_.advantages = pol_adv_.data();
  policy_.old_logp = first_pass ? nullptr : pol_old_.data();
  policy_.ref_logp = kl ? pol_ref_.data() : nullptr;
  policy_.params = PolicyLossParams{float(cfg_.rl.clip_low), float(cfg_.rl.clip_high), float(cfg_.rl.kl_beta)};
  policy_.stats = pol_stats_.data();
  model_->set_policy_objective(&policy_);
  ForwardStats st = forward_backward(grad_scale, bias);
  model_->set_policy_objective(nullptr);
  for (int64_t b = 0; b < lb; ++b)
    if (first_pass) rl_->record(first + b, pol_stats_.data() + b * T, kl ? pol_ref_.data() + b * T : nullptr);
  for (int64_t n = 0; n < lb * T; ++n)
    if (pol_weights_[size_t(n)] > 0) {  // a completion token: sums here, means over ranks in train_step
      f.entropy += pol_stats_[size_t(n)].entropy;
      f.kl += pol_stats_[size_t(n)].kl;
      f.clip_frac += pol_stats_[size_t(n)].clipped;
      ++f.policy_tokens;
    }
  return st;
}

void Trainer::rl_evaluate(StepResult& r) {
  gather_params(full_params_);
  const RlEvalStats e = rl_->evaluate(full_params_.data(), router_bias_.empty() ? nullptr : router_bias_.data());
  r.rl.pass1 = e.pass1;
  r.rl.pass_k = e.pass_k;
  r.rl.sample_acc = e.sample_acc;
  r.rl.eval_tool_use = e.tool_use;
  r.rl.eval_items = e.items;
  r.rl.eval_k = cfg_.rl.eval_k;
  r.rl.eval_s = e.seconds;
}

void Trainer::refresh_bf16_params() {
  gemm_weights_changed();  // new values (init, restore): every packed copy is stale
  if (params_bf16_.empty()) return;
  const int64_t n = int64_t(store_->params().size()), cols = 1 << 16, rows = n / cols;
  convert_f32_to_bf16(params_bf16_.data(), store_->params().data(), rows, cols, cols);
  convert_f32_to_bf16(params_bf16_.data() + rows * cols, store_->params().data() + rows * cols, 1, n - rows * cols, n);
}

void Trainer::update_router_bias(const StepResult& r) {
  if (router_bias_.empty()) return;
  // DeepSeek-V3: raise the bias of under-loaded experts, lower over-loaded ones.
  const int64_t E = cfg_.model.n_experts;
  const float rate = float(cfg_.model.bias_update_rate);
  for (size_t l = 0; l < r.expert_load.size(); ++l) {
    double mean = 0.0;
    for (int64_t e = 0; e < E; ++e) mean += double(r.expert_load[l][e]) / double(E);
    for (int64_t e = 0; e < E; ++e) {
      const double diff = mean - double(r.expert_load[l][e]);
      router_bias_[l * E + e] += diff > 0 ? rate : (diff < 0 ? -rate : 0.0f);
    }
  }
}

void Trainer::write_metrics(const StepResult& r) {
  if (!metrics_) return;
  const double tps = double(r.tokens) / r.seconds;
  const double mfu = flops_of(r) / r.seconds / (peak_gflops_ * 1e9);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (Status s = metrics_->append(metrics_line(r, tps, mfu, now, data_->bucket_names())); !s)
    fmt::print(stderr, "\n# warning: {}\n", s.message());  // the step itself is done and checkpointed as usual
}

void Trainer::evaluate(StepResult& r) {
  const TrainConfig& tc = cfg_.train;
  const float* bias = router_bias_.empty() ? nullptr : router_bias_.data();
  const HeldOutShape shape{tc.batch_size, model_->seq_len(), tc.eval_batches, local_batch(), batch_offset()};
  HeldOutLosses h = held_out_losses(
      data_->eval_source(), shape, batch_.data(), [&](bool ok) { return all_ranks(ok); },
      [&] { return forward_loss(bias); });
  r.eval_loss = h.eval_loss;
  r.bucket_eval_loss = std::move(h.buckets);
}

Status Trainer::health_check(int64_t step) {
  // The recompute check needs every rank to hold the same parameters for a
  // slice: not so under expert parallelism, where each holds its experts,
  // nor under context parallelism, where a slice is a group's chunks.
  std::function<double(int64_t)> slice_loss;
  if (dist_->shape.ep == 1 && dist_->cp == 1)
    slice_loss = [this](int64_t owner) {
      const float* bias = router_bias_.empty() ? nullptr : router_bias_.data();
      const int64_t lb = local_batch(), T = model_->seq_len();  // the last step's first micro-batch
      for (int64_t b = 0; b < lb; ++b) data_->sequence(step_ - 1, owner * lb + b, T, 0, batch_.data() + b * (T + 1));
      return model_->forward(*dist_->fsdp, batch_.data(), bias).loss;
    };
  return health_->check(step, slice_loss);
}

void Trainer::print_ledger() const {
  const auto ledger = data_->ledger(step_);
  if (ledger.empty()) return;
  const double per_token = double(cfg_.model.top_k * model_->n_moe_layers());
  const bool drops = cfg_.model.n_experts > 0 && cfg_.model.capacity_factor > 0;
  fmt::print(stderr, "# ledger at step {}: tokens{} per bucket\n#   {:<36} {:>12}{}\n", step_,
             drops ? " and capacity drops" : "", "bucket", "tokens",
             drops ? fmt::format(" {:>12} {:>9}", "dropped", "% routed") : "");
  for (size_t b = 0; b < ledger.size(); ++b) {
    const auto& [name, tokens] = ledger[b];
    const int64_t d = b < dropped_total_.size() ? dropped_total_[b] : 0;
    fmt::print(
        stderr, "#   {:<36} {:>12}{}\n", name, tokens,
        drops ? fmt::format(" {:>12} {:>8.2f}%", d, tokens > 0 ? 100.0 * double(d) / (double(tokens) * per_token) : 0.0)
              : "");
  }
}

void Trainer::note_phase_end(int64_t steps_done) {
  const PhaseSchedule& sched = schedule();
  if (!sched.phased() || steps_done < 1) return;
  const size_t p = sched.phase_at(steps_done - 1);
  const PhaseSpan& ph = sched.phases()[p];
  if (steps_done != ph.first_step + ph.steps || !is_root()) return;
  const auto ledger = data_->phase_ledger(p);
  nlohmann::json bt = nlohmann::json::object();
  for (const auto& [name, tokens] : ledger) bt[name] = tokens;
  if (!opt_.run_dir.empty())
    append_event(opt_.run_dir, {{"event", "phase_end"},
                                {"phase", ph.name},
                                {"index", p},
                                {"step", steps_done},
                                {"tokens", sched.tokens_before(steps_done) - sched.tokens_before(ph.first_step)},
                                {"bucket_tokens", bt}});
  if (opt_.progress)
    fmt::print(stderr, "\n# phase {} \"{}\" done at step {} ({} steps){}\n", p, ph.name, steps_done, ph.steps,
               p + 1 < sched.phases().size() ? fmt::format("; next \"{}\"", sched.phases()[p + 1].name) : "");
}

Status Trainer::run() {
  const TrainConfig& tc = cfg_.train;
  ProgressLine progress(stderr, std::max<int64_t>(1, tc.steps / 20));
  double ema_seconds = 0.0;
  std::vector<double> losses;  // this invocation's, for the closing summary
  double train_seconds = 0;    // step compute time of this invocation (checkpoint cost is reported against it)
  int64_t last = opt_.stop_at_step > 0 ? std::min(opt_.stop_at_step, tc.steps) : tc.steps;
  double step_seconds = 0.0;  // this invocation's, for the health checks' cost
  int64_t steps_run = 0;
  if (tc.health.at_start) MT_RETURN_IF_ERROR(health_check(step_));
  if (rl_ && rl_->has_held_out() && step_ == 0 && step_ < last) {
    // Where the policy starts: the figure RL's gain is measured from.
    StepResult r0;
    rl_evaluate(r0);
    if (is_root()) {
      fmt::print(stderr, "# rl: held-out pass@1 {:.3f}, pass@{} {:.3f} at the start ({} items, {:.1f} s)\n",
                 r0.rl.pass1, r0.rl.eval_k, r0.rl.pass_k, r0.rl.eval_items, r0.rl.eval_s);
      if (!opt_.run_dir.empty())
        append_event(opt_.run_dir, {{"event", "rl_eval"},
                                    {"step", 0},
                                    {"pass1", r0.rl.pass1},
                                    {"pass_k", r0.rl.pass_k},
                                    {"k", r0.rl.eval_k},
                                    {"sample_acc", r0.rl.sample_acc},
                                    {"tool_use", r0.rl.eval_tool_use},
                                    {"items", r0.rl.eval_items}});
    }
  }
  while (step_ < last) {
    MT_RETURN_IF_ERROR(enter_phase(step_));
    StepResult r = train_step();
    // A stop signal: this step is the last, and it is checkpointed below.
    if (r.stop_signal && r.step < last) {
      last = r.step;
      stopped_by_signal_ = r.stop_signal;
    }
    step_seconds += r.seconds;
    ++steps_run;
    // Before anything of the step is logged or committed: a wrong-math
    // rank's state must not reach a checkpoint.
    if (health_->due_after(r.step))
      if (Status h = health_check(r.step); !h) return stop_keeping_last_checkpoint(std::move(h));
    // A checkpoint being written is committed once every rank's writer is
    // done (one flag reduced over ranks, so all decide alike); training never
    // waits for the disk unless the next checkpoint or the end comes first.
    MT_RETURN_IF_ERROR(ckpt_->finish_if_written());
    if (!r.spike.empty()) {
      Result<AfterSpike> next = health_->after_spike(r);
      if (!next) return stop_keeping_last_checkpoint(next.status());
      if (next.value() == AfterSpike::kRollback) {
        MT_RETURN_IF_ERROR(rollback(r.step));
        continue;
      }
      r.skipped_bucket_tokens.assign(skipped_tokens_.begin(), skipped_tokens_.end());
      r.bucket_tokens = data_->ledger(step_);
      r.bucket_dropped_total = dropped_total_;
      write_metrics(r);  // every skipped step is logged
      note_phase_end(r.step);
      const bool periodic = tc.checkpoint_every > 0 && r.step % tc.checkpoint_every == 0;
      if (!opt_.run_dir.empty() && (periodic || r.step == tc.steps || r.step == last))
        MT_RETURN_IF_ERROR(checked_checkpoint(r.step));
      continue;
    }
    // A GRPO objective is about 0 by construction: a run with rollouts is summed up by its reward.
    losses.push_back(r.rl.on && cfg_.rl.objective == RlObjective::kGrpo ? r.rl.reward : r.loss);
    train_seconds += r.seconds;
    if (!std::isfinite(r.loss))
      return stop_keeping_last_checkpoint(
          Status::errorf("step {}: loss is {} (diverged); last checkpoint is kept", r.step, r.loss));
    const bool eval = tc.eval_every > 0 && (r.step % tc.eval_every == 0 || r.step == tc.steps);
    if (eval) evaluate(r);
    const int64_t rl_every = cfg_.rl.eval_every > 0 ? cfg_.rl.eval_every : tc.eval_every;
    const bool rl_eval = rl_ && rl_->has_held_out() && rl_every > 0 && (r.step % rl_every == 0 || r.step == tc.steps);
    if (rl_eval) rl_evaluate(r);
    if (eval || rl_eval || r.step % tc.log_every == 0 || r.step == tc.steps || r.step == last) {
      r.bucket_tokens = data_->ledger(step_);
      r.bucket_dropped_total = dropped_total_;
      if (!skipped_tokens_.empty()) r.skipped_bucket_tokens.assign(skipped_tokens_.begin(), skipped_tokens_.end());
      write_metrics(r);
    }
    note_phase_end(r.step);
    ema_seconds = ema_seconds == 0.0 ? r.seconds : 0.9 * ema_seconds + 0.1 * r.seconds;
    if (opt_.progress) {
      const double tps = double(r.tokens) / r.seconds;
      const double mfu = flops_of(r) / r.seconds / (peak_gflops_ * 1e9);
      progress.update(
          r.step, tc.steps,
          fmt::format("{}{}loss {:.4f}", r.phase.empty() ? std::string() : r.phase + " | ",
                      r.rl.on ? fmt::format("reward {:.3f}{} | ", r.rl.reward,
                                            std::isnan(r.rl.pass1) ? std::string()
                                                                   : fmt::format(" | pass@1 {:.3f}", r.rl.pass1))
                              : std::string(),
                      r.loss) +
              fmt::format("{} | lr {:.2e} | {:.0f} tok/s | MFU {:.1f}% | dropped {:.1f}%{} | ETA {}",
                          cfg_.model.mtp_depth > 0 ? fmt::format(" | mtp {:.4f} x {:.2g}", r.mtp_loss, r.mtp_weight)
                                                   : std::string(),
                          r.lr, tps, 100.0 * mfu,
                          r.assignments ? 100.0 * double(r.dropped) / double(r.assignments) : 0.0,
                          r.compute_memory_bytes > 0  // a streamed step
                              ? fmt::format(" | streamed {:.0f} MB, stall {:.1f}%",
                                            1e-6 * double(r.stream_bytes_in + r.stream_bytes_out),
                                            100.0 * r.stream_stall_s / r.seconds)
                              : std::string(),
                          ProgressLine::format_eta(ema_seconds * double(tc.steps - r.step))));
    }
    const bool periodic = tc.checkpoint_every > 0 && r.step % tc.checkpoint_every == 0;
    if (!opt_.run_dir.empty() && (periodic || r.step == tc.steps || r.step == last))
      MT_RETURN_IF_ERROR(checked_checkpoint(r.step));
  }
  progress.finish();
  MT_RETURN_IF_ERROR(ckpt_->finish());
  beat("done");
  const Checkpointer::Stats& cs = ckpt_->stats();
  if (cs.commits > 0 && is_root() && train_seconds > 0)
    fmt::print(stderr,
               "# checkpoints: {} ({}), {:.3f} s on the training thread = {:.2f}% of {:.2f} s of steps; {:.3f} s from "
               "snapshot to commit each on average\n",
               cs.commits, ckpt_->background() ? "asynchronous" : "synchronous", cs.blocking_s,
               100.0 * cs.blocking_s / train_seconds, train_seconds, cs.write_s / double(cs.commits));
  health_->print_cost(step_seconds, steps_run);
  if (is_root()) print_ledger();
  if (last < tc.steps) {
    if (is_root())
      fmt::print(stderr, "# stopped at step {} of {} ({}), checkpoint kept; --resume continues\n", step_, tc.steps,
                 stopped_by_signal_ ? fmt::format("signal {}", strsignal(stopped_by_signal_)) : "--stop-at");
    return Status::ok();
  }
  if (!is_root()) return Status::ok();  // rank 0 reports for the whole job
  if (!opt_.run_dir.empty()) {
    Status rep = report::write_run_report(opt_.run_dir, opt_.run_dir + "/report.html",
                                          "moetrain run " + opt_.run_dir);
    if (rep) fmt::print(stderr, "# report: {}/report.html\n", opt_.run_dir);
    else fmt::print(stderr, "# report not written: {}\n", rep.message());
  }
  if (losses.size() >= 4) {
    const size_t k = std::min<size_t>(10, losses.size() / 2);
    double first = 0.0, last = 0.0;
    for (size_t i = 0; i < k; ++i) {
      first += losses[i] / double(k);
      last += losses[losses.size() - k + i] / double(k);
    }
    const bool reward = rl_ && cfg_.rl.objective == RlObjective::kGrpo;
    fmt::print(stderr, "# {}: mean of the first {} steps {:.4f} -> mean of the last {} steps {:.4f} ({:+.1f}%)\n",
               reward ? "reward" : "loss", k, first, k, last, first != 0.0 ? 100.0 * (last - first) / first : 0.0);
  }
  return Status::ok();
}

}  // namespace mt
