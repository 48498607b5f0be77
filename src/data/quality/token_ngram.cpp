// token_ngram.cpp — hashed counts and Witten-Bell interpolation for the token
// n-gram model. Contexts are hashed incrementally, longest last, so one token
// costs N context lookups and N pair lookups in training and in scoring.
#include "data/quality/token_ngram.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace mt {
namespace {

// splitmix64's finaliser: every input bit reaches every slot bit, so the low
// bits taken by the mask are as good as the high ones.
inline uint64_t fmix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// The hash of a context one token longer. Tokens are read right to left; the
// number of steps taken makes contexts of different lengths differ.
inline uint64_t extend(uint64_t h, int32_t token) { return fmix(h ^ (uint64_t(uint32_t(token)) + 0x9E3779B97F4A7C15ull)); }
inline uint64_t pair_key(uint64_t h, int32_t token) { return fmix(h + 0x632BE59BD9B4E019ull * (uint64_t(uint32_t(token)) + 1)); }
constexpr uint64_t kEmptyContext = 0x243F6A8885A308D3ull;

inline void saturating_inc(uint32_t& c) { c += c != std::numeric_limits<uint32_t>::max(); }

}  // namespace

double witten_bell_step(uint32_t pair, uint32_t count, uint32_t types, double lower) {
  const double t = std::max<uint32_t>(types, 1);
  const double c = count;
  const double p = std::min(pair, count);
  return (p + t * lower) / (c + t);
}

TokenNgramLm::TokenNgramLm(const NgramOptions& opt)
    : order_(opt.order),
      mask_((uint64_t(1) << opt.log2_slots) - 1),
      max_doc_tokens_(opt.max_doc_tokens),
      vocab_option_(opt.vocab_size),
      ctx_(size_t(1) << opt.log2_slots),
      pair_(size_t(1) << opt.log2_slots, 0) {
  MT_CHECK(opt.order >= 1 && opt.log2_slots >= 0 && opt.log2_slots <= 32 && opt.max_doc_tokens >= 1,
           "order {} log2_slots {} max_doc_tokens {}", opt.order, opt.log2_slots, opt.max_doc_tokens);
}

void TokenNgramLm::train(std::span<const int32_t> ids) {
  const int64_t n = std::min<int64_t>(int64_t(ids.size()), max_doc_tokens_);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t w = ids[size_t(i)];
    max_id_ = std::max<int64_t>(max_id_, w);
    uint64_t h = kEmptyContext;
    for (int64_t len = 0; len < order_ && len <= i; ++len) {
      if (len > 0) h = extend(h, ids[size_t(i - len)]);
      Context& c = ctx_[h & mask_];
      uint32_t& pc = pair_[pair_key(h, w) & mask_];
      if (pc == 0) saturating_inc(c.types);
      saturating_inc(pc);
      saturating_inc(c.count);
    }
  }
}

double TokenNgramLm::mean_logprob(std::span<const int32_t> ids) const {
  const int64_t n = std::min<int64_t>(int64_t(ids.size()), max_doc_tokens_);
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  const double uniform = 1.0 / double(std::max<int64_t>({vocab_option_, max_id_ + 1, 1}));
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t w = ids[size_t(i)];
    double prob = uniform;
    uint64_t h = kEmptyContext;
    for (int64_t len = 0; len < order_ && len <= i; ++len) {  // lowest order first
      if (len > 0) h = extend(h, ids[size_t(i - len)]);
      const Context& c = ctx_[h & mask_];
      // An unseen context leaves the lower order as it is (the step would
      // return `lower` anyway); stopping also skips longer contexts, which
      // cannot have been seen either unless by collision.
      if (c.count == 0) break;
      prob = witten_bell_step(pair_[pair_key(h, w) & mask_], c.count, c.types, prob);
    }
    total += std::log(prob);
  }
  return total / double(n);
}

int64_t TokenNgramLm::memory_bytes() const {
  return int64_t(ctx_.size() * sizeof(Context) + pair_.size() * sizeof(uint32_t));
}

int64_t TokenNgramLm::zero_type_contexts() const {
  int64_t z = 0;
  for (const Context& c : ctx_) z += c.count > 0 && c.types == 0;
  return z;
}

}  // namespace mt
