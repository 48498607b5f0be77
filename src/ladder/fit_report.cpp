// fit_report.cpp — see fit_report.h. NaN (no bootstrap, or no answer) is
// written as JSON null and as "-" in text.
#include "ladder/fit_report.h"

#include <fmt/format.h>

#include <cmath>

#include "core/minimize.h"

namespace mt::ladder {
namespace {

using nlohmann::json;

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json spread_json(const Estimate& e) {
  return {{"se", num(e.se)}, {"lo", num(e.lo)}, {"hi", num(e.hi)}, {"resamples", e.resamples}};
}

json estimate_json(const Estimate& e) {
  json j = spread_json(e);
  j["value"] = num(e.value);
  return j;
}

json projected_json(const ProjectedRun& p) {
  json j = {{"N", estimate_json(p.N)},
            {"D", estimate_json(p.D)},
            {"tokens_per_param", estimate_json(p.tokens_per_param)},
            {"loss", estimate_json(p.loss)}};
  json acc = json::object();
  for (const auto& [task, e] : p.accuracy) acc[task] = estimate_json(e);
  j["accuracy"] = acc;
  return j;
}

bool sparse(const Analysis& a) { return a.options.sparsity != Sparsity::kNone; }

std::string law_form(const Analysis& a) {
  const char* g = a.options.sparsity == Sparsity::kExperts ? "n_experts" : "(N_total/N_active)";
  if (sparse(a)) return fmt::format("L = E + A / (N_active^alpha * G^gamma) + B / D^beta, G = {}", g);
  return fmt::format("L = E + A / N^alpha + B / D^beta, N = {} parameters", param_count_name(a.options.param_count));
}

// "1.234e+09" style for counts, fixed for exponents.
std::string g4(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "-"; }

// "[lo, hi]", or "" when there is no spread (no bootstrap, or a fixed input).
std::string interval(const Estimate& e) {
  if (!std::isfinite(e.lo) || !(e.hi > e.lo)) return "";
  return fmt::format("[{}, {}]", g4(e.lo), g4(e.hi));
}

std::string with_interval(const Estimate& e) {
  const std::string i = interval(e);
  return i.empty() ? g4(e.value) : g4(e.value) + " " + i;
}

std::string estimate_line(const char* name, const Estimate& e) {
  const std::string i = interval(e);
  return fmt::format("  {:<6} {:>11.5g} {:>10}{}\n", name, e.value, g4(e.se), i.empty() ? "" : "  " + i);
}

// "  SE x  [lo, hi]", or "" without a bootstrap.
std::string se_and_interval(const Estimate& e) {
  if (!std::isfinite(e.se)) return "";
  return fmt::format("  SE {}  {}", g4(e.se), interval(e));
}

std::string projected_text(const ProjectedRun& p) {
  std::string s;
  s += fmt::format("    N = {}, D = {}, D/N = {}\n", with_interval(p.N), with_interval(p.D),
                   with_interval(p.tokens_per_param));
  s += fmt::format("    loss = {:.4f}{}\n", p.loss.value, se_and_interval(p.loss));
  for (const auto& [task, e] : p.accuracy)
    s += fmt::format("    accuracy {} = {:.4f}{}\n", task, e.value, se_and_interval(e));
  return s;
}

}  // namespace

json to_json(const Analysis& a) {
  const Law& law = a.fit.law;
  const LadderOptions& o = a.options;
  json j;
  j["format"] = "moetrain-ladder-fit";
  j["version"] = kFitFileVersion;
  j["law"] = {{"form", law_form(a)},
              {"n", param_count_name(o.param_count)},
              {"sparsity", sparsity_name(o.sparsity)},
              {"E", law.E},
              {"A", law.A},
              {"B", law.B},
              {"alpha", law.alpha},
              {"beta", law.beta}};
  if (sparse(a)) j["law"]["gamma"] = law.gamma;

  json fit = {{"method",
               "Huber loss on log L, log-sum-exp parameterisation, L-BFGS from a grid of starts "
               "(Besiroglu et al. 2024; Hoffmann et al. 2022 approach 3)"},
              {"huber_delta", o.fit.huber_delta},
              {"runs_read", a.runs_read},
              {"runs_fitted", int64_t(a.used.size())},
              {"objective", a.fit.objective},
              {"starts", a.fit.starts},
              {"converged_starts", a.fit.converged_starts},
              {"optimizer_end", lbfgs_code_text(a.fit.code)}};
  json dropped = json::array();
  for (const Run& r : a.dropped) dropped.push_back({{"name", r.name}, {"where", r.where}, {"loss", r.loss}});
  fit["dropped"] = dropped;
  j["fit"] = fit;

  if (o.bootstrap.resamples > 0) {
    json u = {{"method", "bootstrap (runs resampled with replacement, law refitted)"},
              {"resamples", o.bootstrap.resamples},
              {"seed", o.bootstrap.seed},
              {"level", o.bootstrap.level},
              {"E", spread_json(a.estimates.E)},
              {"A", spread_json(a.estimates.A)},
              {"B", spread_json(a.estimates.B)},
              {"alpha", spread_json(a.estimates.alpha)},
              {"beta", spread_json(a.estimates.beta)}};
    if (sparse(a)) u["gamma"] = spread_json(a.estimates.gamma);
    j["uncertainty"] = u;
  } else {
    j["uncertainty"] = nullptr;
  }

  const IsoflopFit& iso = a.isoflop;
  json budgets = json::array();
  for (const BudgetCurve& b : iso.budgets) {
    json bj = {{"label", b.label}, {"flops", b.flops}, {"runs", b.runs}, {"used", b.used}};
    if (b.used) {
      bj["n_opt"] = b.n_opt;
      bj["d_opt"] = b.d_opt;
      bj["loss_opt"] = b.loss_at_n_opt;
    } else {
      bj["why_not"] = b.why_not;
    }
    budgets.push_back(bj);
  }
  json isoj = {{"fitted", iso.fitted}, {"budgets_used", iso.budgets_used}, {"budgets", budgets}};
  if (iso.fitted) {
    auto pl = [](const PowerLaw& p) {
      return json{{"k", p.k}, {"exponent", p.exponent}, {"exponent_se", num(p.exponent_se)}};
    };
    isoj["n_opt"] = pl(iso.n_opt);
    isoj["d_opt"] = pl(iso.d_opt);
  } else {
    isoj["why_not"] = iso.why_not;
  }
  j["isoflop"] = isoj;

  json down = json::array();
  for (const DownstreamFit& f : a.downstream)
    down.push_back({{"task", f.task},
                    {"form", "acc = floor + (1 - floor) / (1 + exp(k (L - L0)))"},
                    {"floor", f.sigmoid.floor},
                    {"L0", f.sigmoid.L0},
                    {"k", f.sigmoid.k},
                    {"runs", f.runs},
                    {"rmse", f.rmse}});
  j["downstream"] = down;

  const Projection& p = a.projection;
  const Target& t = o.target;
  if (p.at_size || p.compute_optimal) {
    json pj = {{"target",
                {{"params", num(t.params)},
                 {"tokens", num(t.tokens)},
                 {"flops", num(t.flops)},
                 {"tokens_per_param", num(t.tokens_per_param)}}}};
    if (sparse(a)) pj["target"]["sparsity"] = t.sparsity;
    if (p.at_size) pj["at_size"] = projected_json(*p.at_size);
    if (p.compute_optimal) pj["compute_optimal"] = projected_json(*p.compute_optimal);
    if (p.at_ratio) pj["at_tokens_per_param"] = projected_json(*p.at_ratio);
    if (p.isoflop_N) pj["isoflop"] = {{"N", *p.isoflop_N}, {"D", *p.isoflop_D}};
    j["projection"] = pj;
  } else {
    j["projection"] = nullptr;
  }
  j["held_out"] = nlohmann::json::array();
  for (const HeldOutRun& h : a.held_out)
    j["held_out"].push_back({{"name", h.run.name},
                             {"N", h.run.active_params},
                             {"D", h.run.tokens},
                             {"observed", h.run.loss},
                             {"predicted", h.predicted.value},
                             {"lo", std::isfinite(h.predicted.lo) ? nlohmann::json(h.predicted.lo) : nlohmann::json()},
                             {"hi", std::isfinite(h.predicted.hi) ? nlohmann::json(h.predicted.hi) : nlohmann::json()},
                             {"error", h.error},
                             {"inside_interval", h.inside}});
  j["notes"] = a.notes;
  return j;
}

std::string to_text(const Analysis& a, const std::string& source) {
  const LadderOptions& o = a.options;
  const double level = o.bootstrap.level;
  std::string s;
  s += fmt::format("{}: {} runs read, {} fitted", source, a.runs_read, a.used.size());
  if (!a.dropped.empty()) s += fmt::format(" ({} highest-loss dropped)", a.dropped.size());
  s += "\n";
  s += fmt::format("{}\n", law_form(a));
  s += fmt::format("Huber delta {:g} on log L, L-BFGS from {} starts ({} converged; best: {}), objective {:.6g}\n",
                   o.fit.huber_delta, a.fit.starts, a.fit.converged_starts, lbfgs_code_text(a.fit.code),
                   a.fit.objective);
  if (o.bootstrap.resamples > 0)
    s += fmt::format("  {:<6} {:>11} {:>10}  {:.0f}% interval (bootstrap, {} resamples, seed {})\n", "", "value", "SE",
                     100 * level, o.bootstrap.resamples, o.bootstrap.seed);
  else
    s += fmt::format("  {:<6} {:>11} {:>10}  (no bootstrap: --bootstrap B for errors)\n", "", "value", "SE");
  s += estimate_line("E", a.estimates.E);
  s += estimate_line("A", a.estimates.A);
  s += estimate_line("B", a.estimates.B);
  s += estimate_line("alpha", a.estimates.alpha);
  s += estimate_line("beta", a.estimates.beta);
  if (sparse(a)) s += estimate_line("gamma", a.estimates.gamma);

  const IsoflopFit& iso = a.isoflop;
  if (iso.fitted) {
    s += fmt::format("isoFLOP (approach 2, {} budgets): N* ~ C^{:.4f} (SE {}), D* ~ C^{:.4f} (SE {})\n",
                     iso.budgets_used, iso.n_opt.exponent, g4(iso.n_opt.exponent_se), iso.d_opt.exponent,
                     g4(iso.d_opt.exponent_se));
    for (const BudgetCurve& b : iso.budgets)
      s += b.used ? fmt::format("    {:<16} {} runs  N* = {}  D* = {}  L* = {:.4f}\n", b.label, b.runs, g4(b.n_opt),
                                g4(b.d_opt), b.loss_at_n_opt)
                  : fmt::format("    {:<16} {} runs  not used: {}\n", b.label, b.runs, b.why_not);
  } else {
    s += fmt::format("isoFLOP (approach 2): not fitted: {}\n", iso.why_not);
  }
  for (const DownstreamFit& f : a.downstream)
    s += fmt::format("accuracy {}: {:g} + (1 - {:g}) / (1 + exp({:.4g} (L - {:.4f}))), {} runs, rmse {:.4f}\n", f.task,
                     f.sigmoid.floor, f.sigmoid.floor, f.sigmoid.k, f.sigmoid.L0, f.runs, f.rmse);

  const Projection& p = a.projection;
  const Target& t = o.target;
  const std::string g = sparse(a) ? fmt::format(", G = {:g}", t.sparsity) : "";
  if (p.at_size)
    s += fmt::format("projection at N = {}, D = {}{}:\n{}", g4(t.params), g4(t.tokens), g, projected_text(*p.at_size));
  if (p.compute_optimal)
    s += fmt::format("projection at C = {} FLOP{}, compute-optimal:\n{}", g4(t.flops), g,
                     projected_text(*p.compute_optimal));
  if (p.at_ratio)
    s += fmt::format("projection at C = {} FLOP{}, {:g} tokens per parameter:\n{}", g4(t.flops), g, t.tokens_per_param,
                     projected_text(*p.at_ratio));
  if (p.isoflop_N)
    s += fmt::format("  approach 2 at C = {}: N* = {}, D* = {}, D/N = {}\n", g4(t.flops), g4(*p.isoflop_N),
                     g4(*p.isoflop_D), g4(*p.isoflop_D / *p.isoflop_N));
  for (const HeldOutRun& h : a.held_out)
    s += fmt::format("held out {}: observed {:.4f}, predicted {:.4f} [{:.4f}, {:.4f}], error {:+.2f}%{}\n", h.run.name,
                     h.run.loss, h.predicted.value, h.predicted.lo, h.predicted.hi, 100.0 * h.error,
                     h.inside ? "" : " (outside the interval)");
  for (const std::string& n : a.notes) s += fmt::format("note: {}\n", n);
  return s;
}

}  // namespace mt::ladder
