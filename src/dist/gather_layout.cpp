// gather_layout.cpp — see gather_layout.h.
#include "dist/gather_layout.h"

#include <algorithm>

#include "dist/shard_plan.h"

namespace mt {

void for_each_gathered_chunk(Comm& w, const ParamLayout& L, const ModelConfig& model, const MeshShape& shape,
                             const std::function<void(int64_t lo, int64_t n, float* out)>& read,
                             const std::function<void(int64_t lo, const std::vector<float>& chunk)>& f) {
  const int64_t P = w.size(), me = w.rank(), total = L.total();
  std::vector<ShardPlan> plans;
  for (int64_t r = 0; r < P; ++r) plans.emplace_back(L, model, shape, r);
  constexpr int64_t kChunk = int64_t(1) << 20;  // floats
  std::vector<float> mine, all, full;
  std::vector<int64_t> counts(P), displs(P);
  // Calls g(range, a, b) for each of rank r's owned ranges that meets [lo, hi), clipped to [a, b).
  auto overlaps = [&](int64_t r, int64_t lo, int64_t hi, auto&& g) {
    for (const OwnedRange& o : plans[r].owned()) {
      const int64_t a = std::max(lo, o.lo), b = std::min(hi, o.hi);
      if (a < b) g(o, a, b);
    }
  };
  for (int64_t lo = 0; lo < total; lo += kChunk) {
    const int64_t hi = std::min(total, lo + kChunk);
    for (int64_t r = 0; r < P; ++r) {
      counts[r] = 0;
      overlaps(r, lo, hi, [&](const OwnedRange&, int64_t a, int64_t b) { counts[r] += b - a; });
      displs[r] = r ? displs[r - 1] + counts[r - 1] : 0;
    }
    mine.resize(size_t(counts[me]));
    int64_t k = 0;
    overlaps(me, lo, hi, [&](const OwnedRange& o, int64_t a, int64_t b) {
      read(o.local + (a - o.lo), b - a, mine.data() + k);
      k += b - a;
    });
    all.resize(size_t(displs[P - 1] + counts[P - 1]));
    w.allgatherv(mine.data(), counts[me], all.data(), counts.data(), displs.data(), DType::kF32,
                 "all-gather (whole model)");
    full.resize(size_t(hi - lo));
    for (int64_t r = 0; r < P; ++r) {
      k = displs[r];
      overlaps(r, lo, hi, [&](const OwnedRange&, int64_t a, int64_t b) {
        std::copy(all.begin() + k, all.begin() + k + (b - a), full.begin() + (a - lo));
        k += b - a;
      });
    }
    f(lo, full);
  }
}

void gather_layout(Comm& world, const ParamLayout& layout, const ModelConfig& model, const MeshShape& shape,
                   const float* local, std::vector<float>& full) {
  full.resize(size_t(layout.total()));
  for_each_gathered_chunk(
      world, layout, model, shape,
      [&](int64_t lo, int64_t n, float* out) { std::copy(local + lo, local + lo + n, out); },
      [&](int64_t lo, const std::vector<float>& chunk) { std::copy(chunk.begin(), chunk.end(), full.begin() + lo); });
}

}  // namespace mt
