// weight_store.cpp — see weight_store.h.
#include "train/weight_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/hash.h"

namespace mt {

namespace fs = std::filesystem;

std::string WeightStore::directory_for(const StreamConfig& sc, const std::string& run_dir) {
  if (sc.store_dir.empty())
    return !run_dir.empty() ? run_dir + "/stream_store" : fmt::format("/tmp/moetrain-stream-{}", getpid());
  // A store directory named in the config may be shared by many runs' configs:
  // each run takes a subdirectory named after its run directory.
  if (run_dir.empty()) return fmt::format("{}/pid-{}", sc.store_dir, getpid());
  const std::string abs = fs::absolute(run_dir).lexically_normal().string();
  std::string name = fs::path(abs).filename().string();
  if (name.empty()) name = fs::path(abs).parent_path().filename().string();
  return fmt::format("{}/{}-{}", sc.store_dir, name, hex64(xxh64(abs.data(), abs.size())).substr(0, 8));
}

Result<std::unique_ptr<WeightStore>> WeightStore::open(const RunConfig& cfg, const std::string& run_dir, int64_t rank,
                                                       int64_t world_size, int64_t n) {
  std::unique_ptr<WeightStore> s(new WeightStore());
  const StreamConfig& sc = cfg.stream;
  s->tier_ = !sc.enabled                      ? WeightTier::kInPlace
             : sc.store == StreamStore::kDisk ? WeightTier::kStreamedDisk
                                              : WeightTier::kStreamedHost;
  if (s->tier_ != WeightTier::kStreamedDisk) {
    s->params_.assign(n, 0.0f);
    s->grads_.assign(n, 0.0f);
    return s;
  }
  s->dir_ = directory_for(sc, run_dir);
  if (world_size > 1) s->dir_ += fmt::format("/rank_{}", rank);
  MT_RETURN_IF_ERROR(s->lock_and_map(cfg, n));
  return s;
}

Status WeightStore::lock_and_map(const RunConfig& cfg, int64_t n) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return cfg.origins.error("stream.store_dir", fmt::format("{}: cannot create: {}", dir_, ec.message()));
  const std::string lock = dir_ + "/lock";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    return cfg.origins.error("stream.store_dir", fmt::format("{}: cannot create: {}", lock, std::strerror(errno)));
  if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {};
    const ssize_t got = pread(lock_fd_, holder, sizeof holder - 1, 0);
    ::close(lock_fd_);
    lock_fd_ = -1;
    dir_.clear();  // not ours: nothing of it is removed
    return cfg.origins.error(
        "stream.store_dir",
        fmt::format("{} is in use by another run (process {} holds its lock): a disk store belongs to one run; give "
                    "this run its own --run-dir or stream.store_dir",
                    lock, got > 0 ? std::string(holder, size_t(got)) : std::string("?")));
  }
  const std::string pid = std::to_string(getpid());
  if (ftruncate(lock_fd_, 0) != 0 || pwrite(lock_fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
    return Status::errorf("{}: cannot write: {}", lock, std::strerror(errno));
  MT_RETURN_IF_ERROR(params_.map_file(dir_ + "/params.f32", n));
  return grads_.map_file(dir_ + "/grads.f32", n);
}

WeightStore::~WeightStore() {
  if (dir_.empty()) return;
  // The mappings stay valid until the buffers are destroyed.
  params_.remove_file();
  grads_.remove_file();
  std::error_code ec;
  if (lock_fd_ >= 0) {
    fs::remove(dir_ + "/lock", ec);
    ::close(lock_fd_);
  }
  fs::remove(dir_, ec);  // only if now empty (the optimizer removes its files first)
  // Under MPI the ranks' directories sit in one per-run directory: the last rank out removes it.
  if (fs::path(dir_).filename().string().rfind("rank_", 0) == 0) fs::remove(fs::path(dir_).parent_path(), ec);
}

void WeightStore::report(const StreamStats& ss, int64_t compute_memory_bytes, int64_t store_bytes,
                         StepResult& r) const {
  if (!streamed()) return;
  r.stream_bytes_in = ss.floats_in * int64_t(sizeof(float));
  r.stream_bytes_out = ss.floats_out * int64_t(sizeof(float));
  r.stream_stall_s = ss.stall_s;
  r.compute_memory_bytes = compute_memory_bytes;
  r.store_bytes = store_bytes;
  r.sparse_dense_bytes = ss.sparse_dense_bytes;
  r.sparse_wire_bytes = ss.sparse_wire_bytes;
}

}  // namespace mt
