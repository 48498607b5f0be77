// sweep_report.cpp — see sweep_report.h.
#include "sweep/runner/sweep_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/file_io.h"
#include "report/html.h"
#include "report/svg.h"

namespace mt {

using nlohmann::json;

Status write_sweep_report(const std::string& dir, const std::string& path) {
  using namespace report;
  auto front_text = read_file(dir + "/front.json", "sweep front");
  if (!front_text) return front_text.status();
  auto results_text = read_file(dir + "/results.jsonl", "sweep results");
  if (!results_text) return results_text.status();
  const json front = json::parse(front_text.value(), nullptr, false);
  if (front.is_discarded() || !front.contains("runs")) return Status::errorf("{}/front.json: not a sweep front", dir);
  std::vector<json> runs;
  std::istringstream in(results_text.value());
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) runs.push_back(json::parse(line));

  HtmlPage page("Sweep: " + dir);
  int64_t failed = 0;
  for (const json& r : runs) failed += r["failed"].get<bool>() ? 1 : 0;
  page.paragraph(fmt::format(
      "{} runs ({} failed or refused), {} on the front of held-out loss against training FLOPs. Each run's "
      "settings were chosen by CARBS (cost-aware Pareto-region Bayesian search) from the runs of the rounds "
      "before it.",
      runs.size(), failed, front["runs"].size()));

  // Loss against cost: every run, the front as a line.
  LineChart lc;
  lc.title = "Held-out loss against cost";
  lc.x = {"training FLOPs", Scale::kLog, std::nullopt, std::nullopt, nullptr};
  lc.y = {"held-out loss", Scale::kLinear, std::nullopt, std::nullopt, nullptr};
  Series fs{"front", {}, palette(1), false, true};
  for (const json& r : front["runs"]) fs.points.push_back({r["cost"].get<double>(), r["value"].get<double>()});
  for (const json& r : runs)
    if (!r["failed"].get<bool>())
      lc.markers.push_back({r["cost"].get<double>(), r["value"].get<double>(), "", palette(0)});
  lc.series.push_back(fs);
  // The loss the front's law predicts at each chosen cost (its 90% interval
  // as a vertical bar) and, where the config was trained, what it got.
  for (const json& a : front.value("at_costs", json::array())) {
    const json& iv = a.value("predicted_interval", json::array());
    if (iv.size() == 2 && iv[0].is_number() && iv[1].is_number())
      lc.series.push_back(
          {"",
           {{a["cost"].get<double>(), iv[0].get<double>()}, {a["cost"].get<double>(), iv[1].get<double>()}},
           palette(4),
           false,
           false});
    if (a.value("predicted_value", json()).is_number())
      lc.markers.push_back({a["cost"].get<double>(), a["predicted_value"].get<double>(), "predicted", palette(4)});
    if (a.value("observed", json()).is_number())
      lc.markers.push_back({a["config_cost"].get<double>(), a["observed"].get<double>(), "trained", palette(5)});
  }
  page.begin_row();
  page.figure(render_svg(lc),
              "Every run that finished (dots) and the front (line): no run is both cheaper and better "
              "than a front run.");

  // Leave-one-out: the GP's prediction of each run from the others.
  if (front.contains("loo") && !front["loo"].empty()) {
    LineChart parity;
    parity.title = "Predicted against observed loss";
    parity.x = {"observed held-out loss", Scale::kLinear, std::nullopt, std::nullopt, nullptr};
    parity.y = {"GP prediction from the other runs", Scale::kLinear, std::nullopt, std::nullopt, nullptr};
    double lo = INFINITY, hi = -INFINITY;
    for (const json& p : front["loo"]) {
      const double o = p["observed"].get<double>(), q = p["predicted"].get<double>();
      parity.markers.push_back({o, q, "", palette(2)});
      lo = std::min({lo, o, q});
      hi = std::max({hi, o, q});
    }
    parity.series.push_back({"y = x", {{lo, lo}, {hi, hi}}, "#999", true, false});
    page.figure(render_svg(parity),
                "The value surrogate's leave-one-out predictions: how well it knows the loss "
                "where it has not seen it.");
  }
  page.end_row();

  // Each numeric hyperparameter along the front, with its power law.
  page.heading(2, "How the best settings scale with cost");
  page.begin_row();
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, s] : front["scaling"].items()) {
    LineChart c;
    c.title = key + " on the front";
    c.x = {"training FLOPs", Scale::kLog, std::nullopt, std::nullopt, nullptr};
    c.y = {key, Scale::kLog, std::nullopt, std::nullopt, nullptr};
    Series pts{"front runs", {}, palette(3), false, true};
    double cmin = INFINITY, cmax = 0;
    for (const json& r : front["runs"]) {
      const json& res = r.value("resolved", json::object());
      const double v = res.contains(key) ? res[key].get<double>() : r["settings"][key].get<double>();
      pts.points.push_back({r["cost"].get<double>(), v});
      cmin = std::min(cmin, r["cost"].get<double>());
      cmax = std::max(cmax, r["cost"].get<double>());
    }
    c.series.push_back(pts);
    std::string law = "fewer than 3 front runs";
    if (s["exponent"].is_number()) {
      const double a = s["a"].get<double>(), b = s["exponent"].get<double>();
      Series fit{fmt::format("{:.3g} x cost^{:.3f}", a, b), {}, "#555", true, false};
      for (int i = 0; i <= 20; ++i) {
        const double x = cmin * std::pow(cmax / cmin, i / 20.0);
        fit.points.push_back({x, a * std::pow(x, b)});
      }
      c.series.push_back(fit);
      const json& iv = s.value("interval", json::array());
      const std::string interval =
          iv.size() == 2 && iv[0].is_number()
              ? fmt::format(", 90% interval [{:.3f}, {:.3f}]", iv[0].get<double>(), iv[1].get<double>())
              : "";
      law = fmt::format("{:.3g} x cost^{:.3f}{} (R^2 {})", a, b, interval,
                        s["r2"].is_number() ? fmt::format("{:.2f}", s["r2"].get<double>()) : "n/a");
    }
    page.figure(render_svg(c), key + ": " + law);
    rows.push_back({key, law, std::to_string(s["runs"].get<int64_t>())});
  }
  page.end_row();
  page.table({"hyperparameter", "power law along the front", "front runs"}, rows, {Align::kLeft, Align::kLeft});

  if (front.contains("at_costs") && !front["at_costs"].empty()) {
    page.heading(2, "Settings for chosen costs");
    std::vector<std::vector<std::string>> at;
    auto loss = [](const json& v) { return v.is_number() ? fmt::format("{:.4f}", v.get<double>()) : std::string("-"); };
    for (const json& a : front["at_costs"]) {
      const json& iv = a.value("predicted_interval", json::array());
      std::string predicted = loss(a.value("predicted_value", json()));
      if (iv.size() == 2 && iv[0].is_number()) predicted += " [" + loss(iv[0]) + ", " + loss(iv[1]) + "]";
      at.push_back({fmt::format("{:.3g}", a["cost"].get<double>()), a["file"].get<std::string>(),
                    a.value("extrapolated", false) ? "yes" : "no", predicted,
                    a.contains("reason") ? a["reason"].get<std::string>() : loss(a.value("observed", json())),
                    a["settings"].dump()});
    }
    page.table({"cost (FLOPs)", "run config", "beyond the front", "predicted loss [90%]", "trained", "settings"}, at,
               {Align::kRight, Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kLeft});
  }

  page.heading(2, "Every run");
  std::vector<std::vector<std::string>> all;
  for (const json& r : runs)
    all.push_back({r["name"].get<std::string>(), std::to_string(r["round"].get<int64_t>()),
                   fmt::format("{:.3g}", r.value("cost", 0.0)),
                   r["failed"].get<bool>() ? "-" : fmt::format("{:.4f}", r["value"].get<double>()),
                   r["settings"].dump(), r.value("reason", std::string())});
  page.table({"run", "round", "cost", "loss", "settings", "failure"}, all,
             {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kLeft, Align::kLeft});
  return write_file_atomic(path, page.render());
}

}  // namespace mt
