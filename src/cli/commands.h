// commands.h — one registration function per subcommand (cmd_<name>.cpp).
// Each adds its CLI11 subcommand and sets `run` to the action, which returns
// the process exit code (cli/exit_code.h).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

#include "cli/exit_code.h"

namespace mt {
using CommandAction = std::function<ExitCode()>;
void register_train(CLI::App& app, CommandAction& run);
void register_sft(CLI::App& app, CommandAction& run);  // supervised fine-tuning from a checkpoint
void register_rl(CLI::App& app, CommandAction& run);   // reinforcement learning (GRPO) from a checkpoint
void register_distill(CLI::App& app, CommandAction& run);  // on-policy distillation toward a teacher
void register_bench(CLI::App& app, CommandAction& run);
void register_ckpt(CLI::App& app, CommandAction& run);
void register_report(CLI::App& app, CommandAction& run);
void register_data(CLI::App& app, CommandAction& run);  // data build|inspect|plan, tokenizer train|encode
void register_plan(CLI::App& app, CommandAction& run);  // plan a hero run on paper
void register_config(CLI::App& app, CommandAction& run);  // config reference | show
void register_ladder(CLI::App& app, CommandAction& run);     // ladder run | fit: scaling ladders
void register_mix(CLI::App& app, CommandAction& run);        // mix search: the data mixture from proxy runs
void register_sweep(CLI::App& app, CommandAction& run);      // sweep: cost-aware hyperparameter search (CARBS)
void register_arch(CLI::App& app, CommandAction& run);       // arch compare | report: four-factor architecture choice
void register_supervise(CLI::App& app, CommandAction& run);  // supervise: keep a training job running
void register_doctor(CLI::App& app, CommandAction& run);     // health checks of the machine / every rank
void register_generate(CLI::App& app, CommandAction& run);   // generate: sample from a checkpoint (KV cache)
void register_eval(CLI::App& app,
                   CommandAction& run);  // eval: held-out loss per bucket, multiple-choice and generative tasks
void register_tasks(CLI::App& app,
                    CommandAction& run);  // tasks make passkey: synthetic task files and training documents
void register_export(CLI::App& app, CommandAction& run);     // export: Hugging Face (Qwen2MoeForCausalLM) or raw safetensors
void register_import(CLI::App& app, CommandAction& run);     // import: a Hugging Face directory back to a run
}  // namespace mt
