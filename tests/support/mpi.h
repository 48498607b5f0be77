// mpi.h — helpers for the distributed tests (tests/mpi): launch N ranks with
// mpirun (as root, oversubscribed: CI machines have few cores), and read
// checkpoints back for tensor-by-tensor comparisons. mpirun can exit 0
// without having run anything, so callers always check what the ranks
// produced (metrics lines, "# done" lines, checkpoints), never only the
// exit code. Header-only.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "support/e2e.h"

#ifndef MT_MPIEXEC
#error "MT_MPIEXEC must be defined (tests/CMakeLists.txt)"
#endif

namespace mt::e2e {

// Environment every rank gets: sleeping OpenMP waits (the ranks share few cores).
inline const std::vector<std::string> kRankEnv = {"OMP_WAIT_POLICY=PASSIVE"};

// `mpirun -np N [-x VAR]... PROGRAM ARGS...`, with `env` ("NAME=value")
// exported to every rank.
inline ProcessResult mpirun(int np, const std::vector<std::string>& program, double timeout_s = 180,
                            std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {MT_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                                   "-np", std::to_string(np)};
  env.insert(env.end(), kRankEnv.begin(), kRankEnv.end());
  for (const std::string& e : env) {
    argv.push_back("-x");
    argv.push_back(e);
  }
  argv.insert(argv.end(), program.begin(), program.end());
  return run_process(argv, timeout_s, env);
}

// `mpirun -np N moetrain train --no-progress ARGS...`
inline ProcessResult mpi_train(int np, const std::vector<std::string>& args, double timeout_s = 180,
                               const std::vector<std::string>& env = {}) {
  return mpirun(np, train_argv(args), timeout_s, env);
}

// Largest |a - b| over every element of every tensor the two checkpoints
// share, relative to the largest |a| of that tensor (0 when identical);
// `worst` names the tensor. Missing tensors count as infinitely different.
struct CkptDiff {
  double max_rel = 0.0;
  std::string worst;
  bool ok = false;
  std::string error;
};

inline CkptDiff compare_checkpoints(const std::string& a_dir, const std::string& b_dir,
                                    const std::string& only_prefix = "") {
  CkptDiff d;
  auto a = read_checkpoint(a_dir), b = read_checkpoint(b_dir);
  if (!a) return d.error = a.status().message(), d;
  if (!b) return d.error = b.status().message(), d;
  for (const auto& [name, ta] : a.value().tensors) {
    if (!only_prefix.empty() && name.rfind(only_prefix, 0) != 0) continue;
    auto it = b.value().tensors.find(name);
    if (it == b.value().tensors.end() || it->second.data.size() != ta.data.size()) {
      d.max_rel = INFINITY;
      d.worst = name;
      continue;
    }
    double scale = 0.0, diff = 0.0;
    for (size_t i = 0; i < ta.data.size(); ++i) {
      scale = std::max(scale, double(std::fabs(ta.data[i])));
      diff = std::max(diff, double(std::fabs(ta.data[i] - it->second.data[i])));
    }
    const double rel = scale > 0 ? diff / scale : diff;
    if (rel > d.max_rel) {
      d.max_rel = rel;
      d.worst = name;
    }
  }
  d.ok = true;
  return d;
}

// Copies checkpoint directory `src` into RUN_DIR/checkpoints/ (a fresh run
// that --resume will start from).
inline void seed_run_dir(const std::string& src, const std::string& run_dir) {
  const std::string dst = run_dir + "/checkpoints/" + fs::path(src).filename().string();
  fs::create_directories(run_dir + "/checkpoints");
  fs::copy(src, dst, fs::copy_options::recursive);
}

}  // namespace mt::e2e
