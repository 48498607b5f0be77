// cpu_measure.cpp — see cpu_measure.h. The product list follows the bench
// presets' linear layers at their widths (d_model 512, head dim 64, experts of
// 352, vocabulary 8192); each is timed as the trainer runs it: forward, then
// the input and weight gradients (linear_backward), bf16 weights read from a
// registered shadow as the trainer's are, and the routed experts through the
// grouped kernel.
#include "measure/cpu_measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "core/machine_peak.h"
#include "core/rng.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/gated_delta.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/grouped_swiglu.h"
#include "measure/trainer_weights.h"
#include "measure/reference_gemm.h"
#include "model/attention_kernel.h"

namespace mt {
namespace cpu_measure {  // named: the unity build shares one anonymous namespace with step_bench.cpp
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds of `f` over `repeats` runs after one warm-up run.
double time_median(int64_t repeats, const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int64_t r = 0; r < repeats; ++r) {
    const double t0 = now_seconds();
    f();
    t.push_back(now_seconds() - t0);
  }
  return median(t);
}

std::vector<float> normal(int64_t n, uint64_t stream) {
  std::vector<float> v(size_t(std::max<int64_t>(n, 1)));
  fill_normal(v.data(), n, 0.5f, 7, stream);
  return v;
}

// "vendor family F model M (model name)" and the ISA flags the kernels care about, from /proc/cpuinfo.
void describe_cpu(plan::CpuProfile& p) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor, family, model, name, flags;
  auto value = [](const std::string& l) {
    const size_t c = l.find(':');
    return c == std::string::npos ? std::string() : l.substr(std::min(l.size(), c + 2));
  };
  while (std::getline(in, line)) {
    if (line.rfind("vendor_id", 0) == 0 && vendor.empty())
      vendor = value(line);
    else if (line.rfind("cpu family", 0) == 0 && family.empty())
      family = value(line);
    else if (line.rfind("model name", 0) == 0 && name.empty())
      name = value(line);
    else if (line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0 && model.empty())
      model = value(line);
    else if (line.rfind("flags", 0) == 0 && flags.empty())
      flags = value(line);
  }
  p.cpu = vendor.empty() ? "unknown CPU" : fmt::format("{} family {} model {} ({})", vendor, family, model, name);
  const std::set<std::string> wanted = {"avx2",        "fma",         "avx512f",  "avx512bw", "avx512vl",
                                        "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"};
  std::istringstream fs(flags);
  std::string f;
  while (fs >> f)
    if (wanted.count(f)) p.flags += (p.flags.empty() ? "" : " ") + f;
  if (p.flags.empty()) p.flags = "(none of avx2, fma, avx512*, amx*)";
}

double available_gib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (in >> key) {
    if (key == "MemAvailable:") {
      in >> kib;
      break;
    }
    in.ignore(1 << 12, '\n');
  }
  return kib / (1024.0 * 1024.0);
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::localtime(&t));
  return buf;
}

// One linear layer y (M, N) = x (M, K) W^T: forward and both gradients, as the trainer runs them (the
// weight gradient first-written, as a step's first micro-batch writes it: grad_ledger.h).
plan::GemmSample linear_sample(const std::string& what, int64_t M, int64_t N, int64_t K, MatmulPrecision p,
                               int64_t repeats) {
  TrainerWeights W(normal(N * K, 2), p);
  std::vector<float> x = normal(M * K, 1), y(size_t(M * N)), dy = normal(M * N, 3), dx(size_t(M * K)),
                     dW(size_t(N * K));
  OperandBuffer xb;
  GemmInput xin(x.data());
  if (p == MatmulPrecision::kBf16) xin = GemmInput(operand_of(x.data(), M * K, operand_form(p), xb), operand_form(p));
  plan::GemmSample s;
  s.name = fmt::format("{} {}x{}x{}", what, M, N, K);
  s.calls = {{1, double(M), double(N), double(K)}};
  s.seconds = time_median(repeats, [&] {
    W.new_step();
    linear_forward(y.data(), xin, W.data(), M, N, K, p);
    linear_backward(dx.data(), WeightGrad(dW.data(), 0.0f), dy.data(), xin, W.data(), M, N, K, 0.0f, p);
  });
  return s;
}

// The routed experts of one MoE layer: E experts of F, rows = tokens x top-k spread evenly (bench's routing).
// Their weights lie in one region, as the trainer's parameters do (each expert's W13 then W2); their
// gradients first-written, as in a step's first micro-batch.
plan::GemmSample experts_sample(int64_t tokens, int64_t E, int64_t topk, int64_t F, int64_t Din, MatmulPrecision p,
                                int64_t repeats) {
  const int64_t rows = tokens * topk, per = rows / E, w13n = 2 * F * Din, w2n = Din * F;
  std::vector<int64_t> begin(size_t(E + 1));
  for (int64_t e = 0; e <= E; ++e) begin[size_t(e)] = e * per;
  std::vector<float> values;
  values.reserve(size_t(E * (w13n + w2n)));
  for (int64_t e = 0; e < E; ++e)
    for (const std::vector<float>& w : {normal(w13n, 10 + e), normal(w2n, 100 + e)})
      values.insert(values.end(), w.begin(), w.end());
  TrainerWeights weights(std::move(values), p);
  std::vector<std::vector<float>> dw13, dw2;
  std::vector<const float*> w13p, w2p;
  std::vector<WeightGrad> dw13p, dw2p;
  for (int64_t e = 0; e < E; ++e) {
    dw13.emplace_back(size_t(w13n));
    dw2.emplace_back(size_t(w2n));
  }
  for (int64_t e = 0; e < E; ++e) {
    w13p.push_back(weights.data() + e * (w13n + w2n)), w2p.push_back(weights.data() + e * (w13n + w2n) + w13n);
    dw13p.push_back({dw13[size_t(e)].data(), 0.0f}), dw2p.push_back({dw2[size_t(e)].data(), 0.0f});
  }
  const int64_t n = per * E;
  std::vector<float> x = normal(n * Din, 4), y(size_t(n * Din)), h13(size_t(n * 2 * F)), z(size_t(n * F)),
                     dy = normal(n * Din, 5), dx(size_t(n * Din)), dh13(size_t(n * 2 * F));
  const ExpertGroup g{E, begin.data(), F, Din, w13p.data(), w2p.data()};
  plan::GemmSample s;
  s.name = fmt::format("experts {} x ({}x{}x{}, {}x{}x{})", E, per, 2 * F, Din, per, Din, F);
  s.calls = {{double(E), double(per), double(2 * F), double(Din)}, {double(E), double(per), double(Din), double(F)}};
  s.seconds = time_median(repeats, [&] {
    weights.new_step();
    grouped_swiglu_forward(y.data(), h13.data(), z.data(), x.data(), g, p);
    grouped_swiglu_backward(dx.data(), dw13p.data(), dw2p.data(), dh13.data(), dy.data(), x.data(), h13.data(),
                            z.data(), g, p);
  });
  return s;
}

// The attention kernel train.attention_kernel = auto runs at p, on the bench presets' heads (8 of 64, 2 kv
// heads, 512 tokens, token-major output), one sliding-window (128) call and one global call; the rate
// counts the planner's FLOPs, 3.5 x 4 H Dh keys.
void measure_attention(plan::CpuPrecisionProfile& out, int64_t tokens, MatmulPrecision p, int64_t repeats) {
  const int64_t T = 512, B = std::max<int64_t>(1, tokens / T), H = 8, Hkv = 2, Dh = 64;
  const AttentionKernel k = resolve_attention_kernel(AttentionKernel::kAuto, p);
  const OperandForm form = operand_form(p);
  std::vector<float> q = normal(B * H * T * Dh, 20), kk = normal(B * Hkv * T * Dh, 21),
                     v = normal(B * Hkv * T * Dh, 22), o(size_t(B * H * T * Dh)), lse(size_t(B * H * T)),
                     dout = normal(B * H * T * Dh, 23), dq(q.size()), dk(kk.size()), dv(v.size());
  OperandBuffer qb, kb, vb;
  const QkvOperands qkv{operand_of(q.data(), int64_t(q.size()), form, qb),
                        operand_of(kk.data(), int64_t(kk.size()), form, kb),
                        operand_of(v.data(), int64_t(v.size()), form, vb), form};
  double flops = 0, fwd = 0, bwd = 0;
  for (int64_t window : {int64_t(128), int64_t(0)}) {
    AttentionDims d{B, H, Hkv, T, Dh, window};
    d.token_major_out = true;
    fwd += time_median(repeats, [&] { run_attention_forward(o.data(), form, lse.data(), qkv, d, p, k); });
    bwd += time_median(repeats, [&] {
      run_attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), qkv, o.data(), form, lse.data(), d, p, k);
    });
    flops += 3.5 * 4.0 * double(Dh) * double(H) * attention_keys(nullptr, B, T, window);
  }
  out.attention_fwd_s = fwd, out.attention_bwd_s = bwd;
  out.rates.attention_gflops = flops / (fwd + bwd) / 1e9;
}

// The chunked gated-delta kernel on the hybrid preset's heads: 8 of Dk = Dv = 64, chunks of 64, 512
// tokens; at bf16 with bf16 chunk products, as the layer runs it (fp32 where the build has none).
double measure_delta_gflops(int64_t tokens, int64_t repeats, MatmulPrecision p) {
  const int64_t T = 512, B = std::max<int64_t>(1, tokens / T), H = 8, D = 64, C = 64;
  GatedDeltaDims d{B, H, T, D, D, C};
  d.bf16_products = p == MatmulPrecision::kBf16;
  const int64_t rows = B * H * T, n = rows * D;
  std::vector<float> q = normal(n, 30), k = normal(n, 31), v = normal(n, 32), g = normal(rows, 33),
                     beta = normal(rows, 34), dout = normal(n, 35);
  std::vector<float> o(size_t(n), 0.0f), dq(size_t(n), 0.0f), dk(size_t(n), 0.0f), dv(size_t(n), 0.0f);
  std::vector<float> dg(size_t(rows), 0.0f), dbeta(size_t(rows), 0.0f);
  std::vector<float> states(size_t(B * H * gated_delta_chunks(d) * D * D), 0.0f);
  for (std::vector<float>* x : {&q, &k})  // unit rows, decays in (-0.6, 0), beta in (0, 1): as the layer feeds it
    for (int64_t r = 0; r < rows; ++r) {
      float s = 0.0f;
      for (int64_t e = 0; e < D; ++e) s += (*x)[size_t(r * D + e)] * (*x)[size_t(r * D + e)];
      for (int64_t e = 0; e < D; ++e) (*x)[size_t(r * D + e)] /= std::sqrt(s);
    }
  for (int64_t r = 0; r < rows; ++r) {
    g[size_t(r)] = -0.3f * (1.0f + std::tanh(g[size_t(r)]));
    beta[size_t(r)] = 1.0f / (1.0f + std::exp(-beta[size_t(r)]));
  }
  const double t = time_median(repeats, [&] {
    gated_delta_forward(o.data(), states.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), d);
    gated_delta_backward(dq.data(), dk.data(), dv.data(), dg.data(), dbeta.data(), dout.data(), q.data(), k.data(),
                         v.data(), g.data(), beta.data(), states.data(), d);
  });
  return 3.5 * double(rows) * gated_delta_flops_per_token(D, D, C) / t / 1e9;
}

// AdamW over 16M parameters (256 MiB of parameter, gradient and moments): the planner's optimizer bytes
// (gradient read, m and v read and written, parameter read and written: 28 per parameter) over its time.
double measure_memory_gbps(int64_t repeats) {
  const int64_t n = int64_t(1) << 24;
  std::vector<float> p(size_t(n), 0.1f), m(size_t(n), 0.0f), v(size_t(n), 0.0f), g(size_t(n), 0.01f);
  AdamWParams a{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  const double t = time_median(repeats, [&] {
    adamw_update(p.data(), m.data(), v.data(), g.data(), n, a);
    ++a.step;
  });
  return 28.0 * double(n) / t / 1e9;
}

}  // namespace
}  // namespace cpu_measure

Result<plan::CpuProfile> measure_cpu_profile(const CpuMeasureOptions& opt) {
  using namespace cpu_measure;
  plan::CpuProfile prof;
  describe_cpu(prof);
  prof.date = today();
  prof.command = opt.command;
  prof.threads = num_threads();
  const int64_t M = opt.tokens, R = opt.repeats;
  // Peaks and the reference as moetrain bench takes them (measure/step_bench.cpp).
  const PeakResult peak = measure_peak(0.3, num_threads());
  const Bf16Peak b = bf16_matmul_peak(peak);
  prof.bf16_unit = b.kind;
  prof.fp32.rates.peak_gflops = peak.fp32_gflops;
  prof.bf16.rates.peak_gflops = b.gflops;
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kBf16}) {
    plan::CpuPrecisionProfile& pp = p == MatmulPrecision::kFp32 ? prof.fp32 : prof.bf16;
    pp.rates.gemm_gflops = ReferenceGemm().best_gflops(p);
    // The bench presets' linear layers (moe-512 and its variants) and their routed experts.
    pp.samples = {linear_sample("qkv", M, 768, 512, p, R),         linear_sample("attn out", M, 512, 512, p, R),
                  linear_sample("shared up", M, 704, 512, p, R),   linear_sample("shared down", M, 512, 352, p, R),
                  linear_sample("mla kv down", M, 288, 512, p, R), linear_sample("mla kv up", M, 1024, 256, p, R),
                  linear_sample("delta in", M, 2064, 512, p, R),   linear_sample("mtp proj", M, 512, 1024, p, R),
                  linear_sample("lm head", M, 8192, 512, p, R),    experts_sample(M, 16, 2, 352, 512, p, R)};
    // The rate is fitted to the linear layers (whole products on all threads); the grouped experts (one-thread
    // row tiles of small products, many per layer) get their own factor over it.
    const std::vector<plan::GemmSample> linear(pp.samples.begin(), pp.samples.end() - 1);
    const plan::GemmFit f = plan::fit_gemm_rate(linear, pp.rates.gemm_gflops);
    pp.rates.gemm_efficiency = f.efficiency;
    pp.rates.gemm_k0 = f.k0;
    pp.rates.experts_factor =
        pp.samples.back().seconds / plan::predicted_gemm_s(pp.samples.back(), pp.rates.gemm_gflops, f);
    measure_attention(pp, M, p, R);
    // A build without bf16 chunk products runs the fp32 kernel at bf16 too: measured once (fp32 comes first).
    pp.rates.delta_gflops = p == MatmulPrecision::kBf16 && !gated_delta_bf16_products() ? prof.fp32.rates.delta_gflops
                                                                                        : measure_delta_gflops(M, R, p);
  }
  prof.memory_gbps = measure_memory_gbps(R);
  {
    std::vector<float> a(256, 1.0f), b(256, 1.0f), c(256);
    std::vector<double> t;
    for (int i = 0; i < 201; ++i) {
      const double t0 = now_seconds();
      gemm(c.data(), a.data(), b.data(), GemmShape{16, 16, 16}, 0.0f, MatmulPrecision::kFp32);
      if (i > 0) t.push_back(now_seconds() - t0);
    }
    prof.kernel_latency_us = 1e6 * median(t);
  }
  prof.ram_gib = available_gib();
  if (!(prof.fp32.rates.gemm_gflops > 0) || !(prof.memory_gbps > 0))
    return Status::error("measuring this CPU gave no GEMM or memory rate");
  return prof;
}

}  // namespace mt
