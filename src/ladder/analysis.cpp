// analysis.cpp — see analysis.h. The bootstrap resamples the fitted runs once
// and refits everything on each resample (the law and every downstream
// sigmoid), so a projected accuracy's interval carries the uncertainty of
// both steps.
#include "ladder/analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace mt::ladder {
namespace {

Status check_target(const LadderOptions& opt) {
  const Target& t = opt.target;
  if ((t.params > 0) != (t.tokens > 0)) return Status::error("a target size needs both parameters and tokens");
  if (t.tokens_per_param > 0 && !(t.flops > 0)) return Status::error("tokens per parameter needs a target compute");
  const bool projecting = t.params > 0 || t.flops > 0;
  if (opt.sparsity == Sparsity::kNone && t.sparsity > 0)
    return Status::error(
        "a target sparsity G (--target-sparsity) applies only to a law fitted with the sparsity term "
        "(--sparsity-term)");
  if (opt.sparsity != Sparsity::kNone && projecting && !(t.sparsity >= 1))
    return Status::errorf("the law has a sparsity term: a projection needs the target's G = {} (>= 1)",
                          opt.sparsity == Sparsity::kExperts ? "n_experts" : "total/active parameters");
  return Status::ok();
}

// Runs reporting `task`, among rows `idx` of `runs` (all rows when idx is null).
void task_points(const std::vector<Run>& runs, const std::vector<int64_t>* idx, const std::string& task,
                 std::vector<double>* loss, std::vector<double>* acc) {
  const int64_t n = idx ? int64_t(idx->size()) : int64_t(runs.size());
  for (int64_t j = 0; j < n; ++j) {
    const Run& r = runs[idx ? (*idx)[j] : j];
    auto it = r.accuracy.find(task);
    if (it == r.accuracy.end()) continue;
    loss->push_back(r.loss);
    acc->push_back(it->second);
  }
}

// One projected run: the full fit's value and the bootstrap spread, from a
// function of (law, the task sigmoids) -> allocation.
struct Samples {
  std::vector<Law> laws;                                 // per resample
  std::vector<std::map<std::string, Sigmoid>> sigmoids;  // per resample, per task
};

ProjectedRun project(const Analysis& a, const Samples& s, const std::function<Allocation(const Law&)>& at) {
  const double level = a.options.bootstrap.level;
  const Allocation full = at(a.fit.law);
  std::vector<double> n, d, ratio, loss;
  std::vector<Allocation> boot;
  for (const Law& law : s.laws) {
    const Allocation b = at(law);
    boot.push_back(b);
    n.push_back(b.N);
    d.push_back(b.D);
    ratio.push_back(b.tokens_per_param());
    loss.push_back(b.loss);
  }
  ProjectedRun p;
  p.N = summarize(full.N, n, level);
  p.D = summarize(full.D, d, level);
  p.tokens_per_param = summarize(full.tokens_per_param(), ratio, level);
  p.loss = summarize(full.loss, loss, level);
  for (const DownstreamFit& f : a.downstream) {
    std::vector<double> acc;
    for (size_t b = 0; b < boot.size(); ++b) acc.push_back(sigmoid_accuracy(s.sigmoids[b].at(f.task), boot[b].loss));
    p.accuracy[f.task] = summarize(sigmoid_accuracy(f.sigmoid, full.loss), acc, level);
  }
  return p;
}

// Leaves out the k highest-loss runs; ties keep file order, so the same runs
// are always dropped.
Status split_dropped(const std::vector<Run>& runs, int64_t k, Analysis* a) {
  if (k < 0) return Status::errorf("cannot drop {} runs", k);
  if (k >= int64_t(runs.size()))
    return Status::errorf("dropping the {} highest-loss runs (--drop-highest-loss) leaves none of {}", k, runs.size());
  std::vector<int64_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return runs[i].loss > runs[j].loss; });
  std::vector<bool> drop(runs.size(), false);
  for (int64_t j = 0; j < k; ++j) drop[size_t(order[size_t(j)])] = true;
  for (size_t i = 0; i < runs.size(); ++i) (drop[i] ? a->dropped : a->used).push_back(runs[i]);
  return Status::ok();
}

// One sigmoid per task reported by the fitted runs; a task with too few runs is noted.
Status fit_tasks(const std::map<std::string, double>& chance, Analysis* a) {
  std::set<std::string> tasks;
  for (const Run& r : a->used)
    for (const auto& kv : r.accuracy) tasks.insert(kv.first);
  for (const auto& kv : chance)
    if (!tasks.count(kv.first)) return Status::errorf("chance accuracy given for '{}', which no run reports", kv.first);
  for (const std::string& task : tasks) {
    std::vector<double> loss, acc;
    task_points(a->used, nullptr, task, &loss, &acc);
    auto it = chance.find(task);
    auto f = fit_downstream(task, loss, acc, it == chance.end() ? 0.0 : it->second);
    if (f)
      a->downstream.push_back(*f);
    else
      a->notes.push_back(f.status().message() + "; not fitted");
  }
  return Status::ok();
}

// Refits the law and every task's sigmoid on each resample of the fitted runs.
Samples bootstrap(const FitPoints& points, const Analysis& a) {
  const LadderOptions& opt = a.options;
  Samples s;
  s.laws.resize(size_t(std::max<int64_t>(0, opt.bootstrap.resamples)));
  s.sigmoids.resize(s.laws.size());
  for_each_resample(points.size(), opt.bootstrap, [&](int64_t b, const std::vector<int64_t>& idx) {
    s.laws[size_t(b)] = refit_law(subset(points, idx), a.fit.optima, opt.fit).law;
    for (const DownstreamFit& f : a.downstream) {
      std::vector<double> loss, acc;
      task_points(a.used, &idx, f.task, &loss, &acc);
      s.sigmoids[size_t(b)][f.task] = refit_downstream(loss, acc, f.sigmoid);
    }
  });
  return s;
}

LawEstimates estimate_law(const Law& law, const Samples& s, double level) {
  auto estimate = [&](double Law::*field) {
    std::vector<double> v;
    for (const Law& b : s.laws) v.push_back(b.*field);
    return summarize(law.*field, v, level);
  };
  return {estimate(&Law::E),     estimate(&Law::A),    estimate(&Law::B),
          estimate(&Law::alpha), estimate(&Law::beta), estimate(&Law::gamma)};
}

Projection project_targets(const Analysis& a, const Samples& s) {
  const Target& t = a.options.target;
  const double G = a.options.sparsity == Sparsity::kNone ? 1.0 : t.sparsity;
  Projection p;
  if (t.params > 0) p.at_size = project(a, s, [&](const Law& l) { return at_size(l, t.params, t.tokens, G); });
  if (t.flops > 0) {
    p.compute_optimal = project(a, s, [&](const Law& l) { return compute_optimal(l, t.flops, G); });
    if (t.tokens_per_param > 0)
      p.at_ratio = project(a, s, [&](const Law& l) { return at_tokens_per_param(l, t.flops, t.tokens_per_param, G); });
    if (a.isoflop.fitted) {
      p.isoflop_N = a.isoflop.n_opt.at(t.flops);
      p.isoflop_D = a.isoflop.d_opt.at(t.flops);
    }
  }
  return p;
}

}  // namespace

Result<Analysis> analyze(const std::vector<Run>& runs, const LadderOptions& opt) {
  MT_RETURN_IF_ERROR(check_target(opt));
  if (!(opt.bootstrap.level > 0 && opt.bootstrap.level < 1))
    return Status::errorf("interval level (--level) must be in (0, 1), got {}", opt.bootstrap.level);
  Analysis a;
  a.options = opt;
  a.runs_read = int64_t(runs.size());
  std::vector<Run> fitted;
  std::vector<Run> held;
  for (const std::string& name : opt.hold_out)
    if (std::none_of(runs.begin(), runs.end(), [&](const Run& r) { return r.name == name; }))
      return Status::errorf("--hold-out {}: no run of that name", name);
  for (const Run& r : runs)
    (std::find(opt.hold_out.begin(), opt.hold_out.end(), r.name) != opt.hold_out.end() ? held : fitted).push_back(r);
  MT_RETURN_IF_ERROR(split_dropped(fitted, opt.drop_highest_loss, &a));

  auto points = make_fit_points(a.used, opt.param_count, opt.sparsity);
  if (!points) return points.status();
  auto fit = fit_law(*points, opt.fit);
  if (!fit) return fit.status();
  a.fit = *fit;
  const Law& law = a.fit.law;
  if (opt.target.flops > 0 && !(law.alpha > 0 && law.beta > 0))
    return Status::errorf("the fitted law has alpha = {:.4g}, beta = {:.4g}: no compute-optimal allocation exists",
                          law.alpha, law.beta);
  MT_RETURN_IF_ERROR(fit_tasks(opt.chance, &a));

  const Samples s = bootstrap(*points, a);
  a.estimates = estimate_law(law, s, opt.bootstrap.level);
  a.isoflop = fit_isoflop(a.used, opt.param_count, opt.isoflop);
  a.projection = project_targets(a, s);
  a.bootstrap_laws = s.laws;
  for (const Run& r : held) {
    const double n = opt.param_count == ParamCount::kActive ? r.active_params : r.total_params;
    const double g = opt.sparsity == Sparsity::kNone      ? 1.0
                     : opt.sparsity == Sparsity::kExperts ? r.n_experts
                                                          : r.total_params / r.active_params;
    HeldOutRun h;
    h.run = r;
    h.predicted = project(a, s, [&](const Law& l) { return at_size(l, n, r.tokens, g); }).loss;
    h.error = h.predicted.value / r.loss - 1.0;
    h.inside = r.loss >= h.predicted.lo && r.loss <= h.predicted.hi;
    a.held_out.push_back(h);
  }
  return a;
}

}  // namespace mt::ladder
