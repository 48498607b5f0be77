// attention_matmul.cpp — tiled attention through gemm_on_thread. Keys start
// at a multiple of kKeyAlign below the tile's band, so a tile's products have
// few distinct shapes (each a cached primitive) and AMX-friendly widths;
// the extra keys are masked to exactly 0 by the softmax. Scratch is per
// thread and grow-only (docs/kernels.md).
#include "kernels/cpu/attention_matmul.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "kernels/cpu/attention_softmax.h"
#include "kernels/cpu/simd.h"

namespace mt {
namespace {

constexpr int64_t kKeyAlign = 32;

float* grow(std::vector<float>& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(n);
  return v.data();
}

struct Scratch {
  std::vector<float> s, dp, out, dob, rowsum, orow;  // fp32 tiles; orow: one output row read from bf16
  OperandBuffer qop, kop, vop, dop, pop, dsop;
};
thread_local Scratch tls;

// One tile: query rows [i0, i1) (positions p0..) of the heads of kv group g,
// stacked head by head (row hh * rows + r is query row i0 + r of head
// g * G + hh), against keys [j0, p0 + rows).
struct Tile {
  int64_t b, g, i0, i1, rows, M, p0, j0, nk;
};

Tile tile_of(const AttentionDims& d, int64_t b, int64_t g, std::pair<int64_t, int64_t> block) {
  Tile t;
  t.b = b;
  t.g = g;
  t.i0 = block.first;
  t.rows = block.second;
  t.i1 = t.i0 + t.rows;
  t.M = (d.H / d.Hkv) * t.rows;
  t.p0 = d.q_position(t.i0);
  t.j0 = d.key_begin(b, t.i0) / kKeyAlign * kKeyAlign;
  t.nk = t.p0 + t.rows - t.j0;
  return t;
}

// The tile's queries as one (M, Dh) operand.
const void* stacked_queries(const QkvOperands& in, const AttentionDims& d, const Tile& t, OperandForm f,
                            OperandBuffer& buf) {
  const int64_t G = d.H / d.Hkv;
  const int64_t first = ((t.b * d.H + t.g * G) * d.q_rows() + t.i0) * d.Dh;
  if (G == 1) return operand_at(in.q, in.form, first, t.rows * d.Dh, f, buf);
  for (int64_t hh = 0; hh < G; ++hh)
    put_operand(buf, hh * t.rows * d.Dh, in.q, in.form, first + hh * d.q_rows() * d.Dh, t.rows * d.Dh, f);
  return buf.storage.data();
}

// Element index of row r of the tile's heads in a (B, H, T, Dv) or token-major buffer.
int64_t out_index(const AttentionDims& d, const Tile& t, int64_t hh, int64_t r) {
  const int64_t h = t.g * (d.H / d.Hkv) + hh;
  return d.out_offset(t.b, h) + (t.i0 + r) * d.out_stride();
}
template <class F>
F* out_row(F* base, const AttentionDims& d, const Tile& t, int64_t hh, int64_t r) {
  return base + out_index(d, t, hh, r);
}

// Dv values of the output from element i on, as fp32: in place, or widened
// from bf16 into `buf`.
const float* output_row(const void* o, OperandForm of, int64_t i, int64_t Dv, std::vector<float>& buf) {
  if (of != OperandForm::kBf16) return static_cast<const float*>(o) + i;
  float* row = grow(buf, Dv);
  const bf16* src = static_cast<const bf16*>(o) + i;
  for (int64_t e = 0; e < Dv; ++e) row[e] = bf16_to_f32(src[e]);
  return row;
}

// The backward's rowsum(dO o O) reads a row of o and of dO per query and
// head, a few lines each, with a few vector operations per line: row by
// row those loads waited on L2 and beyond (most of the tile's own time on
// AMD Zen 5). Rows two queries ahead are asked into L1 while this one sums.
constexpr int64_t kRowsAhead = 2;
void prefetch_rows(const void* o, OperandForm of, const float* dout, int64_t i, int64_t Dv) {
  simd::prefetch_l1_bytes(operand_element(o, i, of), operand_floats(Dv, of) * int64_t(sizeof(float)));
  simd::prefetch_l1_bytes(dout + i, Dv * int64_t(sizeof(float)));
}

void softmax_tile(float* S, const AttentionDims& d, const Tile& t, float scale, const float* lse, float* lse_out) {
  const int64_t G = d.H / d.Hkv;
  for (int64_t hh = 0; hh < G; ++hh) {
    const int64_t at = (t.b * d.H + t.g * G + hh) * d.q_rows() + t.i0;
    const int32_t* doc = d.doc_row(t.b);
    attention_softmax_rows(S + hh * t.rows * t.nk, t.rows, t.nk, t.p0, t.j0, d.window, doc ? doc + t.i0 : nullptr,
                           scale, lse ? lse + at : nullptr, lse_out ? lse_out + at : nullptr);
  }
}

}  // namespace

int64_t attention_matmul_query_tile(int64_t group) {
  // About 128 stacked rows per product, in 16s, at least 32 and at most 64
  // queries: wider tiles waste keys on window layers.
  return std::clamp<int64_t>(128 / group / 16 * 16, 32, 64);
}

void attention_matmul_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                              const AttentionDims& d, MatmulPrecision p) {
  attention_matmul_forward(o, OperandForm::kFp32, lse, QkvOperands{q, k, v}, d, p);
}

void attention_matmul_forward(void* o, OperandForm of, float* lse, const QkvOperands& in, const AttentionDims& d,
                              MatmulPrecision p) {
  const int64_t Dh = d.Dh, Dv = d.v_dim(), T = d.T, G = d.H / d.Hkv;
  const auto tiles = attention_query_blocks(d, attention_matmul_query_tile(G));
  const int64_t blocks = int64_t(tiles.size());
  const float scale = 1.0f / std::sqrt(float(Dh));
  const OperandForm f = operand_form(p);
  MT_CHECK(in.form == OperandForm::kFp32 || in.form == f, "q, k, v are held for another precision");
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t task = 0; task < d.B * d.Hkv * blocks; ++task) {
    const Tile t = tile_of(d, task / (d.Hkv * blocks), task / blocks % d.Hkv, tiles[size_t(task % blocks)]);
    Scratch& sc = tls;
    const int64_t kv_row = (t.b * d.Hkv + t.g) * T + t.j0;
    const void* qop = stacked_queries(in, d, t, f, sc.qop);
    float* S = grow(sc.s, t.M * t.nk);
    gemm_on_thread(S, qop, operand_at(in.k, in.form, kv_row * Dh, t.nk * Dh, f, sc.kop),
                   GemmShape{t.M, t.nk, Dh, Trans::kNo, Trans::kYes}, 0.0f, p);
    softmax_tile(S, d, t, scale, nullptr, lse);
    float* out = grow(sc.out, t.M * Dv);
    gemm_on_thread(out, operand_of(S, t.M * t.nk, f, sc.pop),
                   operand_at(in.v, in.form, kv_row * Dv, t.nk * Dv, f, sc.vop), GemmShape{t.M, Dv, t.nk}, 0.0f, p);
    // Row-outer: token-major, the group's heads of one query are adjacent.
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t hh = 0; hh < G; ++hh)
        write_operand(o, out_index(d, t, hh, r), out + (hh * t.rows + r) * Dv, Dv, of);
  }
}

void attention_matmul_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                               const float* k, const float* v, const float* o, const float* lse,
                               const AttentionDims& d, MatmulPrecision p) {
  attention_matmul_backward(dq, dk, dv, dout, QkvOperands{q, k, v}, o, OperandForm::kFp32, lse, d, p);
}

void attention_matmul_backward(float* dq, float* dk, float* dv, const float* dout, const QkvOperands& in,
                               const void* o, OperandForm of, const float* lse, const AttentionDims& d,
                               MatmulPrecision p) {
  const int64_t Dh = d.Dh, Dv = d.v_dim(), T = d.T, Tq = d.q_rows(), G = d.H / d.Hkv;
  const auto tiles = attention_query_blocks(d, attention_matmul_query_tile(G));
  const float scale = 1.0f / std::sqrt(float(Dh));
  const OperandForm f = operand_form(p);
  MT_CHECK(in.form == OperandForm::kFp32 || in.form == f, "q, k, v are held for another precision");
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t g = 0; g < d.Hkv; ++g) {
      Scratch& sc = tls;
      const void* kop = operand_at(in.k, in.form, (b * d.Hkv + g) * T * Dh, T * Dh, f, sc.kop);  // once per kv head
      const void* vop = operand_at(in.v, in.form, (b * d.Hkv + g) * T * Dv, T * Dv, f, sc.vop);
      float* dkh = dk + (b * d.Hkv + g) * T * Dh;
      float* dvh = dv + (b * d.Hkv + g) * T * Dv;
      std::fill(dkh, dkh + T * Dh, 0.0f);
      std::fill(dvh, dvh + T * Dv, 0.0f);
      for (const auto& block : tiles) {
        const Tile t = tile_of(d, b, g, block);
        // The tile's dout rows, as the dP product sees them (bf16-rounded in
        // bf16), and their rowsum(dO o O) from those same values: with one
        // visible key dP and the row sum then cancel exactly, as they should.
        float* dob = grow(sc.dob, t.M * Dv);
        float* rowsum = grow(sc.rowsum, t.M);
        for (int64_t r = 0; r < t.rows; ++r)
          for (int64_t hh = 0; hh < G; ++hh) {
            if (r + kRowsAhead < t.rows) prefetch_rows(o, of, dout, out_index(d, t, hh, r + kRowsAhead), Dv);
            const float* orow = output_row(o, of, out_index(d, t, hh, r), Dv, sc.orow);
            float* dst = dob + (hh * t.rows + r) * Dv;
            if (f == OperandForm::kFp32)
              std::copy(out_row(dout, d, t, hh, r), out_row(dout, d, t, hh, r) + Dv, dst);
            else
              round_f32_to_bf16_span(dst, out_row(dout, d, t, hh, r), Dv);
            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
            for (int64_t e = 0; e < Dv; ++e) sum += dst[e] * orow[e];
            rowsum[hh * t.rows + r] = sum;
          }
        const void* qop = stacked_queries(in, d, t, f, sc.qop);
        const void* dop = operand_of(dob, t.M * Dv, f, sc.dop);
        const void* kj = operand_element(kop, t.j0 * Dh, f);
        float* P = grow(sc.s, t.M * t.nk);
        float* dS = grow(sc.dp, t.M * t.nk);
        gemm_on_thread(P, qop, kj, GemmShape{t.M, t.nk, Dh, Trans::kNo, Trans::kYes}, 0.0f, p);
        softmax_tile(P, d, t, scale, lse, nullptr);
        gemm_on_thread(dS, dop, operand_element(vop, t.j0 * Dv, f), GemmShape{t.M, t.nk, Dv, Trans::kNo, Trans::kYes},
                       0.0f, p);  // dP
        for (int64_t r = 0; r < t.M; ++r) {
          float* ds = dS + r * t.nk;
          const float* pr = P + r * t.nk;
          const float Di = rowsum[r];
#pragma omp simd
          for (int64_t c = 0; c < t.nk; ++c) ds[c] = pr[c] * (ds[c] - Di) * scale;
        }
        const void* pop = operand_of(P, t.M * t.nk, f, sc.pop);
        const void* dsop = operand_of(dS, t.M * t.nk, f, sc.dsop);
        float* dqt = grow(sc.out, t.M * Dh);
        gemm_on_thread(dqt, dsop, kj, GemmShape{t.M, Dh, t.nk}, 0.0f, p);
        for (int64_t hh = 0; hh < G; ++hh)
          std::copy(dqt + hh * t.rows * Dh, dqt + (hh + 1) * t.rows * Dh,
                    dq + ((b * d.H + g * G + hh) * Tq + t.i0) * Dh);
        gemm_on_thread(dkh + t.j0 * Dh, dsop, qop, GemmShape{t.nk, Dh, t.M, Trans::kYes, Trans::kNo}, 1.0f, p);
        gemm_on_thread(dvh + t.j0 * Dv, pop, dop, GemmShape{t.nk, Dv, t.M, Trans::kYes, Trans::kNo}, 1.0f, p);
      }
    }
}

}  // namespace mt
