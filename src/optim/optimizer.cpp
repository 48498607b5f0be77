// optimizer.cpp — the pieces of the local storage, the Muon exchange plan,
// and the three elementwise passes of a step (docs/optimizers.md):
//   A  AdamW updates; Hyperball-AdamW moments and update norms; Muon momentum
//      into the send buffer            -> allreduce (update norms), Muon exchange
//   B  the steps along the normalised or orthogonalised directions, with the
//      stepped weights' norms          -> allreduce (weight norms)
//   C  wrapped weights back to radius R
// The pass that last changes a segment also writes its bf16 shadow, if any.
// Every pass runs over fixed segments (at most kBlock elements of one piece),
// each segment's sums are kept apart and added in segment order, so results
// do not depend on the thread count.
#include "optim/optimizer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/check.h"
#include "core/phase_timer.h"
#include "core/reduce.h"
#include "core/rng.h"
#include "kernels/cpu/adamw.h"

namespace mt {
namespace {
constexpr int64_t kBlock = 1 << 16;
}  // namespace

// Local storage [local, local + n) holds elements [off, off + n) of entry.
struct Optimizer::Piece {
  int64_t local = 0, n = 0, entry = 0, off = 0;
  int64_t layout = 0;   // its first element's layout offset (the dither's counter)
  int64_t vlocal = -1;  // AdamW-based: its second moment at v_[vlocal, + n)
  int64_t send = -1;    // Muon-based: its update at send_[send, + n)
};

// The Muon exchange of this rank: what it sends to every owner, and, as the
// owner of some matrices, what it receives, where that goes, and its scratch.
struct Optimizer::Exchange {
  std::vector<int64_t> scounts, sdispls, rcounts, rdispls;  // per rank, floats
  std::vector<float> recv;
  struct Matrix {
    int64_t entry, ws, rows, cols;
  };
  std::vector<Matrix> mine;  // matrices this rank orthogonalises, layout order
  std::vector<float> ws;     // their whole updates, back to back
  struct Unpack {
    int64_t recv, ws, n;
  };
  std::vector<Unpack> unpack;  // recv[recv, + n) <-> ws[ws, + n)
  std::vector<float> scratch;  // Newton-Schulz, sized for the largest of `mine`
};

Optimizer::Optimizer(const ParamLayout& layout, const AdamWConfig& adamw, const OptimizerConfig& cfg, double peak_lr,
                     Comm& comm)
    : Optimizer(layout, adamw, cfg, peak_lr, {{Range{0, layout.total(), 0}}}, comm) {}

Optimizer::Optimizer(const ParamLayout& layout, const AdamWConfig& adamw, const OptimizerConfig& cfg, double peak_lr,
                     std::vector<std::vector<Range>> ranks_owned, Comm& comm, const std::string& state_dir)
    : layout_(layout), adamw_(adamw), cfg_(cfg), comm_(comm) {
  MT_CHECK(int64_t(ranks_owned.size()) == comm.size(), "{} ranks' ranges for a world of {}", ranks_owned.size(),
           comm.size());
  MT_CHECK(cfg.ns_coefficients.size() == 3, "ns_coefficients: {} values", cfg.ns_coefficients.size());
  aux_scaled_ = cfg.aux_lr > 0.0;
  aux_ratio_ = aux_scaled_ ? cfg.aux_lr / peak_lr : 1.0;
  ns_.a = float(cfg.ns_coefficients[0]);
  ns_.b = float(cfg.ns_coefficients[1]);
  ns_.c = float(cfg.ns_coefficients[2]);
  ns_.steps = cfg.ns_steps;
  const auto& entries = layout.entries();
  for (const ParamEntry& e : entries) {
    const TensorRule r = tensor_rule(e, cfg, adamw);
    rules_.push_back(r);
    if (r.base == BaseOptimizer::kMuon) {
      MT_CHECK(e.shape.size() == 2, "Muon tensor {} must be a matrix", e.name);
      any_muon_ = true;
    }
    muon_mult_.push_back(r.base == BaseOptimizer::kMuon ? muon_lr_multiplier(cfg, e.shape[0], e.shape[1]) : 0.0);
    hb_index_.push_back(r.hyperball ? int64_t(wrapped_.size()) : -1);
    if (r.hyperball) {
      wrapped_.push_back(int64_t(&e - entries.data()));
      any_adamh_ |= r.base == BaseOptimizer::kAdamW;
    }
  }
  radii_.assign(wrapped_.size(), 0.0f);
  owned_ = ranks_owned[size_t(comm.rank())];
  for (const Range& r : owned_) {
    MT_CHECK(r.local == local_size_ && r.hi >= r.lo, "owned ranges must be stored back to back");
    local_size_ += r.hi - r.lo;
  }
  build_pieces(state_dir);
  if (any_muon_) build_exchange(ranks_owned);
}

Optimizer::~Optimizer() = default;

namespace {

// Calls f(entry index, lo, hi) for every entry overlapping [range.lo, range.hi),
// with [lo, hi) the overlap in layout offsets.
template <typename F>
void for_each_overlap(const ParamLayout& L, int64_t range_lo, int64_t range_hi, F&& f) {
  const auto& entries = L.entries();
  auto it = std::upper_bound(entries.begin(), entries.end(), range_lo,
                             [](int64_t x, const ParamEntry& e) { return x < e.offset + e.numel; });
  for (; it != entries.end() && it->offset < range_hi; ++it) {
    const int64_t lo = std::max(range_lo, it->offset), hi = std::min(range_hi, it->offset + it->numel);
    if (lo < hi) f(int64_t(it - entries.begin()), lo, hi);
  }
}

}  // namespace

void Optimizer::build_pieces(const std::string& state_dir) {
  const auto& entries = layout_.entries();
  int64_t vpos = 0;
  for (const Range& r : owned_)
    for_each_overlap(layout_, r.lo, r.hi, [&](int64_t e, int64_t lo, int64_t hi) {
      Piece p;
      p.local = r.local + (lo - r.lo);
      p.n = hi - lo;
      p.entry = e;
      p.off = lo - entries[size_t(e)].offset;
      p.layout = lo;
      if (rules_[size_t(e)].base == BaseOptimizer::kAdamW) {
        p.vlocal = vpos;
        vpos += p.n;
      }
      pieces_.push_back(p);
    });
  for (size_t i = 0; i < pieces_.size(); ++i)
    for (int64_t lo = 0; lo < pieces_[i].n; lo += kBlock)
      segments_.push_back({int64_t(i), lo, std::min(pieces_[i].n, lo + kBlock)});
  if (cfg_.state_precision == StatePrecision::kBf16) {
    if (state_dir.empty()) {
      m16_.assign(local_size_, bf16{0});
      v16_.assign(vpos, bf16{0});
    } else {  // fresh files are zeros
      storage_ = m16_.map_file(state_dir + "/optim_m.bf16", local_size_);
      if (storage_) storage_ = v16_.map_file(state_dir + "/optim_v.bf16", vpos);
    }
  } else if (state_dir.empty()) {
    m_.assign(local_size_, 0.0f);
    v_.assign(vpos, 0.0f);
  } else {
    storage_ = m_.map_file(state_dir + "/optim_m.f32", local_size_);
    if (storage_) storage_ = v_.map_file(state_dir + "/optim_v.f32", vpos);
  }
}

void Optimizer::build_exchange(const std::vector<std::vector<Range>>& ranks_owned) {
  const auto& entries = layout_.entries();
  const int64_t P = comm_.size(), me = comm_.rank();
  // Every rank's pieces of Muon matrices, by (entry, offset).
  struct RankPiece {
    int64_t entry, off, n, local;
  };
  std::vector<std::vector<RankPiece>> rp(static_cast<size_t>(P));
  std::vector<std::vector<int64_t>> holders(entries.size());
  for (int64_t q = 0; q < P; ++q) {
    for (const Range& r : ranks_owned[size_t(q)])
      for_each_overlap(layout_, r.lo, r.hi, [&](int64_t e, int64_t lo, int64_t hi) {
        if (rules_[size_t(e)].base != BaseOptimizer::kMuon) return;
        rp[size_t(q)].push_back({e, lo - entries[size_t(e)].offset, hi - lo, r.local + (lo - r.lo)});
        if (holders[size_t(e)].empty() || holders[size_t(e)].back() != q) holders[size_t(e)].push_back(q);
      });
    std::sort(rp[size_t(q)].begin(), rp[size_t(q)].end(),
              [](const RankPiece& a, const RankPiece& b) { return a.entry != b.entry ? a.entry < b.entry : a.off < b.off; });
  }
  // Owners: the holder with the least Newton-Schulz work so far (~ rows cols min(rows, cols)), lowest rank on ties.
  std::vector<int64_t> owner(entries.size(), -1);
  std::vector<double> load(size_t(P), 0.0);
  for (size_t e = 0; e < entries.size(); ++e) {
    if (rules_[e].base != BaseOptimizer::kMuon) continue;
    MT_CHECK(!holders[e].empty(), "Muon matrix {} is held by no rank", entries[e].name);
    int64_t best = -1;
    for (int64_t q : holders[e])
      if (best < 0 || load[size_t(q)] < load[size_t(best)]) best = q;
    owner[e] = best;
    const double rows = double(entries[e].shape[0]), cols = double(entries[e].shape[1]);
    load[size_t(best)] += rows * cols * std::min(rows, cols);
  }

  x_ = std::make_unique<Exchange>();
  Exchange& x = *x_;
  x.scounts.assign(size_t(P), 0);
  x.sdispls.assign(size_t(P), 0);
  x.rcounts.assign(size_t(P), 0);
  x.rdispls.assign(size_t(P), 0);
  // Sends: this rank's pieces grouped by owner, each group in (entry, offset) order.
  std::vector<RankPiece> mine = rp[size_t(me)];
  std::stable_sort(mine.begin(), mine.end(),
                   [&](const RankPiece& a, const RankPiece& b) { return owner[size_t(a.entry)] < owner[size_t(b.entry)]; });
  int64_t pos = 0;
  for (const RankPiece& r : mine) {
    x.scounts[size_t(owner[size_t(r.entry)])] += r.n;
    auto it = std::upper_bound(pieces_.begin(), pieces_.end(), r.local,
                               [](int64_t l, const Piece& p) { return l < p.local + p.n; });
    MT_CHECK(it != pieces_.end() && it->local == r.local && it->n == r.n, "Muon piece at local {} not found", r.local);
    it->send = pos;
    pos += r.n;
  }
  for (int64_t q = 1; q < P; ++q) x.sdispls[size_t(q)] = x.sdispls[size_t(q - 1)] + x.scounts[size_t(q - 1)];
  send_.assign(size_t(pos), 0.0f);
  // As owner: whole matrices in layout order; every rank's pieces of them in its send order.
  std::vector<int64_t> ws_of(entries.size(), -1);
  int64_t ws = 0, scratch = 0;
  for (size_t e = 0; e < entries.size(); ++e) {
    if (owner[e] != me) continue;
    const int64_t rows = entries[e].shape[0], cols = entries[e].shape[1];
    x.mine.push_back({int64_t(e), ws, rows, cols});
    ws_of[e] = ws;
    ws += rows * cols;
    scratch = std::max(scratch, newton_schulz_scratch(rows, cols));
  }
  int64_t rpos = 0;
  for (int64_t q = 0; q < P; ++q) {
    x.rdispls[size_t(q)] = rpos;
    for (const RankPiece& r : rp[size_t(q)]) {
      if (owner[size_t(r.entry)] != me) continue;
      x.unpack.push_back({rpos, ws_of[size_t(r.entry)] + r.off, r.n});
      rpos += r.n;
    }
    x.rcounts[size_t(q)] = rpos - x.rdispls[size_t(q)];
  }
  MT_CHECK(rpos == ws, "owner receives {} floats for matrices of {}", rpos, ws);
  x.recv.assign(size_t(rpos), 0.0f);
  x.ws.assign(size_t(ws), 0.0f);
  x.scratch.assign(size_t(scratch), 0.0f);
}

int64_t Optimizer::muon_workspace_floats() const {
  if (!x_) return 0;
  return int64_t(send_.size() + x_->recv.size() + x_->ws.size() + x_->scratch.size());
}

void Optimizer::init_radii(const float* full) {
  const auto& entries = layout_.entries();
  for (size_t i = 0; i < wrapped_.size(); ++i) {
    const ParamEntry& e = entries[size_t(wrapped_[i])];
    radii_[i] = float(std::sqrt(sum_squares(full + e.offset, e.numel)));
    MT_CHECK(radii_[i] > 0.0f, "Hyperball: {} starts at norm 0, so it would stay 0", e.name);
  }
}

double Optimizer::local_sum_squares(const float* grads) const {
  ScopedPhase phase(Phase::kOptimizer);
  return sum_squares(grads, local_size_);
}

double Optimizer::step(float* params, const float* grads, double lr, int64_t step) {
  const double norm = std::sqrt(local_sum_squares(grads));
  update(params, grads, lr, step, norm);
  return norm;
}

void Optimizer::muon_exchange() {
  Exchange& x = *x_;
  comm_.alltoallv(send_.data(), x.scounts.data(), x.sdispls.data(), x.recv.data(), x.rcounts.data(), x.rdispls.data(),
                  DType::kF32, "all-to-all (Muon: pieces to their owner)");
  for (const Exchange::Unpack& u : x.unpack)
    std::memcpy(x.ws.data() + u.ws, x.recv.data() + u.recv, size_t(u.n) * sizeof(float));
  for (const Exchange::Matrix& mat : x.mine) {
    float* w = x.ws.data() + mat.ws;
    const int64_t n = mat.rows * mat.cols;
    newton_schulz(w, w, mat.rows, mat.cols, ns_, x.scratch.data());
    if (rules_[size_t(mat.entry)].hyperball) {  // Hyperball's direction: unit Frobenius norm
      const double norm = std::sqrt(sum_squares(w, n));
      scale_inplace(w, n, norm > 0.0 ? float(1.0 / norm) : 0.0f);
    }
  }
  for (const Exchange::Unpack& u : x.unpack)
    std::memcpy(x.recv.data() + u.recv, x.ws.data() + u.ws, size_t(u.n) * sizeof(float));
  comm_.alltoallv(x.recv.data(), x.rcounts.data(), x.rdispls.data(), send_.data(), x.scounts.data(), x.sdispls.data(),
                  DType::kF32, "all-to-all (Muon: updates back)");
}

void Optimizer::update(float* params, const float* grads, double lr, int64_t step, double norm, bf16* shadow,
                       float* spent_grads, const FinalRange& on_final) {
  ScopedPhase phase(Phase::kOptimizer);
  if (cfg_.state_precision == StatePrecision::kBf16)
    update_with(m16_.data(), v16_.data(), params, grads, lr, step, norm, shadow, spent_grads, on_final);
  else
    update_with(m_.data(), v_.data(), params, grads, lr, step, norm, shadow, spent_grads, on_final);
}

template <typename State>
void Optimizer::update_with(State* m, State* v, float* params, const float* grads, double lr, int64_t step, double norm,
                            bf16* shadow, float* spent_grads, const FinalRange& on_final) {
  // The segment's parameters are final after this pass: refresh its shadow
  // now, from cache (A: plain AdamW; B: plain Muon; C: Hyperball-wrapped).
  auto refresh = [&](const Segment& sg, const Piece& p) {
    if (shadow) convert_f32_to_bf16_span(shadow + p.local + sg.lo, params + p.local + sg.lo, sg.hi - sg.lo);
  };
  float scale = 1.0f;
  if (adamw_.grad_clip > 0.0 && norm > adamw_.grad_clip) scale = float(adamw_.grad_clip / (norm + 1e-6));
  const double lr_aux = aux_scaled_ ? lr * aux_ratio_ : lr;
  const AdamDirParams ad{float(adamw_.beta1), float(adamw_.beta2), float(adamw_.eps), scale, step};
  const int64_t S = int64_t(segments_.size());
  std::vector<double> part(size_t(S), 0.0);
  float* u = send_.data();
  const uint32_t key = dither_key(step);
  auto dither = [&](const Segment& sg, const Piece& p) { return StateDither{key, uint64_t(p.layout + sg.lo)}; };
  const Nesterov nesterov = cfg_.muon_nesterov ? Nesterov::kYes : Nesterov::kNo;

  // A: AdamW; Hyperball-AdamW moments (update norms); Muon momentum. A
  // plain AdamW piece is final when its last segment is done: the thread
  // that finishes it reports it (on_final), while that segment is in cache.
  const int64_t P = int64_t(pieces_.size());
  std::unique_ptr<std::atomic<int64_t>[]> segments_left;
  if (on_final) {
    segments_left = std::make_unique<std::atomic<int64_t>[]>(size_t(P));
    for (int64_t pi = 0; pi < P; ++pi) segments_left[size_t(pi)].store((pieces_[size_t(pi)].n + kBlock - 1) / kBlock);
  }
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s) {
    const Segment& sg = segments_[size_t(s)];
    const Piece& p = pieces_[size_t(sg.piece)];
    const TensorRule& r = rules_[size_t(p.entry)];
    const int64_t i = p.local + sg.lo, n = sg.hi - sg.lo;
    if (r.base == BaseOptimizer::kMuon) {
      muon_momentum(m + i, u + p.send + sg.lo, grads + i, n, float(cfg_.muon_momentum), scale, nesterov, dither(sg, p));
    } else if (r.hyperball) {
      part[size_t(s)] = adam_direction(m + i, v + p.vlocal + sg.lo, grads + i, n, ad, dither(sg, p));
    } else {
      const AdamWParams a{float(r.aux ? lr_aux : lr),
                          float(adamw_.beta1),
                          float(adamw_.beta2),
                          float(adamw_.eps),
                          float(r.weight_decay),
                          scale,
                          step};
      adamw_update(params + i, m + i, v + p.vlocal + sg.lo, grads + i, n, a, dither(sg, p));
      refresh(sg, p);
    }
    if (spent_grads) std::fill(spent_grads + i, spent_grads + i + n, 0.0f);  // still in cache
    if (on_final && r.base == BaseOptimizer::kAdamW && !r.hyperball &&
        segments_left[size_t(sg.piece)].fetch_sub(1) == 1)
      on_final(params + p.local, p.n);
  }
  // Per wrapped matrix: the sum of its segments' parts (segment order), over the ranks.
  auto per_matrix = [&](const char* what) {
    std::vector<double> total(wrapped_.size(), 0.0);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t h = hb_index_[size_t(pieces_[size_t(segments_[size_t(s)].piece)].entry)];
      if (h >= 0) total[size_t(h)] += part[size_t(s)];
    }
    comm_.allreduce_sum(total.data(), int64_t(total.size()), what);
    return total;
  };
  std::vector<double> unorm2;
  if (any_adamh_) unorm2 = per_matrix("allreduce (Hyperball update norms)");
  if (any_muon_) muon_exchange();
  if (wrapped_.empty() && !any_muon_) return;

  // B: steps along the orthogonalised / normalised directions.
  std::fill(part.begin(), part.end(), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s) {
    const Segment& sg = segments_[size_t(s)];
    const Piece& p = pieces_[size_t(sg.piece)];
    const TensorRule& r = rules_[size_t(p.entry)];
    const int64_t i = p.local + sg.lo, n = sg.hi - sg.lo;
    if (!r.hyperball) {
      if (r.base == BaseOptimizer::kMuon) {  // Moonlight: x = (1 - lr wd) x - lr multiplier O
        decay_axpy(params + i, u + p.send + sg.lo, n, float(1.0 - lr * r.weight_decay),
                   float(lr * muon_mult_[size_t(p.entry)]));
        refresh(sg, p);
      }
      continue;
    }
    const int64_t h = hb_index_[size_t(p.entry)];
    const double R = double(radii_[size_t(h)]);
    if (r.base == BaseOptimizer::kMuon) {  // the owner sent O / ||O||_F
      part[size_t(s)] = axpy_sum_squares(params + i, u + p.send + sg.lo, n, float(lr * R));
    } else {
      const double un = std::sqrt(unorm2[size_t(h)]);
      const float k = un > 0.0 ? float(lr * R / un) : 0.0f;
      part[size_t(s)] = adam_direction_axpy(params + i, m + i, v + p.vlocal + sg.lo, n, ad, k);
    }
  }
  if (wrapped_.empty()) return;
  const std::vector<double> wnorm2 = per_matrix("allreduce (Hyperball weight norms)");

  // C: wrapped matrices back to their radius.
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < S; ++s) {
    const Segment& sg = segments_[size_t(s)];
    const Piece& p = pieces_[size_t(sg.piece)];
    const int64_t h = hb_index_[size_t(p.entry)];
    if (h < 0) continue;
    const double w = std::sqrt(wnorm2[size_t(h)]);
    if (w > 0.0) scale_inplace(params + p.local + sg.lo, sg.hi - sg.lo, float(double(radii_[size_t(h)]) / w));
    refresh(sg, p);
  }
}

std::vector<Optimizer::StateSlot> Optimizer::state_at(int64_t entry, int64_t local) {
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), local,
                             [](int64_t l, const Piece& p) { return l < p.local + p.n; });
  MT_CHECK(it != pieces_.end() && it->entry == entry && it->local <= local, "no piece of entry {} at local {}", entry,
           local);
  auto slot = [&](const char* prefix, FloatBuffer& f, Bf16Buffer& h, int64_t at) {
    return cfg_.state_precision == StatePrecision::kBf16 ? StateSlot{prefix, nullptr, h.data() + at}
                                                          : StateSlot{prefix, f.data() + at, nullptr};
  };
  if (it->vlocal < 0) return {slot("muon_m.", m_, m16_, local)};
  return {slot("adam_m.", m_, m16_, local), slot("adam_v.", v_, v16_, it->vlocal + (local - it->local))};
}

void Optimizer::remove_state_files() {
  m_.remove_file();
  v_.remove_file();
  m16_.remove_file();
  v16_.remove_file();
}

int64_t Optimizer::state_bytes() const {
  if (cfg_.state_precision == StatePrecision::kBf16) return int64_t(sizeof(bf16)) * (m16_.size() + v16_.size());
  return int64_t(sizeof(float)) * (m_.size() + v_.size());
}

namespace {
float widen(float x) { return x; }
float widen(bf16 x) { return bf16_to_f32(x); }

// `n` values of `buf` from `from`, as fp32, into `out`.
template <typename Buffer>
void widen_into(float* out, const Buffer& buf, int64_t from, int64_t n) {
  std::transform(buf.begin() + from, buf.begin() + from + n, out, [](auto x) { return widen(x); });
}
}  // namespace

void Optimizer::read_m(int64_t lo, int64_t n, float* out) const {
  MT_CHECK(lo >= 0 && n >= 0 && lo + n <= local_size_, "read_m [{}, +{}) of {}", lo, n, local_size_);
  if (cfg_.state_precision == StatePrecision::kBf16)
    widen_into(out, m16_, lo, n);
  else
    widen_into(out, m_, lo, n);
}

void Optimizer::read_v(int64_t lo, int64_t n, float* out) const {
  MT_CHECK(lo >= 0 && n >= 0 && lo + n <= local_size_, "read_v [{}, +{}) of {}", lo, n, local_size_);
  std::fill(out, out + n, 0.0f);
  const int64_t hi = lo + n;
  for (const Piece& p : pieces_) {  // in local order
    if (p.local >= hi) break;
    const int64_t a = std::max(lo, p.local), b = std::min(hi, p.local + p.n);
    if (p.vlocal < 0 || a >= b) continue;
    if (cfg_.state_precision == StatePrecision::kBf16)
      widen_into(out + (a - lo), v16_, p.vlocal + (a - p.local), b - a);
    else
      widen_into(out + (a - lo), v_, p.vlocal + (a - p.local), b - a);
  }
}

std::vector<float> Optimizer::m_local() const {
  std::vector<float> out(static_cast<size_t>(local_size_));
  read_m(0, local_size_, out.data());
  return out;
}

std::vector<float> Optimizer::v_local() const {
  std::vector<float> out(static_cast<size_t>(local_size_));
  read_v(0, local_size_, out.data());
  return out;
}

}  // namespace mt
