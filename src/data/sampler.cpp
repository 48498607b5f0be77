// sampler.cpp — the pfair schedule (two heaps: jobs waiting for release,
// released jobs by deadline), per-bucket stream cursors, the Feistel document
// permutation, block cache and snapshots.
#include "data/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>

#include "core/check.h"
#include "core/hash.h"

namespace mt {
namespace {

inline uint64_t mix64(uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Bijection on [0, n): a 4-round Feistel network on the smallest even number
// of bits covering n, with cycle walking back into range.
uint64_t feistel(uint64_t x, uint64_t n, uint64_t key) {
  if (n <= 1) return 0;
  int bits = 64 - __builtin_clzll(n - 1);
  if (bits & 1) ++bits;
  const int half = bits / 2;
  const uint64_t mask = (uint64_t(1) << half) - 1;
  do {
    uint64_t l = x >> half, r = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t f = mix64(r ^ key ^ (round * 0x9E3779B97F4A7C15ull)) & mask;
      const uint64_t nl = r;
      r = l ^ f;
      l = nl;
    }
    x = (l << half) | r;
  } while (x >= n);
  return x;
}

// floor(a * b / c) and ceil(a * b / c) without overflow.
inline int64_t mul_div_floor(int64_t a, int64_t b, int64_t c) { return int64_t((__int128)a * b / c); }
inline int64_t mul_div_ceil(int64_t a, int64_t b, int64_t c) { return int64_t(((__int128)a * b + c - 1) / c); }

}  // namespace

Result<std::unique_ptr<MixtureSampler>> MixtureSampler::open(std::shared_ptr<const Dataset> ds, const Mixture& mx,
                                                             int64_t seq_len, int64_t max_sequences,
                                                             const std::vector<int64_t>& taken) {
  auto plan = plan_mixture(*ds, mx, seq_len, taken);
  if (!plan) return plan.status();
  MT_RETURN_IF_ERROR(plan.value().check(mx.source));
  if (max_sequences > plan.value().sequences)
    return Status::errorf(
        "{}: the run reads {} sequences ({} tokens) but the mixture budget total_tokens x scale = {} x {}/{} allows "
        "{} sequences of {} tokens; raise total_tokens or scale, or train fewer steps",
        mx.source, max_sequences, max_sequences * seq_len, mx.total_tokens, mx.scale_num, mx.scale_den,
        plan.value().sequences, seq_len);
  std::unique_ptr<MixtureSampler> s(new MixtureSampler());
  s->ds_ = std::move(ds);
  s->plan_ = std::move(plan.value());
  s->seq_len_ = seq_len;
  s->eod_ = s->ds_->tokenizer().special(Special::kEndOfDocument);
  for (const BucketPlan& bp : s->plan_.buckets) {
    s->bucket_.push_back(&s->ds_->buckets()[size_t(bp.bucket)]);
    s->key_.push_back(xxh64(bp.name.data(), bp.name.size(), s->plan_.seed));
  }
  State zero;
  zero.count.assign(s->plan_.buckets.size(), 0);
  zero.cursor.assign(s->plan_.buckets.size(), Cursor());
  for (size_t b = 0; b < s->plan_.buckets.size(); ++b)
    s->advance(int32_t(b), zero.cursor[b], s->plan_.buckets[b].tokens_before);
  s->snapshots_.push_back(std::move(zero));
  int64_t before = 0;
  for (const BucketPlan& b : s->plan_.buckets) before += b.tokens_before;
  s->desc_ = fmt::format("dataset {} ({} buckets, {} in the mixture; fingerprint {}), mixture {} (hash {}) at scale "
                         "{}/{}: {} sequences of {} tokens, seed {}",
                         s->ds_->dir(), s->ds_->buckets().size(), s->plan_.buckets.size(), s->ds_->fingerprint(),
                         mx.source, hex64(xxh64(mx.text.data(), mx.text.size())), mx.scale_num, mx.scale_den,
                         s->plan_.sequences, seq_len, mx.seed);
  if (before > 0) s->desc_ += fmt::format(", after the {} tokens earlier phases take from its buckets", before);
  return s;
}

int64_t MixtureSampler::doc_at(int32_t b, int64_t epoch, int64_t rank) const {
  const uint64_t n = uint64_t(bucket_[size_t(b)]->train->n_docs());
  return int64_t(feistel(uint64_t(rank), n, mix64(key_[size_t(b)] ^ mix64(uint64_t(epoch) + 1))));
}

void MixtureSampler::advance(int32_t b, Cursor& c, int64_t tokens) const {
  const ShardReader& sh = *bucket_[size_t(b)]->train;
  while (tokens > 0) {
    const int64_t len = sh.doc_length(doc_at(b, c.epoch, c.rank)) + 1;  // + separator
    const int64_t rem = len - c.offset;
    if (tokens < rem) {
      c.offset += tokens;
      return;
    }
    tokens -= rem;
    c.offset = 0;
    if (++c.rank == sh.n_docs()) {
      c.rank = 0;
      ++c.epoch;
    }
  }
}

void MixtureSampler::simulate(int64_t n0, int64_t len, State& s, std::vector<Entry>* out) const {
  const int64_t N = plan_.full_sequences;
  using Item = std::pair<int64_t, int32_t>;  // (time, bucket): min-heap, ties to the lower bucket
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready, waiting;
  auto release = [&](int32_t b) { return mul_div_floor(s.count[size_t(b)], N, plan_.buckets[size_t(b)].full_sequences); };
  auto deadline = [&](int32_t b) {
    return mul_div_ceil(s.count[size_t(b)] + 1, N, plan_.buckets[size_t(b)].full_sequences);
  };
  auto enqueue = [&](int32_t b, int64_t now) {
    if (s.count[size_t(b)] >= plan_.buckets[size_t(b)].full_sequences) return;
    const int64_t r = release(b);
    if (r <= now) ready.push({deadline(b), b});
    else waiting.push({r, b});
  };
  for (int32_t b = 0; b < int32_t(plan_.buckets.size()); ++b) enqueue(b, n0);
  for (int64_t n = n0; n < n0 + len; ++n) {
    while (!waiting.empty() && waiting.top().first <= n) {
      const int32_t b = waiting.top().second;
      waiting.pop();
      ready.push({deadline(b), b});
    }
    MT_CHECK(!ready.empty(), "pfair schedule has no released job at slot {} of {}", n, N);
    const int32_t b = ready.top().second;
    ready.pop();
    if (out) out->push_back({b, s.count[size_t(b)], s.cursor[size_t(b)]});
    ++s.count[size_t(b)];
    advance(b, s.cursor[size_t(b)], seq_len_);
    enqueue(b, n + 1);
  }
}

void MixtureSampler::ensure_snapshots(int64_t j) const {
  while (int64_t(snapshots_.size()) <= j) {  // fast-forward without recording
    State s = snapshots_.back();
    const int64_t start = int64_t(snapshots_.size() - 1) * kBlock;
    simulate(start, std::min(kBlock, plan_.sequences - start), s, nullptr);
    snapshots_.push_back(std::move(s));
  }
}

const MixtureSampler::Entry& MixtureSampler::entry(int64_t index) const {
  MT_CHECK(index >= 0 && index < plan_.sequences, "sequence index {} outside the mixture run [0, {})", index,
           plan_.sequences);
  const int64_t j = index / kBlock;
  for (auto it = cache_.begin(); it != cache_.end(); ++it)
    if (it->index == j) {
      cache_.splice(cache_.begin(), cache_, it);
      return cache_.front().entries[size_t(index - j * kBlock)];
    }
  ensure_snapshots(j);
  Block blk;
  blk.index = j;
  State s = snapshots_[size_t(j)];
  simulate(j * kBlock, std::min(kBlock, plan_.sequences - j * kBlock), s, &blk.entries);
  if (int64_t(snapshots_.size()) == j + 1) snapshots_.push_back(std::move(s));
  cache_.push_front(std::move(blk));
  if (cache_.size() > 4) cache_.pop_back();
  return cache_.front().entries[size_t(index - j * kBlock)];
}

MixtureSampler::Slot MixtureSampler::slot(int64_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry& e = entry(index);
  return {e.bucket, e.k};
}

void MixtureSampler::sequence(int64_t index, int64_t seq_len, int64_t ahead, int32_t* out) const {
  MT_CHECK(seq_len == seq_len_, "sampler built for seq_len {}, asked for {}", seq_len_, seq_len);
  Entry e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    e = entry(index);
  }
  const ShardReader& sh = *bucket_[size_t(e.bucket)]->train;
  Cursor c = e.at;
  int64_t need = seq_len + 1 + ahead;
  while (need > 0) {
    const int64_t doc = doc_at(e.bucket, c.epoch, c.rank);
    const int64_t len = sh.doc_length(doc);
    const int64_t take = std::min(need, len - c.offset);
    if (take > 0) {
      sh.copy(sh.doc_begin(doc) + c.offset, take, out);
      out += take;
      need -= take;
      c.offset += take;
    }
    if (need > 0 && c.offset == len) {
      *out++ = eod_;
      --need;
      c.offset = 0;
      if (++c.rank == sh.n_docs()) {
        c.rank = 0;
        ++c.epoch;
      }
    }
  }
}

std::vector<std::pair<std::string, int64_t>> MixtureSampler::ledger(int64_t n) const {
  n = std::clamp<int64_t>(n, 0, plan_.sequences);
  const int64_t j = n / kBlock;
  State s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ensure_snapshots(j);
    s = snapshots_[size_t(j)];
  }
  simulate(j * kBlock, n - j * kBlock, s, nullptr);
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t b = 0; b < plan_.buckets.size(); ++b) out.emplace_back(plan_.buckets[b].name, s.count[b] * seq_len_);
  return out;
}

std::vector<std::string> MixtureSampler::bucket_names() const {
  std::vector<std::string> out;
  for (const BucketPlan& b : plan_.buckets) out.push_back(b.name);
  return out;
}

std::vector<std::string> MixtureSampler::eval_buckets() const {
  std::vector<std::string> out;
  for (const Bucket& b : ds_->buckets())
    if (b.eval->n_tokens() + b.eval->n_docs() >= seq_len_ + 1) out.push_back(b.name);
  return out;
}

int64_t MixtureSampler::bucket_eval_windows(int64_t bucket, int64_t seq_len) const {
  int64_t seen = -1;
  for (const Bucket& b : ds_->buckets()) {
    const int64_t windows = held_out_windows(b, seq_len);
    if (windows > 0 && ++seen == bucket) return windows;
  }
  return 0;
}

bool MixtureSampler::bucket_eval_sequence(int64_t bucket, int64_t index, int64_t seq_len, int32_t* out) const {
  // `bucket` indexes eval_buckets().
  int64_t seen = -1;
  const Bucket* bk = nullptr;
  for (const Bucket& b : ds_->buckets())
    if (b.eval->n_tokens() + b.eval->n_docs() >= seq_len + 1 && ++seen == bucket) {
      bk = &b;
      break;
    }
  if (!bk) return false;
  const ShardReader& sh = *bk->eval;
  const int64_t L = sh.n_tokens() + sh.n_docs();
  const int64_t windows = (L - 1) / seq_len;
  int64_t p = (index % windows) * seq_len;
  // Document d occupies stream positions [begin(d) + d, begin(d + 1) + d + 1).
  int64_t lo = 0, hi = sh.n_docs() - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (sh.doc_begin(mid) + mid <= p) lo = mid;
    else hi = mid - 1;
  }
  int64_t doc = lo, offset = p - (sh.doc_begin(lo) + lo);
  int64_t need = seq_len + 1;
  while (need > 0) {
    const int64_t len = sh.doc_length(doc);
    const int64_t take = std::min(need, len - offset);
    if (take > 0) {
      sh.copy(sh.doc_begin(doc) + offset, take, out);
      out += take;
      need -= take;
      offset += take;
    }
    if (need > 0 && offset == len) {
      *out++ = eod_;
      --need;
      offset = 0;
      ++doc;
    }
  }
  return true;
}

Result<std::unique_ptr<MixtureSampler>> open_mixture_source(const std::string& dataset_dir,
                                                            const std::string& mixture_path, int64_t seq_len,
                                                            int64_t max_sequences, int64_t model_vocab) {
  auto ds = Dataset::open(dataset_dir);
  if (!ds) return ds.status();
  if (ds.value()->tokenizer().vocab_size() > model_vocab)
    return Status::errorf("model.vocab_size = {} is smaller than the vocabulary of {}'s tokenizer ({} pieces)",
                          model_vocab, dataset_dir, ds.value()->tokenizer().vocab_size());
  auto mx = load_mixture(mixture_path);
  if (!mx) return mx.status();
  return MixtureSampler::open(std::shared_ptr<const Dataset>(std::move(ds.value())), mx.value(), seq_len,
                              max_sequences);
}

}  // namespace mt
