// weight_store.h — where this rank's parameters and gradients live, chosen
// once when the run starts ([stream], docs/streaming.md): in host memory and
// computed on in place; streamed from host memory; or streamed from
// memory-mapped files on local disk. A disk store belongs to one run: with
// stream.store_dir set it is a subdirectory named after the run, it is held
// under an exclusive lock for the run's life (a second run on it is refused
// before it touches a file, where sharing the files would end one of them in
// SIGBUS), and its files go when the run ends (stores hold scratch;
// checkpoints hold the run). The optimizer keeps its state files beside.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/float_buffer.h"
#include "core/status.h"
#include "dist/fsdp.h"
#include "train/run_config.h"
#include "train/step_result.h"

namespace mt {

enum class WeightTier { kInPlace, kStreamedHost, kStreamedDisk };

class WeightStore {
 public:
  // `n` floats each of parameters and gradients, zeroed, for rank `rank` of
  // `world_size`; run_dir "" = a run without a run directory.
  static Result<std::unique_ptr<WeightStore>> open(const RunConfig& cfg, const std::string& run_dir, int64_t rank,
                                                   int64_t world_size, int64_t n);
  ~WeightStore();  // removes the files (the optimizer's first), the lock and the directory
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  WeightTier tier() const { return tier_; }
  bool streamed() const { return tier_ != WeightTier::kInPlace; }
  FloatBuffer& params() { return params_; }
  FloatBuffer& grads() { return grads_; }
  const FloatBuffer& params() const { return params_; }
  const FloatBuffer& grads() const { return grads_; }
  // The disk store's directory ("" unless on disk): the optimizer's state
  // files go here too.
  const std::string& dir() const { return dir_; }
  // The streamed traffic of a step into r (in place: nothing, so the metrics
  // line has no "stream" section).
  void report(const StreamStats& ss, int64_t compute_memory_bytes, int64_t store_bytes, StepResult& r) const;

  // The directory a disk store of this run takes (before any rank subdirectory).
  static std::string directory_for(const StreamConfig& sc, const std::string& run_dir);

 private:
  WeightStore() = default;
  Status lock_and_map(const RunConfig& cfg, int64_t n);
  WeightTier tier_ = WeightTier::kInPlace;
  FloatBuffer params_, grads_;
  std::string dir_;
  int lock_fd_ = -1;
};

}  // namespace mt
