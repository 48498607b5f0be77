// run_config.h — the whole configuration of a run: [model], [train], [data]
// TOML tables. Loading is strict (shared/STYLE.md "Config"): unknown keys,
// wrong types and out-of-range values are errors naming the file and key.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/config.h"

namespace mt {

enum class Precision { kFp32, kBf16 };
enum class LrSchedule { kWsd, kCosine, kConstant };

struct TrainConfig {
  int64_t steps = 100;            // optimizer steps
  int64_t batch_size = 8;         // B sequences per micro-batch
  int64_t seq_len = 256;          // T tokens per sequence
  int64_t grad_accum = 1;         // micro-batches per optimizer step
  double lr = 3e-3;               // peak learning rate
  double min_lr_ratio = 0.1;      // final lr = lr * min_lr_ratio
  int64_t warmup_steps = 10;
  LrSchedule schedule = LrSchedule::kWsd;
  double decay_frac = 0.2;        // WSD: last fraction of steps decays linearly
  double weight_decay = 0.1;      // decoupled; matrices only (not norms/embeddings) by default
  bool decay_embeddings = false;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double grad_clip = 1.0;         // global L2 norm; 0 = off
  Precision precision = Precision::kFp32;
  uint64_t seed = 1234;
  int64_t threads = 0;            // 0 = OpenMP default
  int64_t checkpoint_every = 0;   // steps; 0 = only at the end
  int64_t keep_checkpoints = 3;   // keep-last-N committed checkpoints
  int64_t log_every = 1;          // metrics line every N steps
  int64_t eval_every = 0;         // held-out eval pass (eval_loss, bucket_eval_loss) every N steps; 0 = off
  int64_t eval_batches = 1;       // batches of batch_size eval sequences per bucket (or in all) per pass
};

struct DataConfig {
  std::string path;               // file or directory; empty = built-in synthetic stream
  std::string format = "text";    // "text" (byte tokenizer) or "tokens" (flat little-endian uint32)
  std::vector<std::string> extensions;  // for directories: only files with these suffixes; empty = all
  int64_t max_bytes = 64 << 20;   // cap on text read (0 = no cap)
  double eval_frac = 0.0;         // tail of the stream held out for evaluation
  std::string dataset;            // a `moetrain data build` directory; set = train from it instead of path
  std::string mixture;            // mixture TOML (weights, total_tokens, scale, ...); required with dataset
};

// Distributed layout (docs/distributed.md): `mpirun -np N moetrain train`
// runs a mesh of ep x fsdp = N ranks; one process ignores this table.
struct DistConfig {
  int64_t ep = 1;             // expert-parallel ranks: routed experts split over them (must divide n_experts)
  int64_t fsdp = 0;           // FSDP ranks sharing each EP rank's experts; 0 = ranks / ep
  double timeout_s = 600.0;   // seconds a rank may wait in a collective before the job ends naming the silent ranks
  bool prefetch = true;       // gather layer l+1 while layer l computes
};

struct RunConfig {
  ModelConfig model;
  TrainConfig train;
  DataConfig data;
  DistConfig dist;
  std::string source;             // file the config came from ("<embedded>" for defaults)
};

// Parses TOML text (`source` names it in messages), applies `overrides`
// ("section.key=value", values in TOML syntax or bare strings), validates.
Result<RunConfig> parse_run_config(const std::string& toml_text, const std::string& source,
                                   const std::vector<std::string>& overrides);
Result<RunConfig> load_run_config(const std::string& path, const std::vector<std::string>& overrides);

// Canonical TOML of a resolved config: printed at start, stored in checkpoints,
// and parsed again on resume (parse(to_toml(c)) == c).
std::string to_toml(const RunConfig& c);

}  // namespace mt
