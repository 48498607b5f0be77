// run_config.h — the whole configuration of a run: [model], [train], [optim],
// [data], [dist]. Each component owns its struct and declares its keys
// (core/config_schema.h); this file composes them, adds the cross-field
// checks, and keeps the resolved config's canonical TOML (saved in every
// checkpoint and run directory, compared on resume).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config_schema.h"
#include "core/status.h"
#include "dist/dist_config.h"
#include "dist/stream_config.h"
#include "kernels/cpu/gemm.h"
#include "model/attention_kernel.h"
#include "model/config.h"
#include "optim/adamw_optimizer.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer_config.h"
#include "dist/health_check.h"
#include "train/spike_guard.h"
#include "data/plain_source.h"
#include "train/phase_config.h"
#include "train/rl_config.h"

namespace mt {

// Layer activations kept for the backward, or recomputed (model/transformer.h);
// auto = recompute only when stream.compute_memory_bytes requires it.
enum class ActivationCheckpointing { kOff, kLayers, kAuto };

struct TrainConfig {
  int64_t steps = 100;            // optimizer steps
  int64_t batch_size = 8;         // B sequences per micro-batch
  int64_t seq_len = 256;          // T tokens per sequence
  int64_t grad_accum = 1;         // micro-batches per optimizer step
  ScheduleParams schedule;        // train.lr, min_lr_ratio, warmup_steps, schedule, decay_frac
  AdamWConfig optim;              // train.beta1, beta2, eps, weight_decay, decay_embeddings, grad_clip
  OptimizerConfig optimizer;      // [optim]: AdamW or Muon per tensor class, the Hyperball wrapper
  MatmulPrecision precision = MatmulPrecision::kFp32;  // operands of the matrix multiplies
  AttentionKernel attention_kernel = AttentionKernel::kAuto;  // model/attention_kernel.h
  // Document masking: in a sequence packed with several documents, a token
  // attends only within its own document (data with documents: data.dataset).
  bool document_mask = true;
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::kAuto;
  SpikeConfig spike;              // [spike]: loss / gradient-norm spike handling
  bool async_checkpoint = true;   // snapshot to memory, write in the background, commit a step later
  // Weights reordered once per step into the GEMM library's blocked layout
  // and read from there by every product (kernels/cpu/gemm.h): the same
  // bits, faster products, one more copy of the weights per layout read.
  bool pack_weights = true;
  HealthConfig health;            // [health]: periodic GEMM health check over the ranks
  uint64_t seed = 1234;           // parameter init (and the synthetic / stream data order)
  // A checkpoint or run directory whose weights (and router biases) start
  // the run in place of the seeded init, with fresh optimizer state: fine-
  // tuning (`moetrain sft`). The model keys must give its layout. "" = none.
  std::string init_from;
  int64_t threads = 0;            // 0 = OpenMP default
  // Steps; 0 = only at the end. Not 0 by default: a run killed without a
  // checkpoint loses everything (torchtitan's default interval is 500 too).
  int64_t checkpoint_every = 500;
  int64_t keep_checkpoints = 3;   // keep-last-N committed checkpoints
  int64_t log_every = 1;          // metrics line every N steps
  int64_t eval_every = 0;         // held-out eval pass (eval_loss, bucket_eval_loss) every N steps; 0 = off
  int64_t eval_batches = 1;       // batches of batch_size eval sequences per bucket (or in all) per pass
  bool tensorboard = true;        // mirror metrics.jsonl's scalars to RUN_DIR/tensorboard/ (event files)
};

struct DataConfig {
  PlainSourceOptions plain;       // data.path, format, extensions, max_bytes, eval_frac (no dataset)
  std::string dataset;            // a `moetrain data build` directory; set = train from it instead of path
  std::string mixture;            // mixture TOML (weights, total_tokens, scale, ...); required with dataset
  // Supervised fine-tuning (train/sft_data.h, data/sft_source.h): examples
  // packed into rows, loss on completions; set = train on them instead.
  std::string sft;            // JSONL of examples
  std::string sft_held_out;   // JSONL of held-out examples for the eval passes; "" = none
  std::string sft_tokenizer;  // the model's tokenizer: SentencePiece model, dataset, checkpoint or run dir
  int64_t sft_epochs = 1;
};

struct RunConfig {
  ModelConfig model;
  TrainConfig train;
  DataConfig data;
  DistConfig dist;
  StreamConfig stream;            // [stream]: weight streaming (docs/streaming.md)
  RlConfig rl;                    // [rl]: reinforcement learning on data.sft's task items (train/rl_config.h)
  std::vector<PhaseConfig> phases;  // [[phase]]: the run in phases (train/phase_schedule.h); empty = one
  std::string source;             // file the config came from ("<embedded ...>" for presets)
  ConfigOrigins origins;          // where every key got its value
};

// Declares every key of a run config, bound to `c`.
void declare_keys(ConfigSchema& s, RunConfig& c);

// Parses TOML text (`source` names it in messages), applies `overrides`
// ("section.key=value", values in TOML syntax or bare strings), validates.
Result<RunConfig> parse_run_config(const std::string& toml_text, const std::string& source,
                                   const std::vector<std::string>& overrides);
Result<RunConfig> load_run_config(const std::string& path, const std::vector<std::string>& overrides);

// Whether `sets` (--set overrides, "section.key=value") sets `key`: the
// commands that derive defaults from a checkpoint keep the user's value.
bool sets_key(const std::vector<std::string>& sets, const std::string& key);

// Canonical TOML of a resolved config: printed at start, stored in checkpoints,
// and parsed again on resume (parse(to_toml(c)) == c).
std::string to_toml(const RunConfig& c);

// The config with its paths (data.path, data.dataset, data.mixture,
// stream.store_dir, phase[i].mixture) made absolute against the working directory, the base of
// every path in a run config, preset or --set. A run saves this form, so it
// resumes, evaluates and exports from any directory.
RunConfig with_absolute_paths(RunConfig c);

// Where `moetrain train`'s config comes from: --config FILE; else, resuming
// without --preset, the run's own RUN_DIR/config.toml (continue the run as it
// was); else the embedded preset (default "quickstart"), whose text
// `preset_text` returns (null: no such preset). `sets` apply on top. Errors
// say which source was missing and how to give one.
struct RunConfigChoice {
  std::string config_path;  // --config ("" = none)
  std::string preset;       // --preset ("" = none)
  std::string run_dir;
  bool resume = false;
  std::vector<std::string> sets;
};
using PresetLookup = std::function<const std::string*(const std::string& name)>;
Result<RunConfig> choose_run_config(const RunConfigChoice& c, const PresetLookup& preset_text);

}  // namespace mt
