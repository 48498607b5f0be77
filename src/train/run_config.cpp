// run_config.cpp — the run config's key declarations (composed from the
// components' own), its cross-field checks and its canonical TOML.
#include "train/run_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/file_io.h"
#include "rundir/run_dir.h"
#include "data/byte_tokenizer.h"
#include "train/phase_schedule.h"

namespace mt {
namespace {

void declare_train_keys(ConfigSchema& s, TrainConfig& t) {
  s.add("train.steps", &t.steps, "optimizer steps of the whole run").range(1, int64_t(1) << 40).unit("steps");
  s.add("train.batch_size", &t.batch_size, "B: sequences per micro-batch (all ranks together)").range(1, 1 << 24);
  s.add("train.seq_len", &t.seq_len, "T: tokens per sequence").range(2, 1 << 24).unit("tokens");
  s.add("train.grad_accum", &t.grad_accum, "micro-batches per optimizer step").range(1, 1 << 24);
  declare_keys(s, t.schedule, "train");
  declare_keys(s, t.optim, "train");
  s.add_enum("train.precision", &t.precision, {"fp32", "bf16"},
             "matrix-multiply operands (bf16: fp32 accumulate, fp32 master weights and optimizer state)");
  s.add_enum("train.attention_kernel", &t.attention_kernel, {"auto", "blocked", "matmul"},
             "attention kernel of fp32 steps: blocked fp32 register blocks, or tiles through the matmul "
             "(bf16 steps always run the matmul one)")
      .note("auto = matmul on AVX2 builds (measured faster there), blocked on AVX-512 builds");
  s.add("train.document_mask", &t.document_mask,
        "in a sequence packed with several documents, attention and gated-delta layers keep each token to its "
        "own document (the tokens after each end-of-document id start a new one)")
      .note(
          "data with documents (data.dataset) only; false = attention across the documents of a sequence, "
          "as before the key existed");
  s.add_enum("train.activation_checkpointing", &t.activation_checkpointing, {"off", "layers", "auto"},
             "keep each layer's activations for the backward (off), or keep only layer inputs and recompute each "
             "layer's forward before its backward (layers; bit-identical gradients, one more forward)")
      .note("auto = layers only when stream.compute_memory_bytes cannot hold the kept activations");
  s.add("train.seed", &t.seed, "parameter init; also the order of the synthetic and stream data");
  s.add("train.init_from", &t.init_from,
        "a checkpoint or run directory (its newest checkpoint) whose weights and router biases start the run "
        "instead of the seeded init, with fresh optimizer state (fine-tuning); the model keys must give its layout")
      .note("\"\" = seeded init; a resumed run continues from its own checkpoint");
  s.add("train.threads", &t.threads, "OpenMP threads").range(0, 256).note("0 = OpenMP default");
  s.add("train.checkpoint_every", &t.checkpoint_every, "commit a checkpoint every N steps")
      .range(0, int64_t(1) << 40)
      .unit("steps")
      .note("0 = only at the end (and at a stop signal)");
  s.add("train.keep_checkpoints", &t.keep_checkpoints, "keep the newest N committed checkpoints").range(1, 1 << 20);
  s.add("train.async_checkpoint", &t.async_checkpoint,
        "snapshot to memory and write in the background; committed atomically one step later");
  s.add("train.pack_weights", &t.pack_weights,
        "reorder the weights once per step into the GEMM library's blocked layout, for every product to read")
      .note(
          "the same bits; costs a copy of the weight matrices per product layout (forward, input gradient); "
          "off for streamed weights");
  s.add("train.log_every", &t.log_every, "metrics line every N steps").range(1, int64_t(1) << 40).unit("steps");
  s.add("train.eval_every", &t.eval_every, "held-out eval pass every N steps (and at the end)")
      .range(0, int64_t(1) << 40).unit("steps").note("0 = off");
  s.add("train.eval_batches", &t.eval_batches, "batches of batch_size eval sequences per bucket per pass").range(1, 1 << 20);
  s.add("train.tensorboard", &t.tensorboard,
        "also write the scalars of metrics.jsonl as TensorBoard event files in RUN_DIR/tensorboard/");
}

void declare_data_keys(ConfigSchema& s, DataConfig& d) {
  declare_keys(s, d.plain, "data");
  s.add("data.dataset", &d.dataset, "a `moetrain data build` directory; set = train from it instead of data.path");
  s.add("data.mixture", &d.mixture, "mixture TOML (weights, total_tokens, scale); required with data.dataset");
  s.add("data.sft", &d.sft,
        "supervised fine-tuning examples (JSONL: prompt/completion, messages, or task items); set = train on them, "
        "packed, with the loss on completions only, instead of data.path or data.dataset");
  s.add("data.sft_held_out", &d.sft_held_out, "held-out examples for the eval passes (same formats as data.sft)")
      .note("\"\" = none");
  s.add("data.sft_tokenizer", &d.sft_tokenizer,
        "the tokenizer of data.sft: a SentencePiece model, a dataset, a checkpoint or run directory (its "
        "dataset's), or \"bytes\"; required with data.sft");
  s.add("data.sft_epochs", &d.sft_epochs, "passes over data.sft, each in a new order").range(1, 1 << 20);
}

Status validate(const RunConfig& c) {
  const ConfigOrigins& o = c.origins;
  const TrainConfig& t = c.train;
  const DataConfig& d = c.data;
  if (!d.dataset.empty() && d.mixture.empty())
    return o.error("data.mixture", "required with data.dataset (a mixture TOML: weights, total_tokens, scale)");
  if (d.dataset.empty() && !d.mixture.empty()) return o.error("data.dataset", "required with data.mixture");
  if (!d.sft.empty() && !d.dataset.empty())
    return o.error("data.sft", "supervised examples replace data.dataset: set one of them");
  if (!d.sft.empty() && d.sft_tokenizer.empty())
    return o.error("data.sft_tokenizer", "required with data.sft (the tokenizer of the model being fine-tuned)");
  if (d.sft.empty() && !d.sft_held_out.empty()) return o.error("data.sft", "required with data.sft_held_out");
  if (!d.sft.empty() && !c.phases.empty())
    return o.error("data.sft", "a fine-tuning run has one phase: remove the [[phase]] tables");
  if (c.rl.enabled) {
    if (d.sft.empty())
      return o.error("data.sft", "required with rl.enabled: the task items whose prompts are rolled out");
    if ((t.batch_size * t.grad_accum) % c.rl.group_size != 0)
      return o.error("rl.group_size", fmt::format("must divide the global batch train.batch_size x train.grad_accum "
                                                  "= {} (each prompt's group fills whole rows)",
                                                  t.batch_size * t.grad_accum));
    if (c.rl.max_new_tokens >= t.seq_len)
      return o.error("rl.max_new_tokens", fmt::format("a row of train.seq_len = {} must hold a prompt and up to {} "
                                                      "new tokens",
                                                      t.seq_len, c.rl.max_new_tokens));
    if (c.dist.cp > 1) return o.error("dist.cp", "reinforcement learning runs without context parallelism (use 1)");
    if (c.rl.objective != RlObjective::kGrpo && c.rl.teacher.empty())
      return o.error("rl.teacher", fmt::format("required with rl.objective = \"{}\" (the model distilled from)",
                                               rl_objective_name(c.rl.objective)));
  }
  MT_RETURN_IF_ERROR(c.model.validate(o, t.seq_len));
  MT_RETURN_IF_ERROR(validate(t.optimizer, o, "optim"));
  if (t.precision == MatmulPrecision::kBf16 && t.attention_kernel == AttentionKernel::kBlocked)
    return o.error("train.attention_kernel", "\"blocked\" is fp32 only; bf16 steps run the matmul kernel (use auto or matmul)");
  if (c.model.n_experts > 0) {
    const int64_t g = c.model.group_size(t.seq_len);
    if ((t.batch_size * t.seq_len) % g != 0)
      return o.error("model.routing_group", fmt::format("group of {} tokens must divide batch_size*seq_len = {}", g,
                                                        t.batch_size * t.seq_len));
  }
  if (d.dataset.empty() && d.sft.empty() && d.plain.format == "text" && c.model.vocab_size < ByteTokenizer::kByteVocab)
    return o.error("model.vocab_size", fmt::format("must be >= {} for data.format = \"text\" (256 bytes + {} specials), "
                                                   "got {}", ByteTokenizer::kByteVocab, ByteTokenizer::kByteVocab - 256, c.model.vocab_size));
  if (auto phases = PhaseSchedule::make(c); !phases) return phases.status();
  return Status::ok();
}

}  // namespace

void declare_keys(ConfigSchema& s, RunConfig& c) {
  declare_keys(s, c.model, "model");
  declare_train_keys(s, c.train);
  declare_keys(s, c.train.optimizer, "optim");
  declare_keys(s, c.train.spike);
  declare_keys(s, c.train.health);
  declare_data_keys(s, c.data);
  declare_keys(s, c.dist, "dist");
  declare_keys(s, c.stream, "stream");
  declare_keys(s, c.rl);
  declare_phase_keys(s, c.phases);
}

Result<RunConfig> parse_run_config(const std::string& toml_text, const std::string& source,
                                   const std::vector<std::string>& overrides) {
  RunConfig c;
  c.source = source;
  ConfigSchema s("run config");
  declare_keys(s, c);
  MT_RETURN_IF_ERROR(s.load(toml_text, source, overrides, c.origins));
  MT_RETURN_IF_ERROR(resolve_phase_steps(c));
  MT_RETURN_IF_ERROR(validate(c));
  return c;
}

bool sets_key(const std::vector<std::string>& sets, const std::string& key) {
  return std::any_of(sets.begin(), sets.end(), [&](const std::string& s) { return s.rfind(key + "=", 0) == 0; });
}

Result<RunConfig> load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_file(path, "config file");
  if (!text) return text.status();
  return parse_run_config(text.value(), path, overrides);
}

Result<RunConfig> choose_run_config(const RunConfigChoice& c, const PresetLookup& preset_text) {
  if (!c.config_path.empty()) return load_run_config(c.config_path, c.sets);
  if (c.resume && c.preset.empty()) {
    const std::string saved = saved_config_path(c.run_dir);
    if (!std::filesystem::exists(saved))
      return Status::errorf("{}: no saved config.toml to resume from (is this a run directory?); give --config or "
                            "--preset to start one",
                            c.run_dir);
    return load_run_config(saved, c.sets);
  }
  const std::string name = c.preset.empty() ? "quickstart" : c.preset;
  const std::string* text = preset_text(name);
  if (!text) return Status::errorf("no embedded preset '{}'", name);
  return parse_run_config(*text, "<embedded " + name + ".toml>", c.sets);
}

RunConfig with_absolute_paths(RunConfig c) {
  std::vector<std::string*> paths = {&c.data.plain.path, &c.data.dataset,      &c.data.mixture,
                                     &c.data.sft,        &c.data.sft_held_out, &c.stream.store_dir};
  if (c.data.sft_tokenizer != "bytes") paths.push_back(&c.data.sft_tokenizer);
  paths.push_back(&c.train.init_from);
  for (PhaseConfig& ph : c.phases) paths.push_back(&ph.mixture);
  for (std::string* p : paths)
    if (!p->empty() && std::filesystem::path(*p).is_relative())
      *p = std::filesystem::absolute(*p).lexically_normal().string();
  return c;
}

std::string to_toml(const RunConfig& c) {
  std::string source = c.source;
  for (char& ch : source)
    if (ch == '\n' || ch == '\r') ch = ' ';
  RunConfig copy = c;  // the schema binds mutable fields
  ConfigSchema s("run config");
  declare_keys(s, copy);
  return fmt::format("# moetrain resolved config (source: {})\n{}", source, s.to_toml());
}

}  // namespace mt
