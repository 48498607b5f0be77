// expert_parallel.cpp — packing, the all-to-alls and unpacking of routed rows.
// Data movement is whole-row memcpy per (rank, expert) segment.
#include "dist/expert_parallel.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "model/moe_block.h"

namespace mt {
namespace {

template <typename T>
void ensure(std::vector<T>& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
}

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

}  // namespace

EpDispatcher::EpDispatcher(Comm& ep, const ModelConfig& c, int64_t batch, int64_t seq_len, EpOverlap overlap)
    : ep_(ep), overlap_(overlap), P_(ep.size()), me_(ep.rank()), E_(c.n_experts), El_(c.n_experts / ep.size()),
      F_(c.d_expert),
      align_(kExpertRowAlign) {
  MT_CHECK(E_ % P_ == 0, "{} experts over {} EP ranks", E_, P_);
  const int64_t N = batch * seq_len, K = c.top_k, G = c.group_size(seq_len), groups = N / G;
  const int64_t cap = c.capacity(G), Din = c.expert_in_dim();
  int64_t sent = N * K, recv = N * K;
  if (cap > 0) {
    slot_rows_ = groups * cap;
    sent = std::min(N * K, groups * cap * E_);
    recv = std::min(P_ * groups * cap * El_, P_ * N * std::min(K, El_));
  }
  row_bound_ = recv + El_ * (align_ - 1);
  // Fixed-size blocks (capacity mode): per peer El counts + El * slot_rows rows.
  const int64_t fixed = P_ * (El_ + El_ * slot_rows_ * Din);
  send_.resize(std::max(std::max(sent, recv) * Din, fixed));
  recv_.resize(std::max(std::max(sent, recv) * Din, fixed));
  y_.resize(row_bound_ * Din);
  dy_.resize(row_bound_ * Din);
  dx_.resize(row_bound_ * Din);
  dz_.resize(row_bound_ * F_);
  dh_.resize(row_bound_ * 2 * F_);
  layers_.resize(c.n_units());
  for (int64_t l = 0; l < c.n_units(); ++l) {
    if (!c.is_moe(l)) continue;
    LayerState& st = layers_[l];
    st.send_rows.resize(P_ * El_);
    st.recv_rows.resize(P_ * El_);
    st.begin.resize(El_ + 1);
    st.x.resize(row_bound_ * Din);
    st.h.resize(row_bound_ * 2 * F_);
    st.z.resize(row_bound_ * F_);
  }
  scounts_.resize(P_);
  sdispls_.resize(P_);
  rcounts_.resize(P_);
  rdispls_.resize(P_);
}

ExpertRows EpDispatcher::rows_of(LayerState& st) {
  ExpertRows r;
  r.first = me_ * El_;
  r.count = El_;
  r.begin = st.begin.data();
  r.x = st.x.data();
  r.h = st.h.data();
  r.z = st.z.data();
  return r;
}

void EpDispatcher::post_to_experts(LayerState& st, const FfnActs& a, const float* src, int64_t Din,
                                   const char* what) {
  int64_t off = 0;
  for (int64_t p = 0; p < P_; ++p) {
    sdispls_[p] = off * Din;
    for (int64_t i = 0; i < El_; ++i) {
      const int64_t e = p * El_ + i, n = st.send_rows[e];
      std::memcpy(send_.data() + off * Din, src + a.begin[e] * Din, sizeof(float) * size_t(n * Din));
      off += n;
    }
    scounts_[p] = off * Din - sdispls_[p];
  }
  off = 0;
  for (int64_t s = 0; s < P_; ++s) {
    rdispls_[s] = off * Din;
    for (int64_t i = 0; i < El_; ++i) off += st.recv_rows[s * El_ + i];
    rcounts_[s] = off * Din - rdispls_[s];
  }
  post(what);
}

void EpDispatcher::unpack_to_experts(const LayerState& st, float* dst, int64_t Din) {
  for (int64_t i = 0; i < El_; ++i) {
    int64_t row = st.begin[i];
    for (int64_t s = 0; s < P_; ++s) {
      int64_t seg = rdispls_[s] / Din;
      for (int64_t j = 0; j < i; ++j) seg += st.recv_rows[s * El_ + j];
      const int64_t n = st.recv_rows[s * El_ + i];
      std::memcpy(dst + row * Din, recv_.data() + seg * Din, sizeof(float) * size_t(n * Din));
      row += n;
    }
    std::memset(dst + row * Din, 0, sizeof(float) * size_t((st.begin[i + 1] - row) * Din));
  }
}

void EpDispatcher::post_from_experts(LayerState& st, const float* src, int64_t Din, const char* what) {
  // Back along the forward's routes: what we received from s goes back to s.
  int64_t off = 0;
  for (int64_t s = 0; s < P_; ++s) {
    sdispls_[s] = off * Din;
    for (int64_t i = 0; i < El_; ++i) {
      int64_t row = st.begin[i];
      for (int64_t t = 0; t < s; ++t) row += st.recv_rows[t * El_ + i];
      const int64_t n = st.recv_rows[s * El_ + i];
      std::memcpy(send_.data() + off * Din, src + row * Din, sizeof(float) * size_t(n * Din));
      off += n;
    }
    scounts_[s] = off * Din - sdispls_[s];
  }
  off = 0;
  for (int64_t p = 0; p < P_; ++p) {
    rdispls_[p] = off * Din;
    for (int64_t i = 0; i < El_; ++i) off += st.send_rows[p * El_ + i];
    rcounts_[p] = off * Din - rdispls_[p];
  }
  post(what);
}

void EpDispatcher::unpack_from_experts(const LayerState& st, const FfnActs& a, float* dst, int64_t Din) {
  int64_t off = 0;
  for (int64_t e = 0; e < E_; ++e) {
    const int64_t n = st.send_rows[e];
    std::memcpy(dst + a.begin[e] * Din, recv_.data() + off * Din, sizeof(float) * size_t(n * Din));
    off += n;
  }
}

void EpDispatcher::post(const char* what) {
  MT_CHECK(!posted_what_, "EP: '{}' posted while '{}' is in flight", what, posted_what_);
  posted_ = ep_.ialltoallv(send_.data(), scounts_.data(), sdispls_.data(), recv_.data(), rcounts_.data(),
                           rdispls_.data(), DType::kF32, CommKind::kAllToAll);
  posted_what_ = what;
  if (overlap_ == EpOverlap::kOff) {
    ep_.wait(posted_.get(), what);
    posted_.reset();
  }
}

void EpDispatcher::wait_posted(const char* expected) {
  MT_CHECK(posted_what_, "EP: waiting for '{}' with nothing in flight", expected);
  MT_CHECK(std::strcmp(posted_what_, expected) == 0, "EP: waiting for '{}' while '{}' is in flight", expected,
           posted_what_);
  ep_.wait(posted_.get(), expected);
  posted_.reset();
  posted_what_ = nullptr;
}

void EpDispatcher::progress() {
  if (posted_what_) ep_.progress();
}

void EpDispatcher::set_begin(LayerState& st) {
  st.begin[0] = 0;
  for (int64_t i = 0; i < El_; ++i) {
    int64_t n = 0;
    for (int64_t s = 0; s < P_; ++s) n += st.recv_rows[s * El_ + i];
    st.begin[i + 1] = st.begin[i] + round_up(n, align_);
  }
  st.rows = st.begin[El_];
}

namespace {
constexpr const char* kDispatchFixed = "all-to-all (expert dispatch, fixed capacity)";
constexpr const char* kDispatch = "all-to-all (expert dispatch)";
constexpr const char* kCombine = "all-to-all (expert combine)";
constexpr const char* kDispatchGrad = "all-to-all (expert gradient dispatch)";
constexpr const char* kCombineGrad = "all-to-all (expert gradient combine)";
}  // namespace

void EpDispatcher::post_fixed(LayerState& st, const FfnActs& a, int64_t Din) {
  const int64_t slot = slot_rows_ * Din, block = El_ + El_ * slot;
  for (int64_t p = 0; p < P_; ++p) {
    float* b = send_.data() + p * block;
    for (int64_t i = 0; i < El_; ++i) {
      const int64_t e = p * El_ + i, n = st.send_rows[e];
      MT_CHECK(n <= slot_rows_, "expert {} keeps {} rows, capacity bound {}", e, n, slot_rows_);
      b[i] = float(n);  // exact: n < 2^24
      std::memcpy(b + El_ + i * slot, a.xe.data() + a.begin[e] * Din, sizeof(float) * size_t(n * Din));
    }
  }
  for (int64_t p = 0; p < P_; ++p) {
    scounts_[p] = rcounts_[p] = block;
    sdispls_[p] = rdispls_[p] = p * block;
  }
  post(kDispatchFixed);
}

void EpDispatcher::unpack_fixed(LayerState& st, int64_t Din) {
  const int64_t slot = slot_rows_ * Din, block = El_ + El_ * slot;
  for (int64_t s = 0; s < P_; ++s)
    for (int64_t i = 0; i < El_; ++i) st.recv_rows[s * El_ + i] = int64_t(recv_[s * block + i]);
  set_begin(st);
  for (int64_t i = 0; i < El_; ++i) {
    int64_t row = st.begin[i];
    for (int64_t s = 0; s < P_; ++s) {
      const int64_t n = st.recv_rows[s * El_ + i];
      std::memcpy(st.x.data() + row * Din, recv_.data() + s * block + El_ + i * slot, sizeof(float) * size_t(n * Din));
      row += n;
    }
    std::memset(st.x.data() + row * Din, 0, sizeof(float) * size_t((st.begin[i + 1] - row) * Din));
  }
}

void EpDispatcher::dispatch_start(int64_t layer, FfnActs& a, int64_t Din) {
  LayerState& st = layers_[layer];
  std::copy(a.kept.begin(), a.kept.begin() + E_, st.send_rows.begin());
  if (slot_rows_ > 0) {
    post_fixed(st, a, Din);  // buffers were sized for the capacity bound
    return;
  }
  std::vector<int64_t> c(P_, El_), d(P_);
  for (int64_t p = 0; p < P_; ++p) d[p] = p * El_;
  ep_.alltoallv(st.send_rows.data(), c.data(), d.data(), st.recv_rows.data(), c.data(), d.data(), DType::kI64,
                "all-to-all (expert row counts)");
  set_begin(st);
  int64_t sent = 0, total = 0;
  for (int64_t e = 0; e < E_; ++e) sent += st.send_rows[e];
  for (int64_t k = 0; k < P_ * El_; ++k) total += st.recv_rows[k];
  // Dropless: grow to the high-water mark.
  ensure(send_, std::max(sent, total) * Din);
  ensure(recv_, std::max(sent, total) * Din);
  ensure(st.x, st.rows * Din);
  ensure(st.h, st.rows * 2 * F_);
  ensure(st.z, st.rows * F_);
  ensure(y_, st.rows * Din);
  post_to_experts(st, a, a.xe.data(), Din, kDispatch);
}

ExpertRows EpDispatcher::dispatch_finish(int64_t layer, FfnActs&, int64_t Din) {
  LayerState& st = layers_[layer];
  if (slot_rows_ > 0) {
    wait_posted(kDispatchFixed);
    unpack_fixed(st, Din);
  } else {
    wait_posted(kDispatch);
    unpack_to_experts(st, st.x.data(), Din);
  }
  ExpertRows r = rows_of(st);
  r.y = y_.data();
  return r;
}

void EpDispatcher::combine_start(int64_t layer, FfnActs&, int64_t Din) {
  post_from_experts(layers_[layer], y_.data(), Din, kCombine);
}

void EpDispatcher::combine_finish(int64_t layer, FfnActs& a, int64_t Din) {
  wait_posted(kCombine);
  unpack_from_experts(layers_[layer], a, a.ye.data(), Din);
}

void EpDispatcher::dispatch_grad_start(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) {
  LayerState& st = layers_[layer];
  ensure(dy_, st.rows * Din);
  ensure(dx_, st.rows * Din);
  ensure(dz_, st.rows * F_);
  ensure(dh_, st.rows * 2 * F_);
  post_to_experts(st, a, s.dye.data(), Din, kDispatchGrad);
}

ExpertRows EpDispatcher::dispatch_grad_finish(int64_t layer, const FfnActs&, FfnScratch&, int64_t Din) {
  LayerState& st = layers_[layer];
  wait_posted(kDispatchGrad);
  unpack_to_experts(st, dy_.data(), Din);
  ExpertRows r = rows_of(st);
  r.dy = dy_.data();
  r.dx = dx_.data();
  r.dz = dz_.data();
  r.dh = dh_.data();
  return r;
}

void EpDispatcher::combine_grad_start(int64_t layer, const FfnActs&, FfnScratch&, int64_t Din) {
  post_from_experts(layers_[layer], dx_.data(), Din, kCombineGrad);
}

void EpDispatcher::combine_grad_finish(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) {
  wait_posted(kCombineGrad);
  unpack_from_experts(layers_[layer], a, s.dxe.data(), Din);
}

}  // namespace mt
