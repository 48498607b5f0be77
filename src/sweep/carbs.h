// carbs.h — cost-aware Pareto-region Bayesian search (CARBS; Fetterman et
// al. 2023, "Tune As You Scale", arXiv:2306.08055): the suggestion step of a
// hyperparameter sweep whose every run has a value (e.g. held-out loss; lower
// is better) and a cost (e.g. training FLOPs).
//
// Each suggestion:
//  1. Until `initial` runs are observed: a draw of the search distribution
//     around the space's centre (with a known cost, the draw at quantile
//     (index + 1/2) / initial of 64 draws' costs: the first runs span the
//     costs).
//  2. Otherwise GP surrogates (sweep/gp.h) of the value over the runs that
//     succeeded and, unless cost is a known function of the settings, of log
//     cost over all runs; a model of success (the failed and succeeded runs
//     near a point, weighted by the value GP's kernel, with a uniform prior).
//  3. A target cost, drawn uniformly in log cost over the range observed so
//     far (extended upward by `cost_extension` of it), so the search walks
//     the whole front and learns how each setting scales with cost. With
//     `focus_costs` (the costs a study compares at, e.g. a ladder's rungs)
//     the targets take them in turn instead, and so do the first runs (the
//     draw whose cost is nearest below each): few runs then cover every
//     cost that matters rather than the range at random. This is an
//     extension of the paper's method (docs/sweep.md).
//  4. Candidates drawn around every member of the Pareto front (and the
//     centre): each unit coordinate moved by N(0, radius^2).
//  5. Of the candidates whose predicted cost lies near the target (within
//     `cost_window` of the log-cost range; all of them if none does), the
//     one with the highest expected improvement over the front at its
//     predicted cost (pareto.h's FrontCurve), times its chance of success.
// Every draw is counter-based (Philox by seed, suggestion index and draw),
// so a search restarted from the same observations suggests the same runs.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sweep/gp.h"
#include "sweep/pareto.h"
#include "sweep/space.h"

namespace mt {

struct SweepObservation {
  std::vector<double> settings;  // natural units, one per SweepParam
  double value = 0;              // lower is better; ignored when failed
  double cost = 0;               // > 0
  bool failed = false;           // diverged, refused, crashed: data for the success model (so is a
                                 // value that is not finite)
};

struct CarbsOptions {
  uint64_t seed = 0;
  int initial = 8;                 // runs drawn around the centre before the surrogates decide
  int candidates_per_member = 48;  // draws around each front member (and the centre)
  double cost_window = 0.15;       // fraction of the log-cost range a candidate may miss the target by
  double cost_extension = 0.25;    // the target range reaches this fraction of it beyond the costliest run
  std::vector<double> focus_costs;  // empty: targets over the whole observed range
  GpOptions gp;
  // Cost of settings when it is known without running (e.g. 6 N D from the
  // width rule and the token budget); empty: a GP of log cost.
  std::function<double(const std::vector<double>&)> cost_of;
};

class Carbs {
 public:
  Carbs(std::vector<SweepParam> space, CarbsOptions opt);
  void observe(const SweepObservation& o) { obs_.push_back(o); }
  const std::vector<SweepObservation>& observations() const { return obs_; }
  // The next settings (natural units). `index`: the suggestion's number in
  // the search (its random stream).
  std::vector<double> suggest(uint64_t index) const;
  // Indices into observations() of the succeeded runs on the cost/value front.
  std::vector<size_t> front() const;
  const std::vector<SweepParam>& space() const { return space_; }

 private:
  std::vector<double> draw_around(const std::vector<double>& unit, uint64_t index, uint64_t draw) const;
  std::vector<SweepParam> space_;
  CarbsOptions opt_;
  std::vector<SweepObservation> obs_;
};

// Standard normal from Philox (seed, stream, counter): Box-Muller on two words.
double philox_normal(uint64_t seed, uint64_t stream, uint64_t counter);
double philox_uniform(uint64_t seed, uint64_t stream, uint64_t counter);

// E[max(best - f, 0)] for f ~ N(mean, sd^2).
double expected_improvement(double best, double mean, double sd);

}  // namespace mt
