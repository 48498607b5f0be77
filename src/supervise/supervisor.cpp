// supervisor.cpp — see supervisor.h. The loop: recover hosts, choose the
// ranks, launch, watch, classify the failure, mark the host, repeat.
#include "supervise/supervisor.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "core/file_io.h"
#include "core/stop_signal.h"
#include "core/subprocess.h"
#include "rundir/events_log.h"
#include "rundir/heartbeat.h"
#include "rundir/metrics_log.h"
#include "train/run_config.h"
#include "rundir/run_dir.h"
#include "train/trainer.h"

namespace mt {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct State {
  std::vector<Host> hosts;
  int64_t target_ranks = 0;   // the ranks the job started with
  int64_t launches = 0, failures = 0;
  int64_t lost_steps = 0;     // steps computed and then lost to failures
  double supervised_s = 0;    // wall time under supervision, over every supervisor invocation
  double restart_s = 0;       // failure detected -> first step of the next launch
  bool finished = false;
};

std::string state_path(const std::string& run_dir) { return run_dir + "/supervisor/state.json"; }

Status save_state(const std::string& run_dir, const State& s) {
  const json j = {{"hosts", hosts_to_json(s.hosts)}, {"target_ranks", s.target_ranks}, {"launches", s.launches},
                  {"failures", s.failures},          {"lost_steps", s.lost_steps},     {"supervised_s", s.supervised_s},
                  {"restart_s", s.restart_s},        {"finished", s.finished}};
  return write_file_atomic(state_path(run_dir), j.dump(2) + "\n");
}

Result<State> load_state(const std::string& run_dir) {
  auto text = read_file(state_path(run_dir), "supervisor state");
  if (!text) return text.status();
  const json j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return Status::errorf("{}: not JSON", state_path(run_dir));
  State s;
  auto hosts = hosts_from_json(j["hosts"]);
  if (!hosts) return hosts.status();
  s.hosts = std::move(hosts.value());
  s.target_ranks = j.value("target_ranks", int64_t(0));
  s.launches = j.value("launches", int64_t(0));
  s.failures = j.value("failures", int64_t(0));
  s.lost_steps = j.value("lost_steps", int64_t(0));
  s.supervised_s = j.value("supervised_s", 0.0);
  s.restart_s = j.value("restart_s", 0.0);
  s.finished = j.value("finished", false);
  return s;
}

// The committed step the next launch resumes from (0: none).
int64_t resume_step(const std::string& run_dir) {
  auto dir = find_latest_checkpoint_dir(run_dir);
  if (!dir) return 0;
  const std::string name = fs::path(*dir).filename().string();  // step_00000123
  return std::strtoll(name.c_str() + 5, nullptr, 10);
}

// The global batch of the run (RUN_DIR/config.toml once the job has started).
int64_t batch_size(const std::string& run_dir) {
  auto cfg = load_run_config(saved_config_path(run_dir), {});
  return cfg ? cfg->train.batch_size : 0;
}

// The rank of a failed process, from mpirun's report or the trainer's own messages.
int64_t failed_rank_in_log(const std::string& log) {
  // A health check's verdict names the rank that computed wrong; the rank
  // that happened to abort first (mpirun's report) may be another.
  static const std::regex patterns[] = {
      std::regex(R"(health check failed, culprit rank (\d+))"), std::regex(R"(process rank (\d+))"),
      std::regex(R"(Process name: \[\[\d+,\d+\],(\d+)\])"), std::regex(R"(MPI_ABORT was invoked on rank (\d+))"),
      std::regex(R"(rank (\d+): injected fault)"), std::regex(R"(moetrain train: rank (\d+):)"),
      // srun's own report last, and only for one task ("tasks 0-1" names none)
      std::regex(R"(srun: error: \S+: task (\d+):)")};
  for (const std::regex& re : patterns) {
    std::smatch m;
    if (std::regex_search(log, m, re)) return std::strtoll(m[1].str().c_str(), nullptr, 10);
  }
  return -1;
}

// Rank r's host: ranks fill the active hosts' slots in file order.
Host* host_of_rank(std::vector<Host>& hosts, int64_t rank) {
  int64_t r = 0;
  for (Host& h : hosts) {
    if (h.state != HostState::kActive) continue;
    if (rank < r + h.slots) return &h;
    r += h.slots;
  }
  return nullptr;
}

void say(const std::string& msg) { fmt::print(stderr, "# supervise: {}\n", msg); }

}  // namespace

// Hosts back from their recovery time, then spares until the target rank
// count is met; each logged and said.
void admit_hosts(State& st, const std::string& run_dir, double now) {
  for (const std::string& name : recover_hosts(st.hosts, now)) {
    append_event(run_dir, {{"event", "host back"}, {"host", name}});
    say("host " + name + " is back");
  }
  while (active_ranks(st.hosts) < st.target_ranks) {
    std::string name;
    if (!activate_spare(st.hosts, &name)) break;
    // A host back from a failure waits among the spares, but is not one of
    // the spares the user set aside: say which it is.
    const auto h = std::find_if(st.hosts.begin(), st.hosts.end(), [&](const Host& x) { return x.name == name; });
    const bool recovered = h != st.hosts.end() && !h->failures.empty();
    append_event(run_dir, {{"event", "spare in"}, {"host", name}, {"recovered", recovered}});
    say(recovered ? "host " + name + ", back after a failure, rejoins" : "spare host " + name + " joins");
  }
}

// The launcher's command line for `ranks` ranks on the active hosts, in
// file order; `host_list` gets mpirun's --host value ("n0:2,n1:2"). srun
// gets the same hosts as --nodelist with block distribution, so ranks fill
// the hosts in order as with mpirun (a job step of the allocation; a rank
// that dies ends the step: --kill-on-bad-exit).
std::vector<std::string> launch_argv(const SupervisorOptions& opt, const State& st, const std::string& exe,
                                     int64_t ranks, const std::string& hb_dir, std::string& host_list) {
  host_list.clear();
  std::string node_list;
  int64_t left = ranks, nodes = 0;
  for (const Host& h : st.hosts) {
    if (h.state != HostState::kActive || left <= 0) continue;
    const int64_t n = std::min(left, h.slots);
    host_list += (host_list.empty() ? "" : ",") + h.name + ":" + std::to_string(n);
    node_list += (node_list.empty() ? "" : ",") + h.name;
    left -= n;
    ++nodes;
  }
  std::vector<std::string> argv;
  if (opt.launcher == Launcher::kSrun) {
    argv = {opt.srun,
            "--mpi=pmix",
            "--kill-on-bad-exit=1",
            "--distribution=block",
            "--ntasks",
            std::to_string(ranks),
            "--nodes",
            std::to_string(nodes),
            "--nodelist",
            node_list};
  } else {
    argv = {opt.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(ranks)};
    if (!opt.local) argv.insert(argv.end(), {"--host", host_list});
  }
  argv.push_back(exe);
  for (size_t i = 0; i < opt.train_args.size(); ++i) {
    // Injected faults are for the first launch: a relaunch must not replay them.
    if (st.launches > 0 && opt.train_args[i] == "--inject-fault") {
      ++i;
      continue;
    }
    argv.push_back(opt.train_args[i]);
  }
  argv.insert(argv.end(), {"--run-dir", opt.run_dir, "--resume", "--no-progress", "--heartbeat", hb_dir});
  return argv;
}

// The run finished: goodput against the checkpoint/restart model and the
// Young/Daly interval, logged and said; the state saved as finished.
// `text`: the tail of the last launch's log.
Status finish(const SupervisorOptions& opt, State& st, const std::string& text) {
  st.finished = true;
  const int64_t steps = resume_step(opt.run_dir);
  append_event(opt.run_dir, {{"event", "finished"}, {"step", steps}});
  // Goodput: the kept steps' compute time over the wall time supervised.
  double kept_s = 0, ckpt_every = 0;
  int64_t rows = 0;
  for (const json& j : read_metrics_lines(opt.run_dir))
    if (j.contains("step_time_s") && j["step_time_s"].is_number()) kept_s += j["step_time_s"].get<double>(), ++rows;
  auto cfg = load_run_config(saved_config_path(opt.run_dir), {});
  if (cfg) ckpt_every = double(cfg->train.checkpoint_every);
  const double step_s = rows > 0 ? kept_s / double(rows) : 0;
  const double goodput = st.supervised_s > 0 ? kept_s / st.supervised_s : 0;
  // The planner's model (Young/Daly): lose half an interval and the restart per failure.
  const double mtbf = st.failures > 0 ? st.supervised_s / double(st.failures) : INFINITY;
  const double interval = ckpt_every * step_s;
  const double restart = st.failures > 0 ? st.restart_s / double(st.failures) : 0;
  const double predicted = std::isfinite(mtbf) ? std::max(0.0, 1.0 - (interval / 2 + restart) / mtbf) : 1.0;
  // Young/Daly: the interval that balances checkpoint cost against lost
  // work is sqrt(2 delta MTBF), delta = a checkpoint's training-thread cost
  // (the last launch's closing line says it).
  double delta = NAN;
  {
    std::smatch m;
    static const std::regex re(R"(# checkpoints: (\d+) \([a-z]+\), ([0-9.]+) s on the training thread)");
    if (std::regex_search(text, m, re)) delta = std::stod(m[2].str()) / std::stod(m[1].str());
  }
  const double young = std::isfinite(mtbf) && std::isfinite(delta) ? std::sqrt(2 * delta * mtbf) : NAN;
  const json g = {{"event", "goodput"},
                  {"failures", st.failures},
                  {"launches", st.launches},
                  {"lost_steps", st.lost_steps},
                  {"restart_s", st.restart_s},
                  {"supervised_s", st.supervised_s},
                  {"compute_s", kept_s},
                  {"goodput", goodput},
                  {"predicted_goodput", predicted},
                  {"checkpoint_cost_s", std::isfinite(delta) ? json(delta) : json()},
                  {"young_daly_interval_s", std::isfinite(young) ? json(young) : json()}};
  append_event(opt.run_dir, g);
  MT_RETURN_IF_ERROR(save_state(opt.run_dir, st));
  say(
      fmt::format("finished at step {}: {} interruptions, {} launches, {} steps lost, {:.1f} s restarting; goodput "
                  "{:.1f}% of {:.1f} s supervised (compute time of the kept steps); the checkpoint/restart model "
                  "predicts {:.1f}% for the same failure rate (MTBF {:.1f} s), checkpoint interval ({:.1f} s) and "
                  "restart time ({:.1f} s)",
                  steps, st.failures, st.launches, st.lost_steps, st.restart_s, 100 * goodput, st.supervised_s,
                  100 * predicted, mtbf, interval, restart));
  if (std::isfinite(young))
    say(
        fmt::format("a checkpoint cost {:.3f} s of training time; for the measured MTBF the Young/Daly interval is "
                    "{:.1f} s = about {:.0f} steps (train.checkpoint_every is {:.0f})",
                    delta, young, step_s > 0 ? young / step_s : 0.0, ckpt_every));
  return Status::ok();
}

// What ended a launch that did not finish: its kind ("hang", "straggler",
// "exit"), the detail, the rank to blame (-1: unknown), the last step done.
struct Failure {
  std::string kind, detail;
  int64_t culprit = -1, last_step = 0;
  int exit_code = 0;
};

// A failed launch: counted with the steps it lost, the rank and its host
// named (from the log when the watch did not name one), the host marked
// failed or quarantined; each logged and said.
void record_failure(const SupervisorOptions& opt, State& st, double failed_at, Failure f, const std::string& log_text) {
  ++st.failures;
  st.lost_steps += std::max<int64_t>(0, f.last_step - resume_step(opt.run_dir));
  if (f.kind.empty()) {
    f.kind = "exit";
    f.culprit = failed_rank_in_log(log_text);
    f.detail = fmt::format("mpirun exited with {}", f.exit_code);
  }
  Host* bad = f.culprit >= 0 ? host_of_rank(st.hosts, f.culprit) : nullptr;
  json ev = {{"event", "failure"}, {"kind", f.kind}, {"detail", f.detail}, {"step", f.last_step}, {"rank", f.culprit}};
  if (bad) ev["host"] = bad->name;
  append_event(opt.run_dir, ev);
  say(fmt::format("failure ({}): {}; rank {}{} at step {}", f.kind, f.detail, f.culprit,
                  bad ? " on " + bad->name : std::string(" (host unknown)"), f.last_step));
  if (!bad) return;
  const HostState s = mark_failed(*bad, failed_at, opt.policy);
  append_event(opt.run_dir, {{"event", s == HostState::kQuarantined ? "host quarantined" : "host failed"},
                             {"host", bad->name},
                             {"back_at", s == HostState::kQuarantined ? 0.0 : bad->back_at}});
  if (s == HostState::kQuarantined) say("host " + bad->name + " failed twice within the window: quarantined");
}

// The state to supervise from: the saved one of a restarted supervisor, or
// a fresh one from the hosts file, checked before anything is written (a
// refused supervise leaves no directory). `finished`: the run is done.
Result<State> starting_state(const SupervisorOptions& opt, bool& finished) {
  finished = false;
  if (fs::exists(state_path(opt.run_dir))) {
    auto s = load_state(opt.run_dir);
    if (!s) return s.status();
    if (s.value().finished) {
      say("the run already finished under supervision (" + state_path(opt.run_dir) + ")");
      finished = true;
      return s;
    }
    append_event(opt.run_dir, {{"event", "supervisor restarted"}, {"launches_so_far", s.value().launches}});
    say(fmt::format("continuing to supervise {} ({} launches so far)", opt.run_dir, s.value().launches));
    if (opt.hosts_file.empty()) {  // a requeued job may hold other nodes: the allocation now, not the saved one
      auto now = allocation_hosts(opt.spares);
      if (!now) return now.status();
      auto names = [](const std::vector<Host>& hs) {
        std::vector<std::string> n;
        for (const Host& h : hs) n.push_back(h.name);
        return n;
      };
      if (names(now.value()) != names(s.value().hosts)) {
        s.value().hosts = std::move(now.value());
        s.value().target_ranks = active_ranks(s.value().hosts);
        append_event(opt.run_dir, {{"event", "allocation changed"}, {"hosts", names(s.value().hosts)}});
        say("the allocation holds other hosts than the saved state: supervising those (SLURM_JOB_NODELIST)");
      }
    }
    return s;
  }
  State st;
  auto hosts = [&]() -> Result<std::vector<Host>> {
    if (opt.hosts_file.empty()) return allocation_hosts(opt.spares);
    auto text = read_file(opt.hosts_file, "hosts file");
    if (!text) return text.status();
    return parse_hosts(*text, opt.hosts_file, opt.spares);
  }();
  if (!hosts) return hosts.status();
  st.hosts = std::move(hosts.value());
  st.target_ranks = active_ranks(st.hosts);
  const std::string source = opt.hosts_file.empty() ? "the Slurm allocation (SLURM_JOB_NODELIST)" : opt.hosts_file;
  if (st.target_ranks < opt.min_ranks)
    return Status::errorf("{}: {} ranks on the non-spare hosts, fewer than --min-ranks {}", source, st.target_ranks,
                          opt.min_ranks);
  return st;
}

// The largest rank count <= n that divides the global batch (n itself when
// the batch is unknown): every rank gets the same number of sequences.
int64_t ranks_dividing(int64_t batch, int64_t n) {
  if (batch > 0)
    while (n > 0 && batch % n != 0) --n;
  return n;
}

// How one launch's watch ended.
struct WatchOutcome {
  bool exited = false;    // the job exited by itself (code holds its status)
  bool scale_up = false;  // hosts came back with room to grow: restart larger
  int code = 0;
  int stop_signal = 0;               // a stop signal the supervisor received and passed on to the launcher
  std::string failure_kind, detail;  // "hang" or "straggler", and what was seen
  int64_t culprit = -1;              // the rank to blame, if one is
  int64_t last_step = 0;             // the last step every heartbeat got past
};

// Watches a launched job through its heartbeats until it exits, hangs, is
// held up by a straggler (policy "replace"), or returning hosts leave room
// to grow. The first heartbeat closes the restart time begun at failed_at.
WatchOutcome watch_launch(const SupervisorOptions& opt, State& st, Child& child, int64_t ranks, int64_t from_step,
                          double launched, double& failed_at, int64_t batch) {
  const std::string hb_dir = opt.run_dir + "/supervisor/heartbeat";
  WatchOutcome w;
  w.last_step = from_step;
  bool first_step_seen = false;
  std::map<int64_t, int64_t> slow_steps;  // rank -> consecutive steps it was the straggler
  std::map<int64_t, int64_t> slow_seen;   // rank -> the last step counted
  std::set<int64_t> named;                // stragglers reported in this launch
  double stop_passed_at = 0;              // when a stop signal was passed on to the job
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (child.poll(&w.code)) {
      w.exited = true;
      return w;
    }
    // Passed on once, to the launcher alone: mpirun and srun pass it on to
    // every rank, which stops at a checkpoint; then the job exits.
    if (const int sig = stop_signal_received(); sig != 0 && w.stop_signal == 0) {
      w.stop_signal = sig;
      stop_passed_at = wall_seconds();
      ::kill(child.pid(), sig);
      say(fmt::format("{}: passed on to the job, which stops at a checkpoint", strsignal(sig)));
    }
    if (w.stop_signal != 0) {  // no hang or straggler verdicts while it stops, but no waiting for ever
      if (wall_seconds() - stop_passed_at > opt.heartbeat_timeout_s) {
        say(fmt::format("the job did not stop within --heartbeat-timeout {} s of the signal: ending it",
                        opt.heartbeat_timeout_s));
        w.failure_kind = "stop";
        return w;
      }
      continue;
    }
    const double t = wall_seconds();
    const std::vector<Heartbeat> beats = read_heartbeats(hb_dir);
    for (const Heartbeat& h : beats) w.last_step = std::max(w.last_step, h.step - 1);
    if (!first_step_seen && !beats.empty()) {
      first_step_seen = true;
      if (failed_at > 0) st.restart_s += t - failed_at;
      failed_at = -1;
    }
    if (int64_t(beats.size()) < ranks) {
      if (t - launched > opt.startup_timeout_s) {
        w.failure_kind = "hang";
        w.detail = fmt::format("only {} of {} ranks started within {} s", beats.size(), ranks, opt.startup_timeout_s);
        return w;
      }
      continue;
    }
    std::string stale;
    for (const Heartbeat& h : beats)
      if (h.phase != "done" && t - h.time > opt.heartbeat_timeout_s) {
        stale += fmt::format("{}rank {} (pid {} on {}) silent for {:.0f} s in {} {}", stale.empty() ? "" : "; ", h.rank,
                             h.pid, h.host, t - h.time, h.phase, h.step);
        if (w.culprit < 0) w.culprit = h.rank;
      }
    if (!stale.empty()) {
      w.failure_kind = "hang";
      w.detail = stale;
      return w;
    }
    // Stragglers: the others wait for them, they wait least.
    double max_wait = 0;
    for (const Heartbeat& h : beats) max_wait = std::max(max_wait, h.wait_s);
    if (max_wait > opt.straggler_wait_s && beats.size() > 1) {
      for (const Heartbeat& h : beats) {
        if (h.wait_s < 0 || slow_seen[h.rank] == h.step) continue;
        slow_seen[h.rank] = h.step;
        slow_steps[h.rank] = h.wait_s < 0.25 * max_wait ? slow_steps[h.rank] + 1 : 0;
        if (slow_steps[h.rank] < 3 || named.count(h.rank)) continue;
        named.insert(h.rank);
        const Host* host = host_of_rank(st.hosts, h.rank);
        const std::string what = fmt::format(
            "rank {} (pid {} on {}) keeps the others waiting: it waited {:.3f} s "
            "of a {:.3f} s step, the others up to {:.3f} s",
            h.rank, h.pid, h.host, h.wait_s, h.step_s, max_wait);
        append_event(opt.run_dir, {{"event", "straggler"},
                                   {"rank", h.rank},
                                   {"host", host ? host->name : ""},
                                   {"step", h.step},
                                   {"detail", what},
                                   {"policy", opt.straggler_policy}});
        say("straggler: " + what);
        if (opt.straggler_policy == "replace") {
          w.failure_kind = "straggler";
          w.detail = what;
          w.culprit = h.rank;
        }
      }
      if (w.failure_kind == "straggler") return w;
    }
    // A host back, room to grow, and a checkpoint newer than this launch's start: restart larger.
    for (const std::string& name : recover_hosts(st.hosts, t)) {
      append_event(opt.run_dir, {{"event", "host back"}, {"host", name}});
      say("host " + name + " is back");
    }
    if (ranks_dividing(batch, std::min(usable_ranks(st.hosts), st.target_ranks)) > ranks &&
        resume_step(opt.run_dir) > from_step) {
      w.scale_up = true;
      return w;
    }
  }
}

Result<int> supervise(const SupervisorOptions& opt) {
  install_stop_signal_handlers();
  auto exe = self_executable();
  if (!exe) return exe.status();
  bool finished = false;
  const bool restarted = fs::exists(state_path(opt.run_dir));
  auto start = starting_state(opt, finished);
  if (!start) return start.status();
  if (finished) return 0;
  State st = std::move(start.value());
  std::error_code ec;
  fs::create_directories(opt.run_dir + "/supervisor/heartbeat", ec);
  if (ec) return Status::errorf("{}: cannot create: {}", opt.run_dir, ec.message());
  if (!restarted) append_event(opt.run_dir, {{"event", "supervisor started"}, {"hosts", hosts_to_json(st.hosts)}});
  double session_t0 = wall_seconds();
  auto account = [&] {
    const double now = wall_seconds();
    st.supervised_s += now - session_t0;
    session_t0 = now;
  };
  MT_RETURN_IF_ERROR(save_state(opt.run_dir, st));

  const std::string hb_dir = opt.run_dir + "/supervisor/heartbeat";
  double failed_at = -1;        // when the last failure was detected (for restart time)
  int64_t no_progress = 0;      // launches in a row that failed without a new step
  double waiting_since = -1;
  // Stopped by a signal, the run intact at its newest checkpoint.
  auto stopped = [&](int sig) -> Result<int> {
    append_event(opt.run_dir, {{"event", "stopped"}, {"signal", strsignal(sig)}, {"step", resume_step(opt.run_dir)}});
    say(fmt::format("stopped by {} at step {}; started again, it resumes there", strsignal(sig),
                    resume_step(opt.run_dir)));
    account();
    MT_RETURN_IF_ERROR(save_state(opt.run_dir, st));
    return sig;
  };
  while (true) {
    const double now = wall_seconds();
    if (const int sig = stop_signal_received()) return stopped(sig);
    admit_hosts(st, opt.run_dir, now);
    // Elastic: the largest rank count that divides the global batch.
    const int64_t batch = batch_size(opt.run_dir);
    const int64_t ranks = ranks_dividing(batch, active_ranks(st.hosts));
    if (ranks < opt.min_ranks) {
      if (waiting_since < 0) {
        waiting_since = now;
        append_event(opt.run_dir, {{"event", "waiting for hosts"}, {"usable_ranks", ranks}, {"min_ranks", opt.min_ranks}});
      }
      if (now - waiting_since > opt.wait_for_hosts_s) {
        account();
        MT_RETURN_IF_ERROR(save_state(opt.run_dir, st));
        return Status::errorf("{} usable ranks, fewer than --min-ranks {}, and no host came back within {} s; the run "
                              "is intact: start the supervisor again when hosts are back (hosts: {})",
                              ranks, opt.min_ranks, opt.wait_for_hosts_s, hosts_to_json(st.hosts).dump());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    waiting_since = -1;

    // Launch.
    for (const auto& e : fs::directory_iterator(hb_dir, ec)) fs::remove(e.path(), ec);
    const int64_t from_step = resume_step(opt.run_dir);
    std::string host_list;
    const std::vector<std::string> argv = launch_argv(opt, st, exe.value(), ranks, hb_dir, host_list);
    const std::string log = fmt::format("{}/supervisor/launch_{:03d}.log", opt.run_dir, st.launches);
    ChildSpec spec;
    spec.argv = argv;
    spec.log_path = log;
    spec.own_group = true;
    spec.env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
    auto child = Child::spawn(spec);
    if (!child) return child.status();
    ++st.launches;
    const double launched = wall_seconds();
    append_event(opt.run_dir, {{"event", "launch"},
                               {"attempt", st.launches},
                               {"ranks", ranks},
                               {"hosts", host_list},
                               {"from_step", from_step},
                               {"log", log}});
    say(fmt::format("launch {}: {} ranks on {} from step {} (log {})", st.launches, ranks, host_list, from_step, log));
    MT_RETURN_IF_ERROR(save_state(opt.run_dir, st));

    // Watch.
    const WatchOutcome w = watch_launch(opt, st, child.value(), ranks, from_step, launched, failed_at, batch);
    const bool exited = w.exited, scale_up = w.scale_up;
    const int code = w.code;
    const int64_t last_step = w.last_step;
    if (scale_up) {
      child->terminate(5.0);
      append_event(opt.run_dir, {{"event", "scale up"}, {"from_ranks", ranks}, {"step", resume_step(opt.run_dir)}});
      say(fmt::format("hosts are back: restarting from step {} on more than {} ranks", resume_step(opt.run_dir), ranks));
      account();
      MT_RETURN_IF_ERROR(save_state(opt.run_dir, st));
      continue;
    }
    if (!exited) child->terminate(5.0);
    const std::string text = file_tail(log, 1 << 16);
    if (exited && code == 0 && text.find("# done: step") != std::string::npos) {
      account();
      MT_RETURN_IF_ERROR(finish(opt, st, text));
      return 0;
    }
    // The job stopped at a checkpoint: on the signal passed on, or on Slurm's
    // notice reaching the ranks directly (exit 75 from srun's job step).
    if (exited && text.find("# stopped at step") != std::string::npos &&
        (code == 75 || (w.stop_signal != 0 && (code == 128 + SIGTERM || code == 128 + SIGINT))))
      return stopped(code == 75 ? SIGUSR1 : w.stop_signal);
    // Stopped on a signal passed on, without a checkpoint line (a launcher
    // that ends its ranks early, or the wait above ran out): a stop, not a
    // host failure; the next start resumes from the last checkpoint.
    if (w.stop_signal != 0) return stopped(w.stop_signal);
    if (exited && code == 2 && last_step == from_step)
      return Status::errorf("the job was refused at start (exit 2: configuration or usage), not a host failure; see "
                            "{}:\n{}",
                            log, file_tail(log, 1500));

    // A failure: name the rank and its host, mark the host, go again.
    failed_at = wall_seconds();
    record_failure(opt, st, failed_at, Failure{w.failure_kind, w.detail, w.culprit, last_step, code}, text);
    no_progress = last_step > from_step ? 0 : no_progress + 1;
    account();
    MT_RETURN_IF_ERROR(save_state(opt.run_dir, st));
    if (no_progress >= 3)
      return Status::errorf("three launches in a row failed without a step of progress: not a host failure; the last "
                            "log {}:\n{}",
                            log, file_tail(log, 1500));
    if (st.launches > opt.max_restarts)
      return Status::errorf("{} launches (--max-restarts {}); stopping with the run intact", st.launches,
                            opt.max_restarts);
  }
}

}  // namespace mt
