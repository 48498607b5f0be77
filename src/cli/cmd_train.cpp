// cmd_train.cpp — `moetrain train [--config FILE] [--run-dir DIR] [--set k=v]... [--resume]`,
// and the run itself (run_training), which `moetrain sft` shares.
// Without --config it trains the embedded quickstart preset. Under mpirun /
// srun every rank runs this same command (docs/distributed.md): rank 0 prints
// and writes metrics; any rank's error ends the whole job.
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>

#include <filesystem>

#include "cli/commands.h"
#include "cli/train_run.h"
#include "train/phase_schedule.h"
#include "cli/flag_checks.h"
#include "core/stop_signal.h"
#include "rundir/run_dir.h"
#include "cli/embedded_configs.h"
#include "dist/mpi_comm.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace mt {

ExitCode run_training(const std::string& cmd, const RunConfig& config, const TrainArgs& a) {
  std::unique_ptr<FaultInjector> faults;
  if (!a.inject_fault.empty()) {
    auto f = parse_fault_spec(a.inject_fault);
    if (!f) {
      fmt::print(stderr, "moetrain {}: {}\n", cmd, f.status().message());
      return ExitCode::kUsage;
    }
    faults = std::move(f.value());
  }
  if (!a.heartbeat.empty()) {
    // A supervised rank must not outlive its launcher: a relaunch would
    // race it for the run directory.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    std::error_code ec;
    std::filesystem::create_directories(a.heartbeat, ec);
  }
  // The world outlives the trainer (MPI is finalised when it goes).
  std::unique_ptr<Comm> world = make_world_comm(config.dist.timeout_s);
  const bool root = world->rank() == 0, multi = world->size() > 1;
  {
    // A run directory belongs to one run. Every rank checks before any
    // rank can write (the trainer's start-up is collective); only rank 0
    // moves an old run aside.
    const RunDirMode mode = a.resume ? RunDirMode::kResume : a.move_aside ? RunDirMode::kMoveAside : RunDirMode::kFresh;
    if (mode != RunDirMode::kMoveAside || root) {
      auto moved = prepare_run_dir(a.run_dir, mode);
      if (!moved) {
        fmt::print(stderr, "moetrain {}: {}\n", cmd, moved.status().message());
        if (multi) abort_job(*world, int(ExitCode::kUsage));
        return ExitCode::kUsage;
      }
      if (!moved->empty()) fmt::print(stderr, "# moved the previous run in {} to {}\n", a.run_dir, *moved);
    }
  }
  const std::string who = multi ? fmt::format("rank {}: ", world->rank()) : "";
  // One rank failing ends the job (the others would wait for it).
  auto fail = [&](const std::string& msg) {
    fmt::print(stderr, "moetrain {}: {}{}\n", cmd, who, msg);
    if (multi) abort_job(*world, int(ExitCode::kFailed));
    return ExitCode::kFailed;
  };
  TrainerOptions opt;
  opt.run_dir = a.run_dir;
  opt.resume = a.resume;
  opt.progress = !a.no_progress && root;
  opt.print_config = root;
  opt.comm = world.get();
  opt.faults = faults.get();
  if (!a.stop_at.empty()) {
    auto sched = PhaseSchedule::make(config);
    auto stop = sched ? sched->stop_step(a.stop_at) : Result<int64_t>(sched.status());
    if (!stop) {
      fmt::print(stderr, "moetrain {}: {}\n", cmd, stop.status().message());
      if (multi) abort_job(*world, int(ExitCode::kUsage));
      return ExitCode::kUsage;
    }
    opt.stop_at_step = *stop;
  }
  opt.heartbeat_dir = a.heartbeat;
  auto trainer = Trainer::create(config, opt);
  if (!trainer) return fail(trainer.status().message());
  install_stop_signal_handlers();  // Ctrl-C / SIGTERM / SIGUSR1: finish the step, checkpoint, exit
  Status s = trainer.value()->run();
  if (!s) return fail(s.message());
  if (const int sig = trainer.value()->stopped_by_signal()) return stopped_exit_code(sig);
  const std::string hash = trainer.value()->state_hash();  // collective under MPI
  if (root)
    fmt::print(stderr, "# done: step {}, state hash {}, metrics in {}/metrics.jsonl\n", trainer.value()->step(), hash,
               a.run_dir);
  return ExitCode::kOk;
}

void register_train(CLI::App& app, CommandAction& run) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* sub = app.add_subcommand("train", "Train a model (one process, or every rank of mpirun -np N).");
  sub->add_option("--config", args->config, "TOML config file (default: the embedded quickstart preset)");
  sub->add_option("--preset", args->preset, "Embedded preset instead of a file, e.g. quickstart, bench/tiny");
  sub->add_option("--run-dir", args->run_dir, "Where metrics.jsonl and checkpoints/ go")->capture_default_str();
  sub->add_option("--set", args->sets, "Override a config key: section.key=value (repeatable)");
  sub->add_flag("--resume", args->resume,
                "Continue the run in --run-dir from its newest valid checkpoint, with its saved config.toml unless "
                "--config/--preset is given (--set may change only the keys docs/training.md lists as safe)");
  sub->add_flag("--move-aside", args->move_aside,
                "Start a new run even if --run-dir holds one: the old run is renamed to RUN_DIR.prev-N (never deleted)");
  sub->add_flag("--no-progress", args->no_progress, "No live progress line");
  sub->add_option("--stop-at", args->stop_at,
                  "Stop after this step, or at the end of the phase of this name, with a checkpoint, as if "
                  "interrupted (the schedule keeps train.steps; --resume continues)");
  sub->add_option("--heartbeat", args->heartbeat,
                  "Supervised runs (moetrain supervise sets it): keep DIR/rank_R.json current every step, and die "
                  "with the parent process");
  sub->add_option(
      "--inject-fault", args->inject_fault,
      "Testing only: KIND:RANK:STEP makes that rank misbehave at STEP: hang, kill (SIGKILL at the step), killmid "
      "(in its middle), slow, nan (a non-finite gradient), spike (a loss spike), wronggemm (its GEMMs off "
      "by 1e-3 from STEP on); docs/training.md");
  sub->callback([args, &run] {
    run = [args]() -> ExitCode {
      if (args->resume && args->move_aside) {
        fmt::print(stderr, "moetrain train: --resume and --move-aside exclude each other\n");
        return ExitCode::kUsage;
      }
      Result<RunConfig> cfg = choose_run_config(
          RunConfigChoice{args->config, args->preset, args->run_dir, args->resume, args->sets},
          [](const std::string& name) -> const std::string* {
            const EmbeddedConfig* e = find_embedded_config(name);
            return e ? &e->text : nullptr;
          });
      if (cfg) {
        Status limits = check_trainer_limits(cfg.value());
        if (!limits) cfg = limits;
      }
      if (!cfg) {
        fmt::print(stderr, "moetrain train: {}\n", cfg.status().message());
        return ExitCode::kUsage;
      }
      return run_training("train", cfg.value(), *args);
    };
  });
}

}  // namespace mt
