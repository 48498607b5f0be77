// run_queue.cpp — see run_queue.h. The parent only schedules, polls and
// reports; all training happens in the children.
#include "train/run_queue.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/progress.h"
#include "core/subprocess.h"
#include "core/threads.h"
#include "rundir/metrics_log.h"
#include "core/timer.h"

namespace mt {

std::string logged_state_hash(const std::string& log) {
  const std::string tail = file_tail(log, 1 << 16);
  const std::string key = "state hash ";
  const size_t at = tail.rfind(key);
  if (at == std::string::npos) return {};
  const size_t from = at + key.size();
  return tail.substr(from, tail.find_first_of(", \n", from) - from);
}

Status run_queue(std::vector<QueuedRun>& runs, const RunQueueOptions& opt) {
  auto exe = self_executable();
  if (!exe) return exe.status();
  const int64_t jobs = std::max<int64_t>(1, opt.jobs);
  const int64_t threads = opt.threads > 0 ? opt.threads : int64_t(num_threads());
  const int64_t per_child = std::max<int64_t>(1, threads / jobs);

  auto work = [](const QueuedRun& r) {
    return r.work > 0 ? r.work : double(std::max<int64_t>(1, r.last_step - r.first_step));
  };
  double total_work = 0, done_work = 0;
  for (const QueuedRun& r : runs) {
    total_work += work(r);
    if (r.done) done_work += work(r);
  }
  const double done_before = done_work;

  struct Running {
    size_t index;
    Child child;
  };
  std::vector<Running> running;
  ProgressLine line(stderr, 30);
  const double t0 = now_seconds();
  int64_t finished = 0;
  for (const QueuedRun& r : runs) finished += r.done ? 1 : 0;

  auto ready = [&](const QueuedRun& r) {
    return std::all_of(r.after.begin(), r.after.end(), [&](size_t i) { return runs[i].done; });
  };
  auto is_running = [&](size_t i) {
    return std::any_of(running.begin(), running.end(), [&](const Running& x) { return x.index == i; });
  };

  while (true) {
    // Start what can start, in order.
    for (size_t i = 0; i < runs.size() && int64_t(running.size()) < jobs; ++i) {
      QueuedRun& r = runs[i];
      if (r.done || is_running(i) || !ready(r)) continue;
      ChildSpec spec;
      spec.argv.push_back(exe.value());
      spec.exec_path = ChildSpec::kSameBinary;  // never a rebuilt binary halfway through a queue
      spec.argv.insert(spec.argv.end(), r.args.begin(), r.args.end());
      spec.env = {{"OMP_NUM_THREADS", std::to_string(per_child)}};
      spec.log_path = r.log_path;
      auto c = Child::spawn(spec);
      if (!c) return Status::errorf("{}: {}", r.name, c.status().message());
      running.push_back({i, std::move(c.value())});
    }
    if (running.empty()) break;

    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (size_t k = 0; k < running.size();) {
      int code = 0;
      if (!running[k].child.poll(&code)) {
        ++k;
        continue;
      }
      QueuedRun& r = runs[running[k].index];
      running.erase(running.begin() + std::ptrdiff_t(k));
      const bool failure_is_data = (code == 1 || code == 2) && r.on_failed;
      if (code != 0 && !failure_is_data) {
        line.finish();
        running.clear();  // kills the others
        return Status::errorf("{} failed (exit {}); the end of its log {}:\n{}", r.name, code, r.log_path,
                              file_tail(r.log_path));
      }
      const std::function<Status()> record =
          failure_is_data ? std::function<Status()>([&r, code] { return r.on_failed(code); }) : r.on_done;
      if (record) {
        Status s = record();
        if (!s) {
          line.finish();
          running.clear();
          return Status::errorf("{}: {}", r.name, s.message());
        }
      }
      r.done = true;
      done_work += work(r);
      ++finished;
    }

    if (opt.progress) {
      double partial = 0;
      std::string now;
      for (const Running& x : running) {
        const QueuedRun& r = runs[x.index];
        const int64_t step = std::clamp(latest_logged_step(r.run_dir), r.first_step, r.last_step);
        partial += work(r) * double(step - r.first_step) / double(std::max<int64_t>(1, r.last_step - r.first_step));
        now += fmt::format(" | {} {}/{}", r.name, step, r.last_step);
      }
      const double here = done_work - done_before + partial;  // work done by this invocation
      const double elapsed = now_seconds() - t0;
      const double left = total_work - done_work - partial;
      const std::string eta = here > 0 && elapsed > 2 ? ProgressLine::format_eta(elapsed / here * left) : "?";
      line.update(finished, int64_t(runs.size()),
                  fmt::format("{} done, {:.0f}% of the compute{} | ETA {}", opt.label,
                              100.0 * (done_work + partial) / total_work, now, eta));
    }
  }
  line.finish();
  return Status::ok();
}

}  // namespace mt
