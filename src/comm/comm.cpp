// comm.cpp — the blocking forms and ordered reductions shared by every Comm,
// and LocalComm.
#include "comm/comm.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace mt {

size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
  }
  return 1;
}

const char* comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::kAllGather: return "allgather";
    case CommKind::kReduceScatter: return "reduce_scatter";
    case CommKind::kAllToAll: return "alltoall";
    case CommKind::kAllReduce: return "allreduce";
    case CommKind::kBroadcast: return "broadcast";
    case CommKind::kContext:
      return "context";
    default: return "?";
  }
}

void Comm::allgatherv(const void* send, int64_t count, void* recv, const int64_t* counts, const int64_t* displs,
                      DType t, const char* what) {
  auto r = iallgatherv(send, count, recv, counts, displs, t, CommKind::kAllGather);
  wait(r.get(), what);
}

void Comm::alltoallv(const void* send, const int64_t* scounts, const int64_t* sdispls, void* recv,
                     const int64_t* rcounts, const int64_t* rdispls, DType t, const char* what) {
  auto r = ialltoallv(send, scounts, sdispls, recv, rcounts, rdispls, t, CommKind::kAllToAll);
  wait(r.get(), what);
}

namespace {
template <typename T>
void ordered_allreduce(Comm& comm, T* x, int64_t n, DType t, const char* what) {
  const int64_t P = comm.size();
  if (P == 1) return;
  std::vector<T> all(P * n);
  std::vector<int64_t> counts(P, n), displs(P);
  for (int64_t r = 0; r < P; ++r) displs[r] = r * n;
  auto req = comm.iallgatherv(x, n, all.data(), counts.data(), displs.data(), t, CommKind::kAllReduce);
  comm.wait(req.get(), what);
  for (int64_t i = 0; i < n; ++i) {
    T acc = all[i];
    for (int64_t r = 1; r < P; ++r) acc += all[r * n + i];
    x[i] = acc;
  }
}
}  // namespace

void Comm::allreduce_sum(double* x, int64_t n, const char* what) { ordered_allreduce(*this, x, n, DType::kF64, what); }
void Comm::allreduce_sum(int64_t* x, int64_t n, const char* what) { ordered_allreduce(*this, x, n, DType::kI64, what); }

std::vector<std::string> Comm::allgather_strings(const std::string& mine, const char* what) {
  const int64_t P = size();
  std::vector<int64_t> lens(P, 0);
  lens[rank()] = int64_t(mine.size());
  allreduce_sum(lens.data(), P, what);
  std::vector<int64_t> displs(P, 0);
  for (int64_t r = 1; r < P; ++r) displs[r] = displs[r - 1] + lens[r - 1];
  std::string all(size_t(displs[P - 1] + lens[P - 1]), '\0');
  allgatherv(mine.data(), int64_t(mine.size()), all.data(), lens.data(), displs.data(), DType::kU8, what);
  std::vector<std::string> out(P);
  for (int64_t r = 0; r < P; ++r) out[r] = all.substr(size_t(displs[r]), size_t(lens[r]));
  return out;
}

// ---- ReduceScatter ------------------------------------------------------------

void ReduceScatter::start(Comm& comm, const float* send, const int64_t* counts, const int64_t* displs, float* scratch,
                          CommKind kind) {
  MT_CHECK(comm_ == nullptr, "reduce-scatter already in flight");
  const int64_t P = comm.size(), me = comm.rank();
  comm_ = &comm;
  scratch_ = scratch;
  n_ = counts[me];
  own_ = send + displs[me];  // this rank's own piece is read in place, not sent to itself
  scounts_.assign(counts, counts + P);
  scounts_[me] = 0;
  rcounts_.assign(P, n_);
  rcounts_[me] = 0;
  rdispls_.resize(P);
  for (int64_t r = 0; r < P; ++r) rdispls_[r] = r * n_;
  req_ = comm.ialltoallv(send, scounts_.data(), displs, scratch, rcounts_.data(), rdispls_.data(), DType::kF32, kind);
}

void ReduceScatter::finish(float* out, Mode mode, const char* what) {
  MT_CHECK(comm_ != nullptr, "no reduce-scatter in flight");
  comm_->wait(req_.get(), what);
  const int64_t P = comm_->size(), me = comm_->rank(), n = n_;
  const bool acc = mode == Mode::kAccumulate;
  // Blocks of contiguous, vectorisable adds; per element the order is always
  // ((piece_0 + piece_1) + ...) + piece_{P-1}, then added to out.
  constexpr int64_t kBlock = 2048;
#pragma omp parallel for schedule(static)
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const int64_t m = std::min(kBlock, n - b0);
    float sum[kBlock];
    for (int64_t r = 0; r < P; ++r) {
      const float* src = (r == me ? own_ : scratch_ + r * n) + b0;
      if (r == 0) {
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) sum[i] = src[i];
      } else {
#pragma omp simd
        for (int64_t i = 0; i < m; ++i) sum[i] += src[i];
      }
    }
    float* o = out + b0;
    if (acc) {
#pragma omp simd
      for (int64_t i = 0; i < m; ++i) o[i] += sum[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < m; ++i) o[i] = sum[i];
    }
  }
  comm_ = nullptr;
  req_.reset();
}

// ---- LocalComm ----------------------------------------------------------------

std::unique_ptr<Comm> LocalComm::split(int, int) {
  auto c = std::make_unique<LocalComm>();
  c->stats_ = stats_;
  return c;
}

std::unique_ptr<Request> LocalComm::iallgatherv(const void* send, int64_t count, void* recv, const int64_t* counts,
                                                const int64_t* displs, DType t, CommKind kind) {
  MT_CHECK(count == counts[0], "allgatherv: count {} but counts[0] {}", count, counts[0]);
  const size_t b = dtype_bytes(t);
  if (count > 0 && static_cast<const char*>(send) != static_cast<char*>(recv) + displs[0] * b)
    std::memmove(static_cast<char*>(recv) + displs[0] * b, send, size_t(count) * b);
  stats_->calls[size_t(kind)]++;
  return nullptr;
}

std::unique_ptr<Request> LocalComm::ialltoallv(const void* send, const int64_t* scounts, const int64_t* sdispls,
                                               void* recv, const int64_t* rcounts, const int64_t* rdispls, DType t,
                                               CommKind kind) {
  MT_CHECK(scounts[0] == rcounts[0], "alltoallv: sends {} but receives {}", scounts[0], rcounts[0]);
  const size_t b = dtype_bytes(t);
  if (scounts[0] > 0)
    std::memmove(static_cast<char*>(recv) + rdispls[0] * b, static_cast<const char*>(send) + sdispls[0] * b,
                 size_t(scounts[0]) * b);
  stats_->calls[size_t(kind)]++;
  return nullptr;
}

}  // namespace mt
