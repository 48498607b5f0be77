// cmd_supervise.cpp — `moetrain supervise --hosts FILE --run-dir DIR [options]
// -- <train args>`: a training job under mpirun, kept running through rank
// deaths and hangs (src/supervise/supervisor.h). Exit 2 for bad options or
// hosts file, 1 when the run cannot go on (too few hosts, repeated failure
// without progress, a job refused at start).
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "supervise/supervisor.h"

namespace mt {

void register_supervise(CLI::App& app, CommandAction& run) {
  auto o = std::make_shared<SupervisorOptions>();
  CLI::App* sub = app.add_subcommand(
      "supervise",
      "Run `moetrain train` under mpirun and keep it going: on a rank death or hang, mark the host, relaunch from the "
      "newest checkpoint on a spare or on fewer ranks (events in RUN_DIR/events.jsonl).");
  sub->add_option("--hosts", o->hosts_file, "Hosts file (OpenMPI syntax: one host a line, optional slots=N)")
      ->required();
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
  sub->add_flag("--local", o->local, "Every host is this machine (one box): no --host to mpirun");
  sub->add_option("train_args", o->train_args, "Arguments of `moetrain train` (after --), e.g. --config C.toml");
  sub->callback([o, &run] {
    run = [o]() -> ExitCode {
      SupervisorOptions opt = *o;
      opt.train_args.insert(opt.train_args.begin(), "train");
      for (const std::string& a : opt.train_args)
        if (a == "--run-dir" || a == "--resume" || a == "--heartbeat" || a == "--move-aside") {
          fmt::print(stderr, "moetrain supervise: {} is the supervisor's to set; give --run-dir before --\n", a);
          return ExitCode::kUsage;
        }
      if (opt.mpirun.find('/') == std::string::npos) {
        for (const char* dir : {"/usr/bin/", "/usr/local/bin/"})
          if (std::filesystem::exists(std::string(dir) + opt.mpirun)) {
            opt.mpirun = std::string(dir) + opt.mpirun;
            break;
          }
      }
      Status s = supervise(opt);
      if (!s) {
        fmt::print(stderr, "moetrain supervise: {}\n", s.message());
        return ExitCode::kFailed;
      }
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
