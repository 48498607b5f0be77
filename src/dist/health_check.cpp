// health_check.cpp — see health_check.h.
#include "dist/health_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <vector>

#include "core/check.h"
#include "core/config_schema.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/timer.h"
#include "comm/comm.h"
#include "kernels/cpu/gemm.h"

namespace mt {

void declare_keys(ConfigSchema& s, HealthConfig& c) {
  s.add("health.every", &c.every,
        "run the deterministic GEMM check on every rank (against a stored reference and across ranks) every N steps; "
        "a failure stops the run naming the rank")
      .range(0, int64_t(1) << 40).unit("steps").note("0 = off");
  s.add("health.at_start", &c.at_start, "run the same check once before the first step");
  s.add("health.recompute", &c.recompute,
        "at each check, every rank also recomputes the next rank's slice of the last micro-batch and the losses are "
        "compared bitwise (silent corruption on the training path; needs dist.ep = 1 and 3+ ranks to name one rank)");
}

namespace {

constexpr uint64_t kProbeSeed = 0x5EEDC0DEull;

// The probe's inputs and its fp64 reference, built once per process: the
// reference loop costs ~100x the gemm, the periodic check pays only the gemm.
struct ProbeData {
  std::vector<float> a, b;               // (M, K), (K, N)
  std::vector<double> ref, scale;        // (M, N): sum_k a b, sum_k |a b|
  ProbeData() : a(kProbeM * kProbeK), b(kProbeK * kProbeN), ref(kProbeM * kProbeN), scale(kProbeM * kProbeN) {
    fill_normal(a.data(), int64_t(a.size()), 1.0f, kProbeSeed, 0);
    fill_normal(b.data(), int64_t(b.size()), 1.0f, kProbeSeed, 1);
    for (int64_t i = 0; i < kProbeM; ++i)
      for (int64_t j = 0; j < kProbeN; ++j) {
        double sum = 0.0, abs_sum = 0.0;
        for (int64_t k = 0; k < kProbeK; ++k) {
          const double p = double(a[i * kProbeK + k]) * double(b[k * kProbeN + j]);
          sum += p;
          abs_sum += std::fabs(p);
        }
        ref[i * kProbeN + j] = sum;
        scale[i * kProbeN + j] = abs_sum;
      }
  }
};

const ProbeData& probe_data() {
  static const ProbeData d;
  return d;
}

uint64_t pattern_word(int64_t i, uint64_t pattern) { return pattern ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull); }

}  // namespace

GemmProbe run_gemm_probe() {
  const ProbeData& d = probe_data();
  GemmProbe p;
  const double t0 = now_seconds();
  std::vector<float> c(kProbeM * kProbeN);
  gemm(c.data(), d.a.data(), d.b.data(), GemmShape{kProbeM, kProbeN, kProbeK}, 0.0f, MatmulPrecision::kFp32);
  p.non_finite = count_non_finite(c.data(), int64_t(c.size()));
  for (size_t i = 0; i < c.size(); ++i) {
    const double err = std::fabs(double(c[i]) - d.ref[i]) / std::max(d.scale[i], 1e-30);
    if (!(err <= p.max_error)) p.max_error = std::isfinite(err) ? err : INFINITY;
  }
  p.hash = xxh64(c.data(), c.size() * sizeof(float));
  p.seconds = now_seconds() - t0;
  return p;
}

int64_t count_non_finite(const float* x, int64_t n) {
  int64_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (int64_t i = 0; i < n; ++i) bad += std::isfinite(x[i]) ? 0 : 1;
  return bad;
}

void fill_pattern(uint64_t* buf, int64_t n, uint64_t pattern) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) buf[i] = pattern_word(i, pattern);
}

int64_t count_pattern_mismatches(const uint64_t* buf, int64_t n, uint64_t pattern) {
  int64_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (int64_t i = 0; i < n; ++i) bad += buf[i] == pattern_word(i, pattern) ? 0 : 1;
  return bad;
}

MemoryTest run_memory_test(int64_t bytes) {
  MemoryTest m;
  const int64_t n = std::max<int64_t>(1, bytes / 8);
  m.bytes = n * 8;
  const double t0 = now_seconds();
  std::vector<uint64_t> buf(n);  // zero-filled: every page is touched before the first pattern
  const uint64_t patterns[] = {0, ~uint64_t(0), 0x5555555555555555ull, 0xAAAAAAAAAAAAAAAAull};
  for (uint64_t p : patterns) {
    fill_pattern(buf.data(), n, p);
    m.mismatches += count_pattern_mismatches(buf.data(), n, p);
  }
  m.seconds = now_seconds() - t0;
  m.gb_per_s = m.seconds > 0 ? 2.0 * 4.0 * double(m.bytes) / m.seconds / 1e9 : 0.0;
  return m;
}

Result<uint64_t> hash_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open", path);
  Hasher h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    if (in.gcount() > 0) h.update(buf.data(), size_t(in.gcount()));
  }
  if (in.bad()) return Status::errorf("{}: read error", path);
  return h.digest();
}

std::vector<int> minority_ranks(const std::vector<std::string>& values) {
  std::map<std::string, int> count, first;
  for (int r = 0; r < int(values.size()); ++r) {
    if (!count[values[r]]++) first[values[r]] = r;
  }
  std::string best;
  int best_n = 0, best_first = 0;
  for (const auto& [v, n] : count)
    if (n > best_n || (n == best_n && first[v] < best_first)) best = v, best_n = n, best_first = first[v];
  std::vector<int> out;
  for (int r = 0; r < int(values.size()); ++r)
    if (values[r] != best) out.push_back(r);
  return out;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

GemmVerdict check_gemm_all_ranks(Comm& world) {
  GemmVerdict v;
  const double t0 = now_seconds();
  const GemmProbe mine = run_gemm_probe();
  const std::vector<std::string> all = world.allgather_strings(
      fmt::format("{} {} {:.17g} {:.17g}", mine.hash, mine.non_finite, mine.max_error, mine.seconds), "health check");
  std::vector<std::string> hashes;
  std::vector<std::string> why(all.size());
  for (size_t r = 0; r < all.size(); ++r) {
    GemmProbe p;
    unsigned long long h = 0;
    long long nf = 0;
    MT_CHECK(std::sscanf(all[r].c_str(), "%llu %lld %lf %lf", &h, &nf, &p.max_error, &p.seconds) == 4,
             "health check: rank {} sent \"{}\"", r, all[r]);
    p.hash = h;
    p.non_finite = nf;
    v.probes.push_back(p);
    hashes.push_back(hex64(p.hash));
    if (p.non_finite > 0) why[r] += fmt::format("; {} NaN/Inf outputs", p.non_finite);
    if (p.max_error > kGemmTolerance)
      why[r] += fmt::format("; off the reference by {:.2e} (tolerance {:.0e})", p.max_error, kGemmTolerance);
  }
  const std::vector<int> odd = minority_ranks(hashes);
  for (int r : odd) why[r] += fmt::format("; result hash {} differs from the majority's", hashes[r]);
  for (size_t r = 0; r < all.size(); ++r)
    if (!why[r].empty()) {
      v.culprits.push_back(int(r));
      v.message += fmt::format("{}rank {}: GEMM check failed: {}", v.message.empty() ? "" : "; ", r, why[r].substr(2));
    }
  v.seconds = now_seconds() - t0;
  return v;
}

}  // namespace mt
