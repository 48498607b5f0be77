// mix_report.cpp — see mix_report.h.
#include "mix/runner/mix_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/html.h"
#include "report/svg.h"

namespace mt {
namespace {

// "0.5 x loss:a/0 + 0.5 x acc:arc" (searches written before named terms: per-bucket held-out losses).
std::string target_terms(const nlohmann::json& j) {
  if (!j.contains("target") || !j["target"].is_array()) return "weighted per-bucket held-out loss";
  std::string out;
  for (const auto& t : j["target"])
    out += fmt::format("{}{:.3g} x {}", out.empty() ? "" : " + ", t["weight"].get<double>(), t["name"].get<std::string>());
  return out + " (acc terms are 1 - accuracy)";
}

}  // namespace

std::string mix_search_html(const nlohmann::json& j) {
  using namespace report;
  using json = nlohmann::json;
  const json& cfg = j["config"];
  HtmlPage page("Mixture search: " + cfg.value("source", std::string()));
  page.paragraph(fmt::format(
      "{} proxies of {} tokens each, mixtures sampled around the natural token shares (Dirichlet, concentration {}) "
      "over {} domains ({}), each feasible for a hero run of {} tokens without repeating data. Regressors from the "
      "mixture weights to the target (the weighted sum of its terms: {}) are fitted on the first {} proxies and "
      "checked on the last {}; the {} regressor, refitted on all of them, chose the mixture.",
      cfg["proxies"].get<int64_t>(), j["proxy_tokens"].get<int64_t>(), cfg["concentration"].get<double>(),
      j["domains"].size(), cfg["domains"].get<std::string>(), j["hero_tokens"].get<int64_t>(),
      target_terms(j), cfg["proxies"].get<int64_t>() - cfg["holdout"].get<int64_t>(), cfg["holdout"].get<int64_t>(),
      cfg["regressor"].get<std::string>()));
  const json& reg = j["regressors"];
  auto num = [](const json& v, const char* f) { return v.is_number() ? fmt::format(fmt::runtime(f), v.get<double>()) : std::string("n/a"); };
  std::vector<std::pair<std::string, std::string>> kv;
  for (const char* k : {"loglinear", "xgboost"})
    if (reg.contains(k))
      kv.push_back({std::string(k) + " held-out Spearman",
                    reg[k].contains("error") ? reg[k]["error"].get<std::string>()
                                             : num(reg[k].value("spearman", json()), "{:.3f}") + " (mean |error| " +
                                                   num(reg[k].value("mean_abs_error", json()), "{:.4f}") + ")"});
  kv.push_back({"chosen mixture, predicted", fmt::format("{:.5f} ({})", j["best"]["predicted"].get<double>(),
                                                          j["best"]["method"].get<std::string>())});
  kv.push_back({"natural shares, predicted", fmt::format("{:.5f}", j["natural_predicted"].get<double>())});
  if (j.contains("noise") && j["noise"]["sd"].is_number())
    kv.push_back(
        {"seed noise (one run's standard deviation)",
         fmt::format("{:.4f} ({} proxies trained twice)", j["noise"]["sd"].get<double>(), j["noise"]["pairs"].size())});
  if (j.contains("gain"))
    kv.push_back({"predicted gain over natural",
                  fmt::format("{:.4f}, 90% interval [{:.4f}, {:.4f}] over {} bootstrap refits",
                              j["gain"]["predicted"].get<double>(), j["gain"]["lo"].get<double>(),
                              j["gain"]["hi"].get<double>(), j["gain"]["resamples"].get<int64_t>())});
  if (j.contains("choice"))
    kv.push_back({"best-mixture.toml", j["choice"]["kept"] == "best"
                                           ? std::string("the regressor's mixture")
                                           : std::string("the natural shares (gain within noise)")});
  if (j.contains("verify")) {
    kv.push_back({"chosen mixture, trained", num(j["verify"]["best"]["actual"], "{:.5f}")});
    kv.push_back({"natural shares, trained", num(j["verify"]["natural"]["actual"], "{:.5f}")});
    if (const json& d = j["verify"].value("difference", json()); d.is_object() && d["mean"].is_number())
      kv.push_back({"trained difference, chosen - natural",
                    d["std_error"].is_number()
                        ? fmt::format("{:+.5f} ± {:.5f} ({} seeds each)", d["mean"].get<double>(),
                                      d["std_error"].get<double>(), d["seeds"].get<int64_t>())
                        : fmt::format("{:+.5f} (one seed each)", d["mean"].get<double>())});
  }
  const json transfer = j.value("transfer", json());
  if (transfer.is_object())
    kv.push_back({fmt::format("scale transfer (x{} the tokens)", transfer["scale"].get<int64_t>()),
                  fmt::format("Spearman {} over {} proxies; there the chosen mixture {}, natural {}",
                              num(transfer["spearman"], "{:.3f}"), transfer["proxies"].get<int64_t>(),
                              num(transfer["best"], "{:.5f}"), num(transfer["natural"], "{:.5f}"))});
  page.key_values(kv);

  // Predicted against actual: held-out proxies per regressor, and the verification runs.
  LineChart parity;
  parity.title = "Predicted against actual target";
  parity.x = {"actual target", Scale::kLinear, std::nullopt, std::nullopt, nullptr};
  parity.y = {"predicted target", Scale::kLinear, std::nullopt, std::nullopt, nullptr};
  double lo = INFINITY, hi = -INFINITY;
  const std::vector<double> actual = reg["actual"].get<std::vector<double>>();
  size_t colour = 0;
  for (const char* k : {"loglinear", "xgboost"}) {
    ++colour;
    if (!reg.contains(k) || !reg[k].contains("predicted")) continue;
    const std::vector<double> pred = reg[k]["predicted"].get<std::vector<double>>();
    for (size_t i = 0; i < pred.size() && i < actual.size(); ++i) {
      parity.markers.push_back({actual[i], pred[i], "", palette(colour)});
      lo = std::min({lo, actual[i], pred[i]});
      hi = std::max({hi, actual[i], pred[i]});
    }
  }
  if (j.contains("verify"))
    for (const char* k : {"natural", "best"}) {
      const json& v = j["verify"][k];
      if (!v["actual"].is_number()) continue;
      const double a = v["actual"].get<double>(), p = v["predicted"].get<double>();
      parity.markers.push_back({a, p, std::string(k == std::string("best") ? "chosen" : "natural"), "#000"});
      lo = std::min({lo, a, p});
      hi = std::max({hi, a, p});
    }
  if (std::isfinite(lo)) {
    Series diagonal;
    diagonal.name = "predicted = actual";
    diagonal.points = {{lo, lo}, {hi, hi}};
    diagonal.dashed = true;
    diagonal.color = "#999";
    parity.series.push_back(diagonal);
  }
  // Chosen weights against natural shares, per domain (largest first).
  const json& doms = j["domains"];
  std::vector<size_t> order(doms.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return doms[a]["best"].get<double>() > doms[b]["best"].get<double>(); });
  HBars bars;
  bars.title = "Chosen weight per domain";
  bars.x_label = "weight";
  std::vector<std::vector<std::string>> rows;
  for (size_t r = 0; r < order.size(); ++r) {
    const json& d = doms[order[r]];
    const double w = d["best"].get<double>(), c = d["center"].get<double>(), cap = d["cap"].get<double>();
    if (r < 40) {
      bars.labels.push_back(d["name"].get<std::string>());
      bars.values.push_back(w);
      bars.notes.push_back(fmt::format("natural {:.3f}{}", c, w >= cap * (1 - 1e-9) ? ", at its cap" : ""));
    }
    rows.push_back({d["name"].get<std::string>(), fmt::format("{:.4f}", c), fmt::format("{:.4f}", w),
                    fmt::format("{:.4f}", cap), fmt::format("{:+.1f}%", c > 0 ? 100.0 * (w / c - 1) : 0.0)});
  }
  bars.format = [](double v) { return fmt::format("{:.3f}", v); };
  page.begin_row();
  page.figure(render_svg(parity),
              "Coloured dots: held-out proxies (first colour log-linear, second XGBoost); black: the natural and the "
              "chosen mixture, trained. On the diagonal when the regressor predicts well; what matters for the "
              "choice is the ranking.");
  page.figure(render_svg(bars), "The chosen mixture (largest 40 domains), with the natural share of each.");
  page.end_row();
  if (transfer.is_object()) {
    // The same mixtures at both scales: a ranking that holds lies along a rising line.
    LineChart scales;
    scales.title = fmt::format("Target at the proxy scale and at x{} the tokens", transfer["scale"].get<int64_t>());
    scales.x = {"target, proxy scale", Scale::kLinear, std::nullopt, std::nullopt, nullptr};
    scales.y = {fmt::format("target, x{}", transfer["scale"].get<int64_t>()), Scale::kLinear, std::nullopt,
                std::nullopt, nullptr};
    for (const json& pair : transfer["targets"])
      scales.markers.push_back({pair[0].get<double>(), pair[1].get<double>(), "", palette(1)});
    if (j.contains("verify"))
      for (const char* k : {"natural", "best"})
        if (j["verify"][k]["actual"].is_number() && transfer[k].is_number())
          scales.markers.push_back({j["verify"][k]["actual"].get<double>(), transfer[k].get<double>(),
                                    std::string(k == std::string("best") ? "chosen" : "natural"), "#000"});
    page.begin_row();
    page.figure(render_svg(scales),
                fmt::format("Each proxy trained at both scales (the same hero-scale schedule read x{} further); "
                            "black: the natural and the chosen mixture (proxy scale: their mean over the verify "
                            "seeds). Spearman {} between the scales.",
                            transfer["scale"].get<int64_t>(), num(transfer["spearman"], "{:.3f}")));
    page.end_row();
  }
  page.heading(2, "Domains");
  page.table({"domain", "natural", "chosen", "cap", "change"}, rows);
  page.heading(2, "Proxies");
  std::vector<std::vector<std::string>> prows;
  for (const json& p : j["proxies"])
    prows.push_back({p["name"].get<std::string>(), fmt::format("{:.5f}", p["target"].get<double>()),
                     fmt::format("{:.2f}", p["ledger_max_deviation"].get<double>()), p.value("state_hash", "")});
  page.table({"proxy", "target", "ledger deviation (sequences)", "state hash"}, prows);
  page.note("Every proxy's mixture is planned at the hero budget before training (no bucket past max_epochs), and "
            "its per-bucket token ledger is checked against that plan to within one sequence.");
  return page.render();
}

}  // namespace mt
