// thread_comm.h — Comm over threads of one process, for unit tests of code
// that takes a Comm (the optimizer, the data build) at world sizes above one
// without mpirun. Every collective completes inside the call: the ranks meet
// at a barrier, each copies what it receives from the others' buffers, and
// they meet again before anyone may reuse a buffer. Collectives must be
// called in the same order on every rank, as with MPI.
#pragma once
#include <gtest/gtest.h>

#include <barrier>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/comm.h"

namespace mt::testing {

class ThreadComm final : public Comm {
 public:
  // What the ranks of one world share; one per world, outliving its ranks.
  struct World {
    explicit World(int n) : size(n), sync(n), send(size_t(n)), sdispls(size_t(n)), scounts(size_t(n)) {}
    int size;
    std::barrier<> sync;
    std::vector<const void*> send;
    std::vector<const int64_t*> sdispls, scounts;
  };
  ThreadComm(World& w, int rank) : Comm(std::make_shared<CommStats>()), w_(w), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return w_.size; }
  std::unique_ptr<Comm> split(int, int) override {
    ADD_FAILURE() << "ThreadComm::split is not supported";
    return nullptr;
  }
  void barrier(const char*) override { w_.sync.arrive_and_wait(); }
  void bcast(void* buf, int64_t bytes, int root) override {
    publish(buf, nullptr, nullptr);
    if (rank_ != root) std::memcpy(buf, w_.send[size_t(root)], size_t(bytes));
    w_.sync.arrive_and_wait();
  }
  std::unique_ptr<Request> iallgatherv(const void* send, int64_t count, void* recv, const int64_t* counts,
                                       const int64_t* displs, DType t, CommKind kind) override {
    EXPECT_EQ(count, counts[rank_]);
    publish(send, nullptr, nullptr);
    const size_t b = dtype_bytes(t);
    for (int q = 0; q < w_.size; ++q)
      std::memcpy(static_cast<char*>(recv) + displs[q] * b, w_.send[size_t(q)], size_t(counts[q]) * b);
    finish(kind);
    return nullptr;
  }
  std::unique_ptr<Request> ialltoallv(const void* send, const int64_t* scounts, const int64_t* sdispls, void* recv,
                                      const int64_t* rcounts, const int64_t* rdispls, DType t, CommKind kind) override {
    publish(send, scounts, sdispls);
    const size_t b = dtype_bytes(t);
    for (int q = 0; q < w_.size; ++q) {
      EXPECT_EQ(w_.scounts[size_t(q)][rank_], rcounts[q]) << "rank " << q << " -> " << rank_;
      std::memcpy(static_cast<char*>(recv) + rdispls[q] * b,
                  static_cast<const char*>(w_.send[size_t(q)]) + w_.sdispls[size_t(q)][rank_] * b,
                  size_t(rcounts[q]) * b);
    }
    finish(kind);
    return nullptr;
  }
  void wait(Request*, const char*) override {}

 private:
  void publish(const void* send, const int64_t* scounts, const int64_t* sdispls) {
    w_.send[size_t(rank_)] = send;
    w_.scounts[size_t(rank_)] = scounts;
    w_.sdispls[size_t(rank_)] = sdispls;
    w_.sync.arrive_and_wait();
  }
  void finish(CommKind kind) {
    stats_->calls[size_t(kind)]++;
    w_.sync.arrive_and_wait();
  }
  World& w_;
  int rank_;
};

}  // namespace mt::testing
