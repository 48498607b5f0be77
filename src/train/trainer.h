// trainer.h — the single-process training loop: data -> forward/backward over
// gradient-accumulation micro-batches -> clip + AdamW -> metrics line ->
// checkpoint. Owns the flat parameter/gradient buffers, optimizer state and
// the aux-loss-free router biases. Deterministic: the state after step s is a
// pure function of (config, seed, s), whether or not the run was resumed.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/status.h"
#include "data/token_source.h"
#include "model/transformer.h"
#include "optim/adamw_optimizer.h"
#include "train/run_config.h"

namespace mt {

struct TrainerOptions {
  std::string run_dir;          // metrics.jsonl and checkpoints/ go here; empty = none
  bool resume = false;          // continue from the newest valid checkpoint, if any
  double peak_gflops = 0.0;     // MFU denominator; 0 = measure at start
  bool progress = true;         // live progress line on stderr
  bool print_config = true;
};

struct StepResult {
  int64_t step = 0;             // 1-based index of the step just taken
  double loss = 0, aux_loss = 0, z_loss = 0, lr = 0, grad_norm = 0;
  double seconds = 0;           // wall time of the step (compute only)
  int64_t tokens = 0;           // tokens in this step
  int64_t dropped = 0, assignments = 0;
  std::vector<std::vector<int64_t>> expert_load;  // per MoE layer, summed over micro-batches
};

// Newest valid checkpoint under DIR/checkpoints, or an error if none.
Result<std::string> find_latest_checkpoint_dir(const std::string& run_dir);
// True when DIR/checkpoints holds any committed (step_*) directory, valid or not.
bool has_committed_checkpoints(const std::string& run_dir);

class Trainer {
 public:
  static Result<std::unique_ptr<Trainer>> create(const RunConfig& cfg, const TrainerOptions& opt);
  ~Trainer();

  // Trains until train.steps, writing metrics and checkpoints.
  Status run();
  // One optimizer step (used by run() and by `moetrain bench`).
  StepResult train_step();

  int64_t step() const { return step_; }
  double flops_per_step() const;
  double peak_gflops() const { return peak_gflops_; }
  // xxh64 over parameters, optimizer moments and router biases.
  std::string state_hash() const;
  const Transformer& model() const { return *model_; }

 private:
  Trainer(const RunConfig& cfg, const TrainerOptions& opt);
  Status save_checkpoint();
  Status restore(const std::string& dir);
  void write_metrics(const StepResult& r);
  void update_router_bias(const StepResult& r);

  RunConfig cfg_;
  TrainerOptions opt_;
  std::unique_ptr<TokenSource> data_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<AdamW> optim_;
  std::vector<float> params_, grads_, router_bias_;
  std::vector<bf16> params_bf16_;  // bf16 precision: GEMM copy of params_, refreshed after every update
  void refresh_bf16_params();
  std::vector<int32_t> batch_;
  int64_t step_ = 0;
  double peak_gflops_ = 0.0;
  std::FILE* metrics_ = nullptr;
};

}  // namespace mt
