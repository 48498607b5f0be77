// cmd_supervise.cpp — `moetrain supervise [--hosts FILE] --run-dir DIR [options]
// -- <train args>`: a training job under mpirun or srun, kept running through
// rank deaths and hangs (src/supervise/supervisor.h); without --hosts, on the
// hosts of the Slurm allocation it runs in. Exit 2 for bad options or
// hosts file, 1 when the run cannot go on (too few hosts, repeated failure
// without progress, a job refused at start).
#include <fmt/format.h>

#include <csignal>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "supervise/supervisor.h"

namespace mt {

void register_supervise(CLI::App& app, CommandAction& run) {
  auto o = std::make_shared<SupervisorOptions>();
  auto launcher = std::make_shared<std::string>("mpirun");
  CLI::App* sub = app.add_subcommand(
      "supervise",
      "Run `moetrain train` under mpirun or srun and keep it going: on a rank death or hang, mark the host, relaunch "
      "from the newest checkpoint on a spare or on fewer ranks (events in RUN_DIR/events.jsonl).");
  sub->add_option("--hosts", o->hosts_file,
                  "Hosts file (OpenMPI syntax: one host a line, optional slots=N); without it, the hosts and tasks of "
                  "the Slurm allocation it runs in (SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE)");
  sub->add_option("--launcher", *launcher, "What starts the ranks: mpirun, or srun (PMIx; inside a Slurm allocation)")
      ->check(CLI::IsMember({"mpirun", "srun"}))
      ->capture_default_str();
  sub->add_option("--run-dir", o->run_dir, "The run directory (passed to every launch, with --resume)")->required();
  sub->add_option("--spares", o->spares, "The last N hosts of the file are spares")->check(non_negative());
  sub->add_option("--min-ranks", o->min_ranks, "Fewest ranks to train on; below, wait for hosts (--wait-for-hosts)")
      ->check(positive())
      ->capture_default_str();
  sub->add_option("--heartbeat-timeout", o->heartbeat_timeout_s, "Seconds a rank may stay silent in a step")
      ->check(positive())
      ->capture_default_str();
  sub->add_option("--startup-timeout", o->startup_timeout_s, "Seconds from launch to every rank's first heartbeat")
      ->check(positive())
      ->capture_default_str();
  sub->add_option("--recovery", o->policy.recovery_s, "Seconds until a failed host may be used again")
      ->check(non_negative())
      ->capture_default_str();
  sub->add_option("--quarantine-window", o->policy.quarantine_window_s,
                  "A second failure of a host within this many seconds quarantines it (0: never)")
      ->check(non_negative())
      ->capture_default_str();
  sub->add_option("--wait-for-hosts", o->wait_for_hosts_s, "Seconds to wait below --min-ranks before stopping")
      ->check(non_negative())
      ->capture_default_str();
  sub->add_option("--max-restarts", o->max_restarts, "Launches allowed in all")
      ->check(positive())
      ->capture_default_str();
  sub->add_option("--stragglers", o->straggler_policy,
                  "A rank that keeps the others waiting three steps running: warn (an event) or replace (a failure)")
      ->check(CLI::IsMember({"warn", "replace"}))
      ->capture_default_str();
  sub->add_option("--mpirun", o->mpirun, "The mpirun to use")->capture_default_str();
  sub->add_option("--srun", o->srun, "The srun to use (--launcher srun)")->capture_default_str();
  sub->add_flag("--local", o->local, "Every host is this machine (one box): no --host to mpirun");
  sub->add_option("train_args", o->train_args, "Arguments of `moetrain train` (after --), e.g. --config C.toml");
  sub->callback([o, launcher, &run] {
    run = [o, launcher]() -> ExitCode {
      SupervisorOptions opt = *o;
      opt.launcher = *launcher == "srun" ? Launcher::kSrun : Launcher::kMpirun;
      // Slurm's launcher and the allocation's hosts need an allocation.
      const bool restarted = std::filesystem::exists(opt.run_dir + "/supervisor/state.json");
      if (!in_slurm_allocation() && (opt.launcher == Launcher::kSrun || (opt.hosts_file.empty() && !restarted))) {
        fmt::print(stderr,
                   "moetrain supervise: {} needs a Slurm allocation, and SLURM_JOB_ID is not set (start it "
                   "inside sbatch or salloc{})\n",
                   opt.launcher == Launcher::kSrun ? "--launcher srun" : "no --hosts (the allocation's hosts)",
                   opt.launcher == Launcher::kSrun ? ", or use --launcher mpirun" : ", or give --hosts FILE");
        return ExitCode::kUsage;
      }
      opt.train_args.insert(opt.train_args.begin(), "train");
      for (const std::string& a : opt.train_args)
        if (a == "--run-dir" || a == "--resume" || a == "--heartbeat" || a == "--move-aside") {
          fmt::print(stderr, "moetrain supervise: {} is the supervisor's to set; give --run-dir before --\n", a);
          return ExitCode::kUsage;
        }
      for (std::string* tool : {&opt.mpirun, &opt.srun}) {
        if (tool->find('/') != std::string::npos) continue;
        for (const char* dir : {"/usr/bin/", "/usr/local/bin/"})
          if (std::filesystem::exists(std::string(dir) + *tool)) {
            *tool = std::string(dir) + *tool;
            break;
          }
      }
      Result<int> s = supervise(opt);
      if (!s) {
        fmt::print(stderr, "moetrain supervise: {}\n", s.status().message());
        return ExitCode::kFailed;
      }
      // Stopped at a checkpoint: the codes `train` gives for the same signals.
      return stopped_exit_code(*s);
    };
  });
}

}  // namespace mt
