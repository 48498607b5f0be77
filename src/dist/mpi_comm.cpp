// mpi_comm.cpp — MpiComm: non-blocking MPI-3 collectives, a wait loop with a
// deadline that answers liveness pings, and the timeout diagnosis.
#include "dist/mpi_comm.h"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <vector>

#include "core/check.h"
#include "core/phase_timer.h"
#include "core/timer.h"

namespace mt {
namespace {

constexpr int kPingTag = 7001, kPongTag = 7002;

std::string& comm_context() {
  static std::string ctx = "start-up";
  return ctx;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::kF32: return MPI_FLOAT;
    case DType::kF64: return MPI_DOUBLE;
    case DType::kI64: return MPI_INT64_T;
    case DType::kU8: return MPI_BYTE;
  }
  return MPI_BYTE;
}

int to_int(int64_t v, const char* what) {
  MT_CHECK(v >= 0 && v <= INT_MAX, "{}: count {} does not fit MPI's int", what, v);
  return int(v);
}

// State shared by the world and every group split from it.
struct Shared {
  MPI_Comm ctrl = MPI_COMM_NULL;  // world duplicate for liveness pings
  int world_rank = 0, world_size = 1;
  double timeout_s = 600.0;
};

// Answers every pending ping (a waiting rank proves it is alive).
void answer_pings(const Shared& s) {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, s.ctrl, &flag, &st);
    if (!flag) return;
    int token = 0;
    MPI_Recv(&token, 1, MPI_INT, st.MPI_SOURCE, kPingTag, s.ctrl, MPI_STATUS_IGNORE);
    MPI_Request r;
    MPI_Isend(&s.world_rank, 1, MPI_INT, st.MPI_SOURCE, kPongTag, s.ctrl, &r);
    MPI_Request_free(&r);
  }
}

[[noreturn]] void diagnose_timeout(const Shared& s, const char* what, double waited) {
  const double grace = std::min(30.0, std::max(1.0, s.timeout_s / 4));
  std::vector<char> answered(s.world_size, 0);
  answered[s.world_rank] = 1;
  const int token = s.world_rank;
  for (int r = 0; r < s.world_size; ++r) {
    if (r == s.world_rank) continue;
    MPI_Request req;
    MPI_Isend(&token, 1, MPI_INT, r, kPingTag, s.ctrl, &req);
    MPI_Request_free(&req);
  }
  const double t0 = now_seconds();
  int missing = s.world_size - 1;
  while (missing > 0 && now_seconds() - t0 < grace) {
    answer_pings(s);
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kPongTag, s.ctrl, &flag, &st);
    if (flag) {
      int from = 0;
      MPI_Recv(&from, 1, MPI_INT, st.MPI_SOURCE, kPongTag, s.ctrl, MPI_STATUS_IGNORE);
      if (!answered[st.MPI_SOURCE]) --missing;
      answered[st.MPI_SOURCE] = 1;
    } else {
      usleep(1000);
    }
  }
  std::string silent;
  for (int r = 0; r < s.world_size; ++r)
    if (!answered[r]) silent += (silent.empty() ? "" : ", ") + std::to_string(r);
  const std::string verdict =
      silent.empty() ? "every rank answered a ping, so none is dead or stuck outside MPI: some rank is slower than "
                       "dist.timeout_s, or the ranks are waiting in different collectives"
                     : fmt::format("no answer within {:.0f} s from rank {} (hung or dead)", grace, silent);
  std::fprintf(stderr, "moetrain: rank %d: timed out after %.1f s (dist.timeout_s = %g) in %s during %s; %s\n",
               s.world_rank, waited, s.timeout_s, what, comm_context().c_str(), verdict.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::_Exit(3);
}

class MpiRequest final : public Request {
 public:
  MPI_Request req = MPI_REQUEST_NULL;
  std::vector<int> a, b, c, d;  // count/displacement arrays must outlive the call
  bool test() override {
    if (req == MPI_REQUEST_NULL) return true;
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
};

class MpiComm final : public Comm {
 public:
  MpiComm(MPI_Comm comm, std::shared_ptr<Shared> shared, std::shared_ptr<CommStats> stats, bool is_world)
      : Comm(std::move(stats)), comm_(comm), shared_(std::move(shared)), is_world_(is_world) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiComm() override {
    if (is_world_) {
      MPI_Comm_free(&shared_->ctrl);
      MPI_Finalize();
    } else {
      MPI_Comm_free(&comm_);
    }
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<Comm> split(int color, int key) override {
    MPI_Comm sub;
    MPI_Comm_split(comm_, color, key, &sub);
    return std::make_unique<MpiComm>(sub, shared_, stats_, false);
  }

  void barrier(const char* what) override {
    MpiRequest r;
    MPI_Ibarrier(comm_, &r.req);
    wait(&r, what);
  }

  void bcast(void* buf, int64_t bytes, int root) override {
    MpiRequest r;
    MPI_Ibcast(buf, to_int(bytes, "bcast"), MPI_BYTE, root, comm_, &r.req);
    if (rank_ != root) stats_->bytes[size_t(CommKind::kBroadcast)] += bytes;
    stats_->calls[size_t(CommKind::kBroadcast)]++;
    wait(&r, "broadcast");
  }

  std::unique_ptr<Request> iallgatherv(const void* send, int64_t count, void* recv, const int64_t* counts,
                                       const int64_t* displs, DType t, CommKind kind) override {
    auto r = std::make_unique<MpiRequest>();
    r->a.resize(size_);
    r->b.resize(size_);
    int64_t bytes = 0;
    for (int i = 0; i < size_; ++i) {
      r->a[i] = to_int(counts[i], "allgatherv");
      r->b[i] = to_int(displs[i], "allgatherv");
      if (i != rank_) bytes += counts[i];
    }
    MT_CHECK(count == counts[rank_], "allgatherv: count {} but counts[{}] = {}", count, rank_, counts[rank_]);
    MPI_Iallgatherv(send, int(count), mpi_type(t), recv, r->a.data(), r->b.data(), mpi_type(t), comm_, &r->req);
    stats_->bytes[size_t(kind)] += bytes * int64_t(dtype_bytes(t));
    stats_->calls[size_t(kind)]++;
    return r;
  }

  std::unique_ptr<Request> ialltoallv(const void* send, const int64_t* scounts, const int64_t* sdispls, void* recv,
                                      const int64_t* rcounts, const int64_t* rdispls, DType t,
                                      CommKind kind) override {
    auto r = std::make_unique<MpiRequest>();
    for (auto* v : {&r->a, &r->b, &r->c, &r->d}) v->resize(size_);
    int64_t bytes = 0;
    for (int i = 0; i < size_; ++i) {
      r->a[i] = to_int(scounts[i], "alltoallv");
      r->b[i] = to_int(sdispls[i], "alltoallv");
      r->c[i] = to_int(rcounts[i], "alltoallv");
      r->d[i] = to_int(rdispls[i], "alltoallv");
      if (i != rank_) bytes += rcounts[i];
    }
    MPI_Ialltoallv(send, r->a.data(), r->b.data(), mpi_type(t), recv, r->c.data(), r->d.data(), mpi_type(t), comm_,
                   &r->req);
    stats_->bytes[size_t(kind)] += bytes * int64_t(dtype_bytes(t));
    stats_->calls[size_t(kind)]++;
    return r;
  }

  void wait(Request* r, const char* what) override {
    if (!r) return;
    ScopedPhase phase(Phase::kComm);
    const double t0 = now_seconds();
    // Spin briefly (the peer is usually about to arrive), then yield the core
    // to whatever shares it (oversubscribed runs), then sleep in short naps.
    for (int spin = 0; spin < 2000; ++spin)
      if (r->test()) return account(t0);
    double next_ping_check = t0;
    for (;;) {
      if (r->test()) return account(t0);
      const double now = now_seconds();
      if (now >= next_ping_check) {
        answer_pings(*shared_);
        next_ping_check = now + 0.001;
      }
      if (now - t0 > shared_->timeout_s) diagnose_timeout(*shared_, what, now - t0);
      if (now - t0 < 0.01) sched_yield();
      else usleep(50);
    }
  }

  void progress() override {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, shared_->ctrl, &flag, MPI_STATUS_IGNORE);
    if (flag) answer_pings(*shared_);
  }

 private:
  void account(double t0) { stats_->wait_seconds += now_seconds() - t0; }

  MPI_Comm comm_;
  std::shared_ptr<Shared> shared_;
  bool is_world_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

int local_ranks_hint() {
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) return std::max(1, std::atoi(v));
  if (const char* v = std::getenv("SLURM_NTASKS_PER_NODE")) return std::max(1, std::atoi(v));
  return 1;
}

int default_rank_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int online = int(sysconf(_SC_NPROCESSORS_ONLN));
  const int mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : online;
  if (mine < online) return std::max(1, mine);
  return std::max(1, online / local_ranks_hint());
}

std::unique_ptr<Comm> make_world_comm(double timeout_s) {
  if (!launched_by_mpi()) return std::make_unique<LocalComm>();
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  auto shared = std::make_shared<Shared>();
  MPI_Comm_dup(MPI_COMM_WORLD, &shared->ctrl);
  MPI_Comm_rank(MPI_COMM_WORLD, &shared->world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &shared->world_size);
  shared->timeout_s = timeout_s;
  return std::make_unique<MpiComm>(MPI_COMM_WORLD, shared, std::make_shared<CommStats>(), true);
}

void set_comm_context(const std::string& what) { comm_context() = what; }

void abort_job(Comm& world, int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (dynamic_cast<LocalComm*>(&world) == nullptr) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace mt
