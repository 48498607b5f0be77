// cmd_bench.cpp — `moetrain bench --preset NAME --precision fp32|bf16 [--routing balanced|learned] [--steps N]
// [--stream host|disk] [--json]`:
// resolves the preset, measures it with run_step_bench (measure/step_bench.h:
// what is measured and how) and prints the table or the JSON object. Under
// mpirun every rank benchmarks its part of the distributed step (dist.* keys
// via --set) and rank 0 prints.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/embedded_configs.h"
#include "core/threads.h"
#include "dist/mpi_comm.h"
#include "measure/step_bench.h"

namespace mt {

void register_bench(CLI::App& app, CommandAction& run) {
  struct BenchArgs {
    std::string preset = "bench/moe-512", precision = "fp32", stream = "off", routing = "balanced";
    int64_t steps = 4, threads = 0;
    bool json = false;
    std::vector<std::string> sets;
  };
  auto args = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand("bench", "Throughput and MFU of full training steps against the measured peak.");
  sub->add_option(
         "--preset", args->preset,
         "Embedded preset, named as for train: bench/dense-512, bench/moe-512, bench/moe-1024, bench/moe-512-mla, "
         "bench/moe-512-mtp, bench/moe-512-hybrid, bench/tiny (the bench/ may be left out)")
      ->capture_default_str();
  sub->add_option("--precision", args->precision, "fp32 or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}))->capture_default_str();
  sub->add_option("--steps", args->steps, "Timed steps (after one warm-up step); the median is reported")
      ->check(in_range(1, 100000))
      ->capture_default_str();
  sub->add_option("--threads", args->threads, "Worker threads (0 = all)")
      ->check(in_range(0, 256))
      ->capture_default_str();
  sub->add_option("--routing", args->routing,
                  "balanced: every token routed on counter-based uniform logits (model.router_force_balance), so "
                  "the experts carry full loads and the figures mean the same on every CPU; learned: the preset's "
                  "own router, which on the synthetic byte stream drops most assignments by capacity")
      ->check(CLI::IsMember({"balanced", "learned"}))
      ->capture_default_str();
  sub->add_option("--set", args->sets, "Override a preset key: section.key=value (repeatable)");
  sub->add_option("--stream", args->stream,
                  "Weight streaming: off, host or disk (stream.store); steps alternate with an in-place trainer of "
                  "the same config and the overhead is reported")
      ->check(CLI::IsMember({"off", "host", "disk"}))
      ->capture_default_str();
  sub->add_flag("--json", args->json, "Print one JSON object instead of a table");
  sub->callback([args, &run] {
    run = [args]() -> ExitCode {
      // One naming with `train --preset`: bench/NAME (NAME alone is the same preset).
      const std::string name = args->preset.rfind("bench/", 0) == 0 ? args->preset : "bench/" + args->preset;
      const EmbeddedConfig* e = find_embedded_config(name);
      if (!e) {
        std::string known;
        for (const EmbeddedConfig& c : embedded_configs())
          if (c.name.rfind("bench/", 0) == 0) known += (known.empty() ? "" : ", ") + c.name;
        fmt::print(stderr, "moetrain bench: --preset: unknown preset '{}' (the benchmark presets: {})\n", args->preset,
                   known);
        return ExitCode::kUsage;
      }
      // --routing goes first so that an explicit --set model.router_force_balance still wins.
      std::vector<std::string> sets{std::string("model.router_force_balance=") +
                                    (args->routing == "balanced" ? "true" : "false")};
      sets.insert(sets.end(), args->sets.begin(), args->sets.end());
      sets.push_back("train.precision=" + args->precision);
      sets.push_back("train.steps=1000000");
      sets.push_back("data.path=\"\"");
      sets.push_back("train.threads=" + std::to_string(args->threads));
      const bool streaming = args->stream != "off";
      if (streaming) {
        sets.push_back("stream.enabled=true");
        sets.push_back("stream.store=\"" + args->stream + "\"");
      }
      auto cfg = parse_run_config(e->text, "<embedded " + name + ".toml>", sets);
      if (!cfg) {
        fmt::print(stderr, "moetrain bench: {}\n", cfg.status().message());
        return ExitCode::kUsage;
      }
      std::unique_ptr<Comm> world = make_world_comm(cfg.value().dist.timeout_s);  // outlives the trainer
      const int ranks = world->size();
      set_num_threads(ranks > 1 && args->threads == 0 ? default_rank_threads() : int(args->threads));
      auto measured = run_step_bench(cfg.value(), StepBenchOptions{name, args->steps}, *world);
      if (!measured) {
        fmt::print(stderr, "moetrain bench: {}\n", measured.status().message());
        if (ranks > 1) abort_job(*world, int(ExitCode::kFailed));
        return ExitCode::kFailed;
      }
      const nlohmann::json& j = measured.value();
      const double peak_gflops = j["peak_gflops_per_s"], gemm_best = j["gemm_best_gflops_per_s"];
      const double step_s = j["step_time_s"], tokens = j["tokens_per_step"], model_gflops = j["model_gflops_per_s"];
      const nlohmann::json& br = j["time_fraction"];
      if (world->rank() != 0) return ExitCode::kOk;
      if (args->json) {
        fmt::print("{}\n", j.dump());
        return ExitCode::kOk;
      }
      fmt::print("preset {}  precision {}  routing {}  optimizer {}  attention {}  threads {}{}\n", name,
                 args->precision, j["routing"].get<std::string>(), j["optimizer"].get<std::string>(),
                 j["attention_kernel"].get<std::string>(), num_threads(),
                 ranks > 1 ? fmt::format(" per rank x {} ranks", ranks) : "");
      fmt::print("  peak (measured)      {:8.1f} GFLOP/s  ({})\n", peak_gflops, j["peak_kind"].get<std::string>());
      fmt::print("  gemm best 2048^3     {:8.1f} GFLOP/s\n", gemm_best);
      fmt::print("  step time (median)   {:8.3f} s   over {} steps\n", step_s, args->steps);
      fmt::print("  tokens/s             {:8.0f}\n", tokens / step_s);
      fmt::print("  model GFLOP/s        {:8.1f}\n", model_gflops);
      if (j["dropped_frac"].get<double>() > 0)
        fmt::print("  dropped by capacity  {:8.1f} %   of expert assignments, not counted as model FLOPs "
                   "({:.0f} of {:.0f} GFLOP per step)\n",
                   100.0 * j["dropped_frac"].get<double>(), j["model_gflops_per_step"].get<double>(),
                   j["model_gflops_per_step_no_drops"].get<double>());
      fmt::print("  MFU                  {:8.1f} %   (vs gemm best {:.1f} %, vs the gemm after each step {:.1f} %)\n",
                 100.0 * model_gflops / peak_gflops, 100.0 * model_gflops / gemm_best,
                 100.0 * j["mfu_vs_gemm_interleaved"].get<double>());
      if (streaming) {
        const nlohmann::json& st = j["stream"];
        fmt::print("  streaming ({} store, prefetch {}): {:.1f} MB in + {:.1f} MB out per step, stall {:.1f}% of the "
                   "step\n", args->stream, st["prefetch_layers"].get<int64_t>(),
                   1e-6 * st["bytes_in_per_step"].get<double>(), 1e-6 * st["bytes_out_per_step"].get<double>(),
                   100.0 * st["stall_s_median"].get<double>() / step_s);
        fmt::print("  compute memory       {:8.1f} MiB  (store {:.1f} MiB)\n",
                   st["compute_memory_bytes"].get<double>() / (1 << 20), st["store_bytes"].get<double>() / (1 << 20));
        fmt::print("  in place, alternate  {:8.3f} s   {:.0f} tokens/s; streaming overhead {:+.1f}%\n",
                   st["in_place_step_time_s"].get<double>(), st["in_place_tokens_per_s"].get<double>(),
                   100.0 * st["overhead"].get<double>());
      }
      if (j.contains("planner_bytes"))
        fmt::print("  peak memory (VmHWM)  {:8.1f} MiB  planner {:.1f} MiB: {:+.1f} MiB for the process itself\n",
                   j["peak_rss_bytes"].get<double>() / (1 << 20), j["planner_bytes"].get<double>() / (1 << 20),
                   (j["peak_rss_bytes"].get<double>() - j["planner_bytes"].get<double>()) / (1 << 20));
      else
        fmt::print("  peak memory (VmHWM)  {:8.1f} MiB\n", j["peak_rss_bytes"].get<double>() / (1 << 20));
      fmt::print("  time by phase:");
      for (auto it = br.begin(); it != br.end(); ++it)
        fmt::print(" {} {:.0f}%", it.key(), 100.0 * it.value().get<double>());
      fmt::print("\n");
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
