// gradcheck.h — central-difference gradient checking for float code: the
// loss is accumulated in double, sampled coordinates are perturbed by ±eps,
// and the numeric derivative is compared with the analytic one both per
// coordinate and as a whole vector (relative error of the sampled vectors).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/rng.h"

namespace mt::testing {

// The scalar loss sum_i w_i y_i whose gradient w.r.t. y is w: how the op tests turn an output into a loss.
inline double weighted(const std::vector<float>& w, const float* y) {
  double s = 0.0;
  for (size_t i = 0; i < w.size(); ++i) s += double(w[i]) * double(y[i]);
  return s;
}

struct GradCheckOptions {
  int samples = 48;        // coordinates checked per tensor
  float eps = 1e-3f;
  double rel_vec_tol = 2e-2;  // ||num - ana|| / max(||num||, ||ana||)
  double abs_tol = 2e-4;      // per coordinate: |num - ana| <= abs_tol + rel_tol * |ana|
  double rel_tol = 5e-2;
  uint64_t seed = 7;
};

// `loss` recomputes the scalar loss from the current contents of x.
// `valid` (optional) returns false when a perturbation changed a discrete
// decision (e.g. routing); such samples are skipped (and counted).
inline void expect_gradient_matches(const char* what, float* x, int64_t n, const float* analytic,
                                    const std::function<double()>& loss,
                                    const GradCheckOptions& opt = {},
                                    const std::function<bool()>& valid = nullptr) {
  std::vector<double> num, ana;
  int skipped = 0, bad = 0;
  const int samples = int(std::min<int64_t>(opt.samples, n));
  for (int s = 0; s < samples; ++s) {
    uint32_t w[4];
    philox_block(opt.seed, 0xc0ffee, uint64_t(s), w);
    const int64_t i = samples == n ? s : int64_t(w[0] % uint64_t(n));
    const float orig = x[i];
    x[i] = orig + opt.eps;
    const double lp = loss();
    const bool ok_p = !valid || valid();
    x[i] = orig - opt.eps;
    const double lm = loss();
    const bool ok_m = !valid || valid();
    x[i] = orig;
    if (!ok_p || !ok_m) {
      ++skipped;
      continue;
    }
    const double d = (lp - lm) / (2.0 * double(opt.eps));
    num.push_back(d);
    ana.push_back(analytic[i]);
    if (std::abs(d - analytic[i]) > opt.abs_tol + opt.rel_tol * std::abs(analytic[i])) {
      if (++bad <= 5)
        ADD_FAILURE() << what << "[" << i << "]: numeric " << d << " analytic " << analytic[i];
    }
  }
  double dn = 0, nn = 0, na = 0;
  for (size_t k = 0; k < num.size(); ++k) {
    dn += (num[k] - ana[k]) * (num[k] - ana[k]);
    nn += num[k] * num[k];
    na += ana[k] * ana[k];
  }
  const double denom = std::max(std::sqrt(nn), std::sqrt(na));
  if (denom > 0) {
    EXPECT_LT(std::sqrt(dn) / denom, opt.rel_vec_tol) << what << " vector relative error";
  }
  EXPECT_LE(skipped, samples / 4) << what << ": too many samples flipped a discrete decision";
  EXPECT_EQ(bad, 0) << what << ": " << bad << " coordinates out of tolerance";
}

}  // namespace mt::testing
