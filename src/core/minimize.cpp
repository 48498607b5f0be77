// minimize.cpp — see minimize.h.
#include "core/minimize.h"

#include <fmt/format.h>
#include <lbfgs.h>

#include "core/check.h"

namespace mt {
namespace {

struct Instance {
  const MinimizeObjective& f;
  double f_floor;
};

lbfgsfloatval_t evaluate(void* instance, const lbfgsfloatval_t* x, lbfgsfloatval_t* g, const int /*n*/,
                         const lbfgsfloatval_t /*step*/) {
  return static_cast<const Instance*>(instance)->f(x, g);
}

// liblbfgs ends the run with this callback's non-zero return as its code.
int progress(void* instance, const lbfgsfloatval_t* /*x*/, const lbfgsfloatval_t* /*g*/, const lbfgsfloatval_t fx,
             const lbfgsfloatval_t /*xnorm*/, const lbfgsfloatval_t /*gnorm*/, const lbfgsfloatval_t /*step*/,
             int /*n*/, int /*k*/, int /*ls*/) {
  return fx <= static_cast<const Instance*>(instance)->f_floor ? LBFGS_STOP : 0;
}

}  // namespace

MinimizeResult minimize_lbfgs(const MinimizeObjective& f, std::vector<double>& x, const MinimizeOptions& opt) {
  static_assert(sizeof(lbfgsfloatval_t) == sizeof(double), "liblbfgs built for double precision");
  const int n = int(x.size());
  MT_CHECK(n > 0, "empty parameter vector");
  lbfgs_parameter_t param;
  lbfgs_parameter_init(&param);
  param.max_iterations = int(opt.max_iterations);
  param.epsilon = opt.grad_tol;
  param.past = 5;
  param.delta = opt.rel_decrease;
  // lbfgs_malloc: aligned as liblbfgs wants when it was built with SSE.
  lbfgsfloatval_t* xs = lbfgs_malloc(n);
  MT_CHECK(xs != nullptr, "lbfgs_malloc({}) failed", n);
  for (int i = 0; i < n; ++i) xs[i] = x[i];
  MinimizeResult r;
  Instance instance{f, opt.f_floor};
  r.code = lbfgs(n, xs, &r.f, evaluate, progress, &instance, &param);
  for (int i = 0; i < n; ++i) x[i] = xs[i];
  lbfgs_free(xs);
  // On some early failures liblbfgs leaves f unset; evaluate where x ended.
  std::vector<double> dx(x.size());
  r.f = f(x.data(), dx.data());
  r.reached_floor = r.code == LBFGS_STOP && r.f <= opt.f_floor;
  return r;
}

std::string lbfgs_code_text(int code) {
  switch (code) {
    case LBFGS_SUCCESS:
      return "converged";
    case LBFGS_STOP:
      return "stopped (no further decrease)";
    case LBFGS_ALREADY_MINIMIZED:
      return "already at a minimum";
    case LBFGSERR_ROUNDING_ERROR:
      return "line search stopped by rounding error";
    case LBFGSERR_MINIMUMSTEP:
      return "line search step below the minimum";
    case LBFGSERR_MAXIMUMSTEP:
      return "line search step above the maximum";
    case LBFGSERR_MAXIMUMLINESEARCH:
      return "line search evaluation limit";
    case LBFGSERR_MAXIMUMITERATION:
      return "iteration limit";
    case LBFGSERR_WIDTHTOOSMALL:
      return "line search interval too small";
    case LBFGSERR_INCREASEGRADIENT:
      return "not a descent direction";
    default:
      return fmt::format("liblbfgs code {}", code);
  }
}

}  // namespace mt
