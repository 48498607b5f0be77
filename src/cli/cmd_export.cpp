// cmd_export.cpp — `moetrain export --ckpt DIR --format hf|safetensors --out DIR`
// (train/model_export.h: a Hugging Face Qwen2MoeForCausalLM directory, or
// moetrain's raw parameters) and its reverse, `moetrain import --hf DIR --out RUN`.
// docs/inference.md has a worked example.
#include <fmt/format.h>

#include "cli/commands.h"
#include "train/inference_model.h"
#include "train/model_export.h"

namespace mt {
namespace {

struct ExportArgs {
  std::string ckpt, tokenizer, format = "hf", out;
  double max_shard_mb = 5000;
};

ExitCode run_export(const ExportArgs& a) {
  ExportOptions opt;
  if (a.format == "hf") opt.format = ExportFormat::kHf;
  else if (a.format == "safetensors") opt.format = ExportFormat::kSafetensors;
  else return fail("export", Status::errorf("--format: expected hf or safetensors, got \"{}\"", a.format), ExitCode::kUsage);
  if (!(a.max_shard_mb > 0)) return fail("export", Status::errorf("--max-shard-mb: expected > 0, got {}", a.max_shard_mb), ExitCode::kUsage);
  opt.out = a.out;
  opt.max_shard_bytes = int64_t(a.max_shard_mb * 1e6);
  auto m = load_inference_model(a.ckpt);
  if (!m) return fail("export", m.status(), ExitCode::kFailed);
  if (opt.format == ExportFormat::kHf)
    if (Status s = check_qwen2_moe(m.value().cfg.model); !s) return fail("export", s, ExitCode::kRefused);
  auto codec = open_run_codec(m.value(), a.tokenizer);
  if (!codec) return fail("export", codec.status(), ExitCode::kFailed);
  auto sum = export_model(m.value(), *codec.value(), opt);
  if (!sum) return fail("export", sum.status(), ExitCode::kFailed);
  fmt::print("exported {} (step {}) as {} to {}: {} tensors, {:.1f} MB of fp32 data, tokenizer: {}\n",
             m.value().ckpt_dir, m.value().step, opt.format == ExportFormat::kHf ? kHfArchitecture : "safetensors",
             a.out, sum.value().tensors, double(sum.value().tensor_bytes) / 1e6, codec.value()->source());
  for (const std::string& f : sum.value().files) fmt::print("  {}\n", f);
  return ExitCode::kOk;
}

struct ImportArgs {
  std::string hf, out;
  int64_t step = -1;
};

ExitCode run_import(const ImportArgs& a) {
  auto sum = import_model(a.hf, a.out, a.step);
  if (!sum) {
    fmt::print(stderr, "moetrain import: {}\n", sum.status().message());
    return ExitCode::kFailed;
  }
  fmt::print("imported {} into {} ({} parameters; run config from {})\n", a.hf, sum.value().checkpoint,
             sum.value().params, sum.value().config_source);
  return ExitCode::kOk;
}

}  // namespace

void register_export(CLI::App& app, CommandAction& run) {
  auto a = std::make_shared<ExportArgs>();
  auto* sub = app.add_subcommand("export", "Write a checkpoint as a Hugging Face model (Qwen2MoeForCausalLM) or raw safetensors");
  sub->add_option("--ckpt", a->ckpt, "Checkpoint directory (step_XXXXXXXX), or a run directory (its newest checkpoint)")
      ->required();
  sub->add_option("--format", a->format, "hf: config.json, model.safetensors, tokenizer files for transformers; "
                                         "safetensors: moetrain's own tensor names and config")
      ->capture_default_str();
  sub->add_option("--out", a->out, "Output directory (created)")->required();
  sub->add_option("--max-shard-mb", a->max_shard_mb,
                  "Above this many MB of tensors, write model-0000i-of-0000N.safetensors and an index")
      ->capture_default_str();
  sub->add_option("--tokenizer", a->tokenizer, "SentencePiece model (default: the run's tokenizer)");
  sub->callback([a, &run] { run = [a] { return run_export(*a); }; });
}

void register_import(CLI::App& app, CommandAction& run) {
  auto a = std::make_shared<ImportArgs>();
  auto* sub = app.add_subcommand("import", "Read a Hugging Face Qwen2MoeForCausalLM directory (or a raw export) into a run directory");
  sub->add_option("--hf", a->hf, "Directory with config.json and model.safetensors (or shards and their index)")
      ->required();
  sub->add_option("--out", a->out, "Run directory to write: config.toml, tokenizer.model, checkpoints/step_N")
      ->required();
  sub->add_option("--step", a->step, "Step of the checkpoint written; -1 = the step export recorded, else 0")
      ->capture_default_str();
  sub->callback([a, &run] { run = [a] { return run_import(*a); }; });
}

}  // namespace mt
