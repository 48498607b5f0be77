// cpu_profile.cpp — see cpu_profile.h.
#include "plan/cpu_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/config_schema.h"

namespace mt::plan {
namespace {

// Seconds at rate 1 FLOP/s and efficiency 1: 3 passes x 2 M N K x (K + k0) / K per call.
double unit_seconds(const GemmSample& s, double k0) {
  double t = 0;
  for (const GemmCall& c : s.calls) t += 3.0 * c.groups * 2.0 * c.M * c.N * c.K * (c.K + k0) / c.K;
  return t;
}

// Keeps a figure readable and exact enough to round-trip: 6 significant digits.
std::string num(double x) { return fmt::format("{:.6g}", x); }

}  // namespace

GemmFit fit_gemm_rate(const std::vector<GemmSample>& samples, double gemm_gflops) {
  GemmFit best;
  if (samples.empty() || !(gemm_gflops > 0)) return best;
  const double rate = gemm_gflops * 1e9;
  double best_err = INFINITY;
  for (int k0 = 0; k0 <= 1024; ++k0) {
    // log t_i = log u_i - log(rate) - log(eff): eff = exp(mean(log(u_i / (rate t_i)))).
    double sum = 0;
    for (const GemmSample& s : samples) sum += std::log(unit_seconds(s, k0) / (rate * s.seconds));
    const double log_eff = sum / double(samples.size());
    double err = 0;
    for (const GemmSample& s : samples) {
      const double e = std::log(unit_seconds(s, k0) / rate) - log_eff - std::log(s.seconds);
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best = {std::exp(log_eff), double(k0), std::sqrt(err / double(samples.size()))};
    }
  }
  return best;
}

double predicted_gemm_s(const GemmSample& s, double gemm_gflops, const GemmFit& f) {
  return unit_seconds(s, f.k0) / (gemm_gflops * 1e9 * f.efficiency);
}

namespace {

// Text for a comment line: a line break in a path would end the comment and leave the rest as TOML.
std::string one_line(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

}  // namespace

std::string cpu_cluster_toml(const CpuProfile& p) {
  std::string t;
  t += fmt::format("# A cluster file measured by `{}`\n", one_line(p.command));
  t += fmt::format("# on {}, {}, {} thread(s).\n", one_line(p.cpu), p.date, p.threads);
  t += fmt::format("# CPU flags: {}\n", one_line(p.flags));
  t += "# `moetrain plan --cluster THIS --layout cpu` predicts `moetrain bench` steps from these kernel-level\n"
       "# figures (docs/planner.md, \"A measured CPU\"); no training step was timed to make them.\n\n";
  t += "[cluster]\n";
  t += fmt::format("name = {}\n\n", toml_quote(fmt::format("{}, {} threads (measured {})", p.cpu, p.threads, p.date)));
  t += "[gpu]\n";
  t += "type = \"cpu\"\n";
  const double bf16_peak = p.bf16.rates.peak_gflops > 0 ? p.bf16.rates.peak_gflops : p.fp32.rates.peak_gflops;
  t += fmt::format("peak_bf16_tflops = {}  # the bf16 unit ({}); [cpu] has both precisions' peaks\n",
                   num(bf16_peak / 1e3), p.bf16_unit);
  t += fmt::format("hbm_gib = {}  # available memory (MemAvailable)\n", num(p.ram_gib));
  t += fmt::format("hbm_tbps = {}  # the AdamW kernel's streaming rate, planner byte count\n\n",
                   num(p.memory_gbps / 1e3));
  t += "[topology]\ngpus_per_rack = 1\nracks = 1\n\n";
  t += "[efficiency]\n";
  t += "hbm = 1.0  # gpu.hbm_tbps is a measured, achieved rate\n";
  t += fmt::format("kernel_latency_us = {}  # a 16^3 product's time: the fixed cost of a kernel call\n\n",
                   num(p.kernel_latency_us));
  t += "[cpu]\n";
  t += fmt::format("threads = {}\n", p.threads);
  for (const auto& [name, pp] :
       {std::pair<const char*, const CpuPrecisionProfile*>{"fp32", &p.fp32}, {"bf16", &p.bf16}}) {
    const CpuRates& r = pp->rates;
    if (!r.measured()) continue;
    t += fmt::format("peak_{}_gflops = {}\n", name, num(r.peak_gflops));
    t += fmt::format("gemm_{}_gflops = {}  # best 2048^3 product\n", name, num(r.gemm_gflops));
    t += fmt::format("gemm_{}_efficiency = {}  # fitted to the products below\n", name, num(r.gemm_efficiency));
    t += fmt::format("gemm_{}_k0 = {}\n", name, num(r.gemm_k0));
    t += fmt::format("attention_{}_gflops = {}  # forward {:.2f} ms + backward {:.2f} ms\n", name,
                     num(r.attention_gflops), 1e3 * pp->attention_fwd_s, 1e3 * pp->attention_bwd_s);
    if (r.delta_gflops > 0) t += fmt::format("delta_{}_gflops = {}\n", name, num(r.delta_gflops));
    if (r.experts_factor > 0)
      t += fmt::format("experts_{}_factor = {}  # the grouped experts over the fitted rate\n", name,
                       num(r.experts_factor));
    const GemmFit f{r.gemm_efficiency, r.gemm_k0, 0};
    t += fmt::format(
        "# {} products, forward + both gradients: measured ms / fitted ms (the rate fitted to the\n"
        "# linear layers; the experts' row at the fitted rate, before their factor)\n",
        name);
    for (const GemmSample& s : pp->samples)
      t += fmt::format("#   {:<44} {:9.2f} / {:9.2f}\n", s.name, 1e3 * s.seconds,
                       1e3 * predicted_gemm_s(s, r.gemm_gflops, f));
  }
  return t;
}

}  // namespace mt::plan
