// cmd_export.cpp — `moetrain export --ckpt DIR --format hf|safetensors --out DIR`
// (export/model_export.h: a Hugging Face Qwen2MoeForCausalLM or custom-code
// MoetrainForCausalLM directory, or moetrain's raw parameters) and its reverse, `moetrain import --hf DIR --out RUN`.
// docs/inference.md has a worked example.
#include <fmt/format.h>

#include <filesystem>

#include "cli/claim_out.h"
#include "cli/commands.h"
#include "rundir/output_dir.h"
#include "rundir/run_dir.h"
#include "train/inference_model.h"
#include "export/model_export.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string ckpt, tokenizer, format = "hf", out, dtype = "fp32", hf_class = "auto";
  double max_shard_mb = 5000;
  bool move_aside = false;
};

ExitCode run_export(const ExportArgs& a) {
  ExportOptions opt;
  if (a.format == "hf") opt.format = ExportFormat::kHf;
  else if (a.format == "safetensors") opt.format = ExportFormat::kSafetensors;
  else if (a.format == "gguf")
    opt.format = ExportFormat::kGguf;
  else
    return fail("export", Status::errorf("--format: expected hf, safetensors or gguf, got \"{}\"", a.format),
                ExitCode::kUsage);
  if (a.hf_class != "auto" && opt.format != ExportFormat::kHf)
    return fail("export", Status::errorf("--hf-class {}: only the hf format has a class", a.hf_class),
                ExitCode::kUsage);
  if ((a.dtype == "f16" || a.dtype == "q8_0") && opt.format != ExportFormat::kGguf)
    return fail(
        "export",
        Status::errorf("--dtype {}: only the gguf format stores it (hf and safetensors: fp32 or bf16)", a.dtype),
        ExitCode::kUsage);
  opt.gguf_type = a.dtype == "bf16"   ? GgmlType::kBf16
                  : a.dtype == "f16"  ? GgmlType::kF16
                  : a.dtype == "q8_0" ? GgmlType::kQ8_0
                                      : GgmlType::kF32;
  if (!(a.max_shard_mb > 0)) return fail("export", Status::errorf("--max-shard-mb: expected > 0, got {}", a.max_shard_mb), ExitCode::kUsage);
  opt.dtype = a.dtype == "bf16" ? TensorDtype::kBf16 : TensorDtype::kF32;  // CLI11 checked the choice
  opt.out = a.out;
  opt.max_shard_bytes = int64_t(a.max_shard_mb * 1e6);
  auto m = load_inference_model(a.ckpt);
  if (!m) return fail("export", m.status(), ExitCode::kFailed);
  opt.hf_class = a.hf_class == "qwen2_moe"  ? HfClass::kQwen2Moe
                 : a.hf_class == "moetrain" ? HfClass::kMoetrain
                                            : HfClass::kAuto;  // CLI11 checked the choice
  if (opt.format == ExportFormat::kHf)
    if (auto cls = resolve_hf_class(m.value().cfg.model, opt.hf_class); !cls)
      return fail("export", cls.status(), ExitCode::kRefused);
  if (opt.format == ExportFormat::kGguf)
    if (auto arch = gguf_arch_for(m.value().cfg.model); !arch) return fail("export", arch.status(), ExitCode::kRefused);
  auto codec = open_run_codec(m.value(), a.tokenizer);
  if (!codec) return fail("export", codec.status(), ExitCode::kFailed);
  // An export directory holds one checkpoint's export in one format: another
  // would leave the first one's shards beside the second's.
  OutputOwner owner{"export",
                    {{"checkpoint", fs::absolute(m.value().ckpt_dir).lexically_normal().string()},
                     {"step", std::to_string(m.value().step)},
                     {"format", a.format},
                     {"max_shard_mb", fmt::format("{}", a.max_shard_mb)},
                     {"tokenizer", codec.value()->source()}},
                    {}};
  // Stamped only when not fp32, what every export wrote before --dtype: an
  // older fp32 export directory is the same export and stays claimable.
  if (a.dtype != "fp32") owner.config["dtype"] = a.dtype;
  if (a.hf_class != "auto") owner.config["hf_class"] = a.hf_class;
  if (auto refused = claim_out("export", a.out, owner, a.move_aside)) return *refused;
  auto sum = export_model(m.value(), *codec.value(), opt);
  if (!sum) return fail("export", sum.status(), ExitCode::kFailed);
  fmt::print("exported {} (step {}) as {} to {}: {} tensors, {:.1f} MB of {} data, tokenizer: {}\n", m.value().ckpt_dir,
             m.value().step, sum.value().architecture, a.out, sum.value().tensors,
             double(sum.value().tensor_bytes) / 1e6, a.dtype, codec.value()->source());
  for (const std::string& f : sum.value().files) fmt::print("  {}\n", f);
  return ExitCode::kOk;
}

struct ImportArgs {
  std::string hf, out;
  int64_t step = -1;
  bool move_aside = false;
};

ExitCode run_import(const ImportArgs& a) {
  // An import makes a run directory: one that holds a run is not overwritten.
  auto moved = prepare_run_dir(a.out, a.move_aside ? RunDirMode::kMoveAside : RunDirMode::kFresh);
  if (!moved) return fail("import", moved.status(), ExitCode::kUsage);
  if (!moved.value().empty()) fmt::print(stderr, "# moved the previous run in {} aside to {}\n", a.out, moved.value());
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
  auto* sub = app.add_subcommand("export",
                                 "Write a checkpoint as a Hugging Face model (Qwen2MoeForCausalLM or the project's "
                                 "MoetrainForCausalLM code) or raw safetensors");
  sub->add_option("--ckpt", a->ckpt, "Checkpoint directory (step_XXXXXXXX), or a run directory (its newest checkpoint)")
      ->required();
  sub->add_option("--format", a->format,
                  "hf: config.json, model.safetensors, tokenizer files for transformers; "
                  "safetensors: moetrain's own tensor names and config; gguf: model.gguf "
                  "for llama.cpp (glm4moe for GQA, deepseek2 for MLA models)")
      ->capture_default_str();
  sub->add_option("--out", a->out, "Output directory (created)")->required();
  sub->add_option("--dtype", a->dtype,
                  "Tensors as fp32 (exact), or bf16 (rounded to nearest even: half the size, what a bf16 "
                  "forward multiplies with; import reads both); gguf also f16 and q8_0 (matrices with rows a "
                  "multiple of 32 long in 8-bit blocks)")
      ->check(CLI::IsMember({"fp32", "bf16", "f16", "q8_0"}))
      ->capture_default_str();
  sub->add_option("--hf-class", a->hf_class,
                  "hf format: auto = Qwen2MoeForCausalLM when it computes what the model computes, else "
                  "MoetrainForCausalLM (the project's modeling code, trust_remote_code); qwen2_moe refuses "
                  "naming the key it cannot hold; moetrain always writes the custom code")
      ->check(CLI::IsMember({"auto", "qwen2_moe", "moetrain"}))
      ->capture_default_str();
  sub->add_option("--max-shard-mb", a->max_shard_mb,
                  "Above this many MB of tensors, write model-0000i-of-0000N.safetensors and an index")
      ->capture_default_str();
  sub->add_option("--tokenizer", a->tokenizer, "SentencePiece model (default: the run's tokenizer)");
  sub->add_flag("--move-aside", a->move_aside,
                "OUT holds another export (or other files): rename it to OUT.prev-N first");
  sub->callback([a, &run] { run = [a] { return run_export(*a); }; });
}

void register_import(CLI::App& app, CommandAction& run) {
  auto a = std::make_shared<ImportArgs>();
  auto* sub = app.add_subcommand(
      "import",
      "Read a Hugging Face export (Qwen2MoeForCausalLM or MoetrainForCausalLM) or a raw export into a run directory");
  sub->add_option("--hf", a->hf, "Directory with config.json and model.safetensors (or shards and their index)")
      ->required();
  sub->add_option("--out", a->out, "Run directory to write: config.toml, tokenizer.model, checkpoints/step_N")
      ->required();
  sub->add_option("--step", a->step, "Step of the checkpoint written; -1 = the step export recorded, else 0")
      ->capture_default_str();
  sub->add_flag("--move-aside", a->move_aside, "OUT holds a run: rename it to OUT.prev-N first");
  sub->callback([a, &run] { run = [a] { return run_import(*a); }; });
}

}  // namespace mt
