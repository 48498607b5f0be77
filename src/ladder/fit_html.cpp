// fit_html.cpp — see fit_html.h.
#include "ladder/fit_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ladder/fit_law.h"
#include "ladder/projection.h"
#include "report/html.h"
#include "report/svg.h"

namespace mt::ladder {
namespace {

std::string with_se(const Estimate& e) {
  return std::isfinite(e.se) ? fmt::format("{:.4g} (SE {:.2g})", e.value, e.se) : fmt::format("{:.4g}", e.value);
}

// N and G of a run as the fit counted them.
double run_n(const Analysis& a, const Run& r) {
  return a.options.param_count == ParamCount::kActive ? r.active_params : r.total_params;
}
double run_g(const Analysis& a, const Run& r) {
  if (a.options.sparsity == Sparsity::kExperts) return r.n_experts;
  return r.active_params > 0 ? r.total_params / r.active_params : 1.0;
}

}  // namespace

std::string fit_html(const Analysis& a, const std::string& source) {
  using namespace report;
  const Law& law = a.fit.law;
  HtmlPage page("Scaling-law fit: " + source);
  page.paragraph(fmt::format("L(N, D) = E + A / N^alpha + B / D^beta fitted to {} runs of {} (N = {} parameters{}; "
                             "Huber loss on log L, L-BFGS from {} starts).",
                             a.used.size(), source, a.options.param_count == ParamCount::kActive ? "active" : "total",
                             law.sparsity == Sparsity::kNone ? "" : ", with the sparsity term G^gamma",
                             a.fit.starts));
  std::vector<std::pair<std::string, std::string>> kv = {
      {"E", with_se(a.estimates.E)},         {"A", with_se(a.estimates.A)},
      {"B", with_se(a.estimates.B)},         {"alpha", with_se(a.estimates.alpha)},
      {"beta", with_se(a.estimates.beta)}};
  if (law.sparsity != Sparsity::kNone) kv.push_back({"gamma", with_se(a.estimates.gamma)});
  const std::optional<ProjectedRun>& proj = a.projection.compute_optimal;
  const double target_c = a.options.target.flops;
  if (proj && target_c > 0)
    kv.push_back({"projection", fmt::format("C = {:.3g} FLOP: N* = {:.3g}, D* = {:.3g}, loss {:.4g} [{:.4g}, {:.4g}]",
                                            target_c, proj->N.value, proj->D.value, proj->loss.value, proj->loss.lo,
                                            proj->loss.hi)});
  page.key_values(kv);

  // Loss against compute, log-log: runs, the compute-optimal frontier, the projection.
  double c_lo = INFINITY, c_hi = 0;
  for (const Run& r : a.used) c_lo = std::min(c_lo, r.flops), c_hi = std::max(c_hi, r.flops);
  if (target_c > 0) c_hi = std::max(c_hi, target_c);
  for (const HeldOutRun& h : a.held_out) c_hi = std::max(c_hi, h.run.flops);
  LineChart loss_chart;
  loss_chart.title = "Loss against training compute";
  loss_chart.x = {"training compute C (FLOP)", Scale::kLog, std::nullopt, std::nullopt, nullptr};
  loss_chart.y = {"loss (nats per token)", Scale::kLog, std::nullopt, std::nullopt, nullptr};
  Series frontier;
  frontier.name = "fitted law, compute-optimal L*(C)";
  for (int i = 0; i <= 48; ++i) {
    const double c = c_lo / 2 * std::pow(c_hi * 2 / (c_lo / 2), double(i) / 48.0);
    const Allocation al = compute_optimal(law, c);
    if (std::isfinite(al.loss)) frontier.points.push_back({c, al.loss});
  }
  loss_chart.series.push_back(frontier);
  for (const Run& r : a.used) loss_chart.markers.push_back({r.flops, r.loss, "", palette(1)});
  if (proj && target_c > 0) {
    loss_chart.markers.push_back({target_c, proj->loss.value, "projection", "#000"});
    if (std::isfinite(proj->loss.lo) && std::isfinite(proj->loss.hi)) {
      Series interval;
      interval.name = "projection interval";
      interval.points = {{target_c, proj->loss.lo}, {target_c, proj->loss.hi}};
      interval.color = "#000";
      loss_chart.series.push_back(interval);
    }
  }
  for (const HeldOutRun& h : a.held_out) {
    loss_chart.markers.push_back({h.run.flops, h.run.loss, h.run.name + " (held out)", palette(3)});
    if (std::isfinite(h.predicted.lo) && std::isfinite(h.predicted.hi)) {
      Series interval;
      interval.name = h.run.name + ": predicted interval";
      interval.points = {{h.run.flops, h.predicted.lo}, {h.run.flops, h.predicted.hi}};
      interval.color = palette(3);
      loss_chart.series.push_back(interval);
    }
  }
  // Predicted against observed: on the diagonal when the law fits.
  LineChart parity;
  parity.title = "Predicted against observed loss";
  parity.x = {"observed loss", Scale::kLinear, std::nullopt, std::nullopt, nullptr};
  parity.y = {"predicted loss", Scale::kLinear, std::nullopt, std::nullopt, nullptr};
  double l_lo = INFINITY, l_hi = 0;
  std::vector<std::vector<std::string>> rows;
  for (const Run& r : a.used) {
    const double pred = law_loss(law, run_n(a, r), r.tokens, run_g(a, r));
    parity.markers.push_back({r.loss, pred, "", palette(1)});
    l_lo = std::min({l_lo, r.loss, pred}), l_hi = std::max({l_hi, r.loss, pred});
    rows.push_back({r.name, fmt::format("{:.3g}", run_n(a, r)), fmt::format("{:.3g}", r.tokens),
                    fmt::format("{:.3g}", r.flops), fmt::format("{:.4f}", r.loss), fmt::format("{:.4f}", pred),
                    fmt::format("{:+.2f}%", 100.0 * (pred - r.loss) / r.loss)});
  }
  Series diagonal;
  diagonal.name = "predicted = observed";
  diagonal.points = {{l_lo, l_lo}, {l_hi, l_hi}};
  diagonal.dashed = true;
  diagonal.color = "#999";
  parity.series.push_back(diagonal);
  page.begin_row();
  page.figure(render_svg(loss_chart), "Each dot is a run; the line is the fitted law at the compute-optimal split; "
                                      "the black point is the projection with its bootstrap interval.");
  page.figure(render_svg(parity), "Each dot is a run: the law's loss for its N and D against the measured loss.");
  page.end_row();
  page.heading(2, "Runs");
  page.table({"run", "N", "D (tokens)", "C (FLOP)", "loss", "fitted", "residual"}, rows);
  if (!a.held_out.empty()) {
    page.heading(2, "Held-out runs (not fitted, predicted)");
    std::vector<std::vector<std::string>> held;
    for (const HeldOutRun& h : a.held_out)
      held.push_back({h.run.name, fmt::format("{:.3g}", run_n(a, h.run)), fmt::format("{:.3g}", h.run.tokens),
                      fmt::format("{:.4f}", h.run.loss), fmt::format("{:.4f}", h.predicted.value),
                      fmt::format("[{:.4f}, {:.4f}]", h.predicted.lo, h.predicted.hi),
                      fmt::format("{:+.2f}%", 100.0 * h.error), h.inside ? "yes" : "no"});
    page.table({"run", "N", "D (tokens)", "observed", "predicted", "interval", "error", "inside"}, held);
  }
  for (const std::string& n : a.notes) page.note(n);
  return page.render();
}

}  // namespace mt::ladder
