// e2e.h — helpers for the end-to-end tests (tests/e2e): run the real
// `moetrain` binary as a subprocess (fork/exec, stdout and stderr captured,
// a hard timeout), start it in the background to kill it, per-test temp
// directories under /tmp, and readers for metrics.jsonl and
// `moetrain ckpt inspect --json`. Header-only; POSIX.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/temp_dir.h"
#include <thread>
#include <vector>

#ifndef MT_BINARY_DIR
#error "MT_BINARY_DIR must be defined (tests/CMakeLists.txt)"
#endif

namespace mt::e2e {

namespace fs = std::filesystem;
using nlohmann::json;

inline std::string moetrain_binary() { return MT_BINARY_DIR "/src/moetrain"; }

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

struct ProcessResult {
  int exit_code = -1;   // exit status, or -1 when killed by a signal
  int term_signal = 0;  // signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;
  std::string command;  // for messages
};

inline std::string join_args(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

inline std::ostream& operator<<(std::ostream& os, const ProcessResult& r) {
  return os << "command: " << r.command << "\nexit " << r.exit_code << " signal " << r.term_signal
            << (r.timed_out ? " (timed out)" : "") << "\n--- stdout ---\n"
            << r.out << "\n--- stderr (last 4000 bytes) ---\n"
            << (r.err.size() > 4000 ? r.err.substr(r.err.size() - 4000) : r.err);
}

namespace detail {
// argv as char* for execv; built before fork (the child may only exec).
struct Argv {
  std::vector<std::string> strs;
  std::vector<char*> ptrs;
  explicit Argv(const std::vector<std::string>& a) : strs(a) {
    for (std::string& s : strs) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
};
// This process' environment plus `extra` ("NAME=value", overriding).
inline Argv make_env(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv(*e);
    const std::string name = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const std::string& x : extra) overridden |= x.substr(0, x.find('=')) == name;
    if (!overridden) env.push_back(kv);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return Argv(env);
}
inline void decode_status(int status, ProcessResult& r) {
  if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.term_signal = WTERMSIG(status);
}
}  // namespace detail

// Environment for runs with more than one OpenMP thread: on shared, busy
// cores the default spin-waiting makes a 2-thread run ~10x slower; sleeping
// waits change only speed, never results.
inline const std::vector<std::string> kPassiveOmp = {"OMP_WAIT_POLICY=PASSIVE"};

// Runs argv (argv[0] is a path) to completion, capturing stdout and stderr,
// with `extra_env` ("NAME=value") added to the environment. Kills it with
// SIGKILL after timeout_s.
inline ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s = 120,
                                 const std::vector<std::string>& extra_env = {}) {
  ProcessResult r;
  r.command = join_args(argv);
  detail::Argv a(argv);
  detail::Argv env = detail::make_env(extra_env);
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    r.err = "pipe() failed";
    return r;
  }
  const double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    execve(a.ptrs[0], a.ptrs.data(), env.ptrs.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    r.err = "fork() failed";
    return r;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const double left = timeout_s - (now_s() - t0);
    if (left <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, int(std::min(left, 1.0) * 1000) + 1);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, size_t(got));
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& p : fds)
    if (p.fd >= 0) close(p.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  detail::decode_status(status, r);
  r.seconds = now_s() - t0;
  return r;
}

// A process started in the background with stdout/stderr sent to files.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path)
      : command_(join_args(argv)) {
    detail::Argv a(argv);
    pid_ = fork();
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, 0);
      int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (o >= 0) dup2(o, 1);
      if (e >= 0) dup2(e, 2);
      execv(a.ptrs[0], a.ptrs.data());
      _exit(127);
    }
  }
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      int st;
      waitpid(pid_, &st, 0);
    }
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& command() const { return command_; }
  // True while the process has not exited (reaps it if it has).
  bool running() {
    if (pid_ <= 0 || reaped_) return false;
    int st = 0;
    pid_t w = waitpid(pid_, &st, WNOHANG);
    if (w == 0) return true;
    reaped_ = true;
    detail::decode_status(st, result_);
    return false;
  }
  // SIGKILL if still running; returns whether the kill hit a live process.
  bool kill9() {
    if (!running()) return false;
    kill(pid_, SIGKILL);
    wait();
    return result_.term_signal == SIGKILL;
  }
  // The process's anonymous resident memory (RssAnon: heap, stacks, private
  // mappings; not the page cache of mapped files), 0 once it is gone.
  int64_t rss_anon_bytes() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8)) * 1024;  // "RssAnon:  123 kB"
    return 0;
  }
  // Waits for exit (SIGKILL after timeout_s).
  const ProcessResult& wait(double timeout_s = 120) {
    const double t0 = now_s();
    while (running()) {
      if (now_s() - t0 > timeout_s) {
        result_.timed_out = true;
        kill(pid_, SIGKILL);
      }
      sleep_s(0.002);
    }
    return result_;
  }

 private:
  std::string command_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  ProcessResult result_;
};

using ::mt::testing::TempDir;  // support/temp_dir.h

// The Python of the interop venv (scripts/interop-venv.sh builds it;
// scripts/test.sh does), or $MT_INTEROP_PYTHON when set, or "" with the
// reason in `error`.
inline std::string interop_python(std::string& error) {
  // A developer's override (a venv being built elsewhere); CI never sets it.
  if (const char* py = std::getenv("MT_INTEROP_PYTHON"); py && *py) return py;
  const auto r = run_process({"/bin/bash", std::string(MT_SOURCE_DIR) + "/scripts/interop-venv.sh", "--installed"}, 60);
  if (r.exit_code != 0) {
    error = r.err + "the interop venv is missing: run scripts/interop-venv.sh (scripts/test.sh does)";
    return "";
  }
  std::string path = r.out;
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  return path + "/bin/python";
}

// configs/tiny-test.toml trained `steps` steps on 2 threads into `run_dir`,
// with `sets` as --set overrides: the small model the interop tests export.
inline ProcessResult train_tiny(const std::string& run_dir, const std::vector<std::string>& sets, int steps = 24);

// `moetrain train --no-progress ARGS...`
inline ProcessResult train(const std::vector<std::string>& args, double timeout_s = 120,
                           const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> argv = {moetrain_binary(), "train", "--no-progress"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, timeout_s, extra_env);
}

inline ProcessResult train_tiny(const std::string& run_dir, const std::vector<std::string>& sets, int steps) {
  std::vector<std::string> args = {"--config",  std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml",
                                   "--run-dir", run_dir,
                                   "--set",     "train.steps=" + std::to_string(steps),
                                   "--set",     "train.threads=2"};
  for (const std::string& x : sets) {
    args.push_back("--set");
    args.push_back(x);
  }
  return train(args, 300);
}

// `moetrain ARGS...` (any command), with passive OpenMP waits.
inline ProcessResult moetrain(const std::vector<std::string>& args, double timeout_s = 120) {
  std::vector<std::string> argv = {moetrain_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, timeout_s, kPassiveOmp);
}

// The [model] table of the tiny-test preset (configs/tiny-test.toml) with
// capacity drops, for configs written out whole (a run in phases); the
// vocabulary covers a test dataset's tokenizer of up to `vocab` pieces.
inline std::string tiny_moe_model_toml(int64_t vocab = 512) {
  return "[model]\nvocab_size = " + std::to_string(vocab) +
         "\nd_model = 64\nn_layers = 2\nn_heads = 4\nn_kv_heads = 2\nn_experts = 4\nd_expert = 64\ntop_k = 2\n"
         "capacity_factor = 1.0\n";
}

inline std::vector<std::string> train_argv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {moetrain_binary(), "train", "--no-progress"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

inline std::string ckpt_dir(const std::string& run_dir, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(step));
  return run_dir + "/checkpoints/" + name;
}

// `moetrain ckpt inspect DIR --json`.
struct Inspect {
  ProcessResult proc;
  json info;  // null unless it succeeded and printed valid JSON
  bool ok() const { return proc.exit_code == 0 && info.is_object(); }
  std::string tensor_hash() const { return ok() ? info.value("tensor_hash", std::string()) : std::string(); }
};

inline Inspect inspect(const std::string& dir) {
  Inspect r;
  r.proc = run_process({moetrain_binary(), "ckpt", "inspect", dir, "--json"}, 60);
  if (r.proc.exit_code == 0) r.info = json::parse(r.proc.out, nullptr, /*allow_exceptions=*/false);
  return r;
}

// Every line of RUN_DIR/metrics.jsonl, parsed (a line that does not parse
// becomes a null, which the tests then report).
inline std::vector<json> read_metrics(const std::string& run_dir) {
  std::vector<json> rows;
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) rows.push_back(json::parse(line, nullptr, false));
  return rows;
}

// Every line of RUN_DIR/events.jsonl of the given kind ("start", "spike",
// ...), parsed; lines that do not parse are left out.
inline std::vector<json> read_events(const std::string& run_dir, const std::string& kind) {
  std::vector<json> rows;
  std::ifstream in(run_dir + "/events.jsonl");
  for (std::string line; std::getline(in, line);) {
    json e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == kind) rows.push_back(std::move(e));
  }
  return rows;
}

inline std::vector<double> losses(const std::vector<json>& rows) {
  std::vector<double> v;
  for (const json& r : rows) v.push_back(r.is_object() && r.contains("loss") ? r["loss"].get<double>() : NAN);
  return v;
}

// Checks the metrics hold exactly steps 1..n, once each and in order.
inline ::testing::AssertionResult has_steps_1_to_n(const std::vector<json>& rows, int64_t n) {
  if (int64_t(rows.size()) != n)
    return ::testing::AssertionFailure() << "metrics.jsonl has " << rows.size() << " lines, expected " << n;
  for (int64_t i = 0; i < n; ++i) {
    if (!rows[i].is_object() || !rows[i].contains("step") || !rows[i]["step"].is_number_integer())
      return ::testing::AssertionFailure() << "metrics line " << i + 1 << " is not an object with an integer step";
    if (rows[i]["step"].get<int64_t>() != i + 1)
      return ::testing::AssertionFailure() << "metrics line " << i + 1 << " has step " << rows[i]["step"];
  }
  return ::testing::AssertionSuccess();
}

// The line "# resumed from DIR (step N)" on stderr: {DIR, N}, or {"", -1}.
inline std::pair<std::string, int64_t> resumed_from(const std::string& err) {
  const std::string tag = "# resumed from ";
  size_t at = err.find(tag);
  if (at == std::string::npos) return {"", -1};
  size_t eol = err.find('\n', at);
  std::string line = err.substr(at + tag.size(), eol == std::string::npos ? std::string::npos : eol - at - tag.size());
  size_t open = line.rfind(" (step ");
  if (open == std::string::npos) return {"", -1};
  return {line.substr(0, open), std::strtoll(line.c_str() + open + 7, nullptr, 10)};
}

// The state hash from "# done: step N, state hash H, ..." on stderr, or "".
inline std::string done_state_hash(const std::string& err) {
  const std::string tag = ", state hash ";
  size_t d = err.rfind("# done: step ");
  if (d == std::string::npos) return "";
  size_t at = err.find(tag, d);
  if (at == std::string::npos) return "";
  size_t end = err.find_first_of(",\n", at + tag.size());
  return err.substr(at + tag.size(), end == std::string::npos ? std::string::npos : end - at - tag.size());
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Names of the entries of DIR (not recursive), sorted.
inline std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace mt::e2e
