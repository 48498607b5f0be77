// comm.h — the collectives moetrain needs, over a group of ranks: the one
// interface that FSDP and EP, the optimizer (Muon's exchange, ordered sums)
// and `data build` all take. MpiComm (OpenMPI, dist/mpi_comm.h) runs them
// between processes; LocalComm is the one-process group, so the
// orchestration above is the same code in both and is tested in one process.
// This library depends on core alone, so data/ and optim/ need no MPI.
// Every call records the bytes it moved and the time this rank spent
// blocked in it (CommStats), which the trainer reports per step. Blocking calls, and wait(), give up after the configured timeout and
// end the job naming the ranks that did not answer (dist/mpi_comm.h).
//
// Byte convention (docs/distributed.md): bytes this rank received from other
// ranks; for the sum reductions built on all-to-all (reduce_scatter_sum,
// allreduce_sum) that equals the ring algorithm's per-rank traffic.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mt {

enum class DType { kF32, kF64, kI64, kU8 };
size_t dtype_bytes(DType t);

// kContext: context parallelism's K/V exchange and its gradients (dist.cp), apart from FSDP's gathers.
enum class CommKind : int { kAllGather, kReduceScatter, kAllToAll, kAllReduce, kBroadcast, kContext, kCount };
const char* comm_kind_name(CommKind k);

// Totals since the last reset, shared by a world and the groups split from it.
struct CommStats {
  std::array<int64_t, size_t(CommKind::kCount)> bytes{};  // received from other ranks
  std::array<int64_t, size_t(CommKind::kCount)> calls{};
  double wait_seconds = 0.0;  // blocked in collectives and wait()
  void reset() { *this = CommStats(); }
};

// A non-blocking collective in flight; Comm::wait completes it.
class Request {
 public:
  virtual ~Request() = default;
  virtual bool test() = 0;  // true once complete (drives progress)
};

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  CommStats& stats() { return *stats_; }

  // Sub-group of the ranks passing the same color, ordered by key (collective).
  virtual std::unique_ptr<Comm> split(int color, int key) = 0;

  virtual void barrier(const char* what) = 0;
  virtual void bcast(void* buf, int64_t bytes, int root) = 0;
  // recv holds counts[r] elements of rank r at displs[r]; this rank sends
  // `count` (== counts[rank()]) elements.
  virtual std::unique_ptr<Request> iallgatherv(const void* send, int64_t count, void* recv, const int64_t* counts,
                                               const int64_t* displs, DType t, CommKind kind) = 0;
  // Elements [sdispls[r], + scounts[r]) of send go to rank r, which stores
  // them at its rdispls[this rank].
  virtual std::unique_ptr<Request> ialltoallv(const void* send, const int64_t* scounts, const int64_t* sdispls,
                                              void* recv, const int64_t* rcounts, const int64_t* rdispls, DType t,
                                              CommKind kind) = 0;
  // Blocks until `r` is complete (null: nothing to wait for). `what` names
  // the operation in a timeout message.
  virtual void wait(Request* r, const char* what) = 0;
  // Lets in-flight collectives advance (MPI progresses only inside calls).
  virtual void progress() {}

  // Blocking forms.
  void allgatherv(const void* send, int64_t count, void* recv, const int64_t* counts, const int64_t* displs, DType t,
                  const char* what);
  void alltoallv(const void* send, const int64_t* scounts, const int64_t* sdispls, void* recv,
                 const int64_t* rcounts, const int64_t* rdispls, DType t, const char* what);
  // Sums x over the ranks, in rank order (identical on every rank and
  // independent of the MPI algorithm): gathers every rank's values first.
  void allreduce_sum(double* x, int64_t n, const char* what);
  void allreduce_sum(int64_t* x, int64_t n, const char* what);
  // Every rank's string, in rank order (rank 0 uses it to collect shard lists).
  std::vector<std::string> allgather_strings(const std::string& mine, const char* what);

 protected:
  explicit Comm(std::shared_ptr<CommStats> stats) : stats_(std::move(stats)) {}
  std::shared_ptr<CommStats> stats_;
};

// The one-process group: every collective is a copy.
class LocalComm final : public Comm {
 public:
  LocalComm() : Comm(std::make_shared<CommStats>()) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<Comm> split(int color, int key) override;
  void barrier(const char*) override {}
  void bcast(void*, int64_t, int) override {}
  std::unique_ptr<Request> iallgatherv(const void* send, int64_t count, void* recv, const int64_t* counts,
                                       const int64_t* displs, DType t, CommKind kind) override;
  std::unique_ptr<Request> ialltoallv(const void* send, const int64_t* scounts, const int64_t* sdispls, void* recv,
                                      const int64_t* rcounts, const int64_t* rdispls, DType t,
                                      CommKind kind) override;
  void wait(Request*, const char*) override {}
};

// Reduce-scatter by sum with a fixed order: rank r receives every rank's
// piece r (an all-to-all) and adds them in rank order, so the result is
// deterministic and the same whichever algorithm MPI picks. `send` holds the
// whole vector (counts[r] elements of rank r's piece at displs[r]); `scratch`
// must hold size() * counts[rank()] floats until finish(); `send` must stay
// untouched until then too (this rank's own piece is read from it).
class ReduceScatter {
 public:
  void start(Comm& comm, const float* send, const int64_t* counts, const int64_t* displs, float* scratch,
             CommKind kind = CommKind::kReduceScatter);
  // Waits, then out[i] = (accumulate ? out[i] : 0) + sum over ranks in order.
  enum class Mode { kOverwrite, kAccumulate };
  void finish(float* out, Mode mode, const char* what);
  bool active() const { return comm_ != nullptr; }

 private:
  Comm* comm_ = nullptr;
  std::unique_ptr<Request> req_;
  float* scratch_ = nullptr;
  const float* own_ = nullptr;
  int64_t n_ = 0;
  std::vector<int64_t> scounts_, rcounts_, rdispls_;
};

}  // namespace mt
