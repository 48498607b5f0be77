// stager.h — background copies between the store and compute memory (the
// I/O threads of weight streaming). A copy is split over the threads in
// fixed chunks and waited on by ticket; the copied bytes are exactly the
// source's, so streaming never changes the arithmetic. The time a waiter
// blocks is the stall the trainer reports.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace mt {

class Stager {
 public:
  explicit Stager(int64_t threads);
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  using Ticket = int64_t;
  // Starts copying n floats from src to dst; both stay untouched by the
  // caller until wait(ticket) returns.
  Ticket copy(float* dst, const float* src, int64_t n);
  // Blocks until the copy is done; returns the seconds spent blocked.
  double wait(Ticket t);
  // Every copy started so far is done.
  double wait_all();

 private:
  struct Chunk {
    float* dst;
    const float* src;
    int64_t n;
    Ticket ticket;
  };
  void work();

  std::mutex mu_;
  std::condition_variable have_work_, done_;
  std::deque<Chunk> queue_;
  std::vector<int64_t> pending_;  // chunks left per ticket, indexed by ticket - first_
  Ticket first_ = 1, next_ = 1;   // tickets below first_ are all done
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace mt
