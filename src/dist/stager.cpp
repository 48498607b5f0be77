// stager.cpp — the copy threads and their tickets.
#include "dist/stager.h"

#include <algorithm>
#include <cstring>

#include "core/timer.h"

namespace mt {

namespace {
// Copies below this many floats are one chunk: splitting them costs more
// than the second thread saves.
constexpr int64_t kMinChunk = int64_t(1) << 16;
}  // namespace

Stager::Stager(int64_t threads) {
  for (int64_t i = 0; i < std::max<int64_t>(1, threads); ++i) threads_.emplace_back([this] { work(); });
}

Stager::~Stager() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  have_work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

Stager::Ticket Stager::copy(float* dst, const float* src, int64_t n) {
  const int64_t parts = std::clamp<int64_t>(n / kMinChunk, 1, int64_t(threads_.size()));
  std::lock_guard<std::mutex> lock(mu_);
  const Ticket t = next_++;
  pending_.push_back(parts);
  const int64_t each = (n + parts - 1) / parts;
  for (int64_t i = 0; i < parts; ++i) {
    const int64_t lo = i * each, hi = std::min(n, lo + each);
    queue_.push_back({dst + lo, src + lo, hi - lo, t});
  }
  have_work_.notify_all();
  return t;
}

void Stager::work() {
  for (;;) {
    Chunk c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      have_work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      c = queue_.front();
      queue_.pop_front();
    }
    if (c.n > 0) std::memcpy(c.dst, c.src, size_t(c.n) * sizeof(float));
    {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_[size_t(c.ticket - first_)];
      while (!pending_.empty() && pending_.front() == 0) {
        pending_.erase(pending_.begin());
        ++first_;
      }
    }
    done_.notify_all();
  }
}

double Stager::wait(Ticket t) {
  std::unique_lock<std::mutex> lock(mu_);
  auto finished = [&] { return t < first_ || pending_[size_t(t - first_)] == 0; };
  if (finished()) return 0.0;
  const double t0 = now_seconds();
  done_.wait(lock, finished);
  return now_seconds() - t0;
}

double Stager::wait_all() {
  Ticket from, last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    from = first_;
    last = next_ - 1;
  }
  double s = 0.0;
  for (Ticket t = from; t <= last; ++t) s += wait(t);
  return s;
}

}  // namespace mt
