// arch_report.cpp — see arch_report.h.
#include "arch/arch_report.h"

#include <fmt/format.h>

#include <cmath>

#include "report/html.h"
#include "report/svg.h"

namespace mt {
namespace {

using json = nlohmann::json;

double num(const json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : NAN;
}

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", 100 * v) : "-"; }
std::string fixed(double v, int digits) { return std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : "-"; }
std::string loss_cell(const json& l) {
  if (!l.is_object()) return "-";
  return fmt::format("{} [{}, {}]", fixed(num(l, "value"), 3), fixed(num(l, "lo"), 3), fixed(num(l, "hi"), 3));
}
std::string mib(double b) { return std::isfinite(b) ? fmt::format("{:.1f} MiB", b / double(1 << 20)) : "-"; }

// The columns both outputs show, one row per candidate in rank order.
std::vector<std::string> header() {
  return {
      "rank",        "candidate",      "bench tok/s",     "bench MFU",         "MFU vs GEMM",    "hero MFU (plan)",
      "hero step s", "a2a share np=2", "EP share (plan)", "largest rung loss", "loss @ compute", "loss @ wall-clock",
      "KV B/token",  "KV+state / seq", "decode tok/s"};
}

std::vector<std::vector<std::string>> rows(const json& cmp) {
  std::vector<std::vector<std::string>> out;
  for (const json& name : cmp["ranking"]) {
    for (const json& c : cmp["candidates"]) {
      if (c["name"] != name) continue;
      const json &b = c["bench"], &e = c["ep_bench"], &p = c["plan"], &inf = c["inference"];
      const std::string a2a = e.contains("skipped") ? "skipped" : pct(num(e, "comm_share"));
      out.push_back(
          {std::to_string(c["rank"].get<int64_t>()), c["label"].get<std::string>(), fixed(num(b, "tokens_per_s"), 0),
           pct(num(b, "mfu")), pct(num(b, "mfu_vs_gemm_best")), pct(num(p, "mfu")), fixed(num(p, "step_time_s"), 2),
           a2a, fmt::format("{} ({} exposed)", pct(num(p, "ep_comm_share")), pct(num(p, "ep_exposed_share"))),
           fixed(num(c["ladder"]["largest"], "loss"), 3), loss_cell(c["projection"]["equal_compute"]["loss"]),
           loss_cell(c["projection"]["equal_wallclock"]["loss"]), fixed(num(inf, "kv_cache_bytes_per_token"), 0),
           mib(num(inf, "kv_cache_bytes_per_sequence") + num(inf, "state_bytes_per_sequence")),
           fixed(num(inf["decode"], "decode_tokens_per_s"), 1)});
    }
  }
  return out;
}

}  // namespace

std::string compare_table(const json& cmp) {
  const std::vector<std::string> h = header();
  const auto r = rows(cmp);
  std::vector<size_t> w(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    w[i] = h[i].size();
    for (const auto& row : r) w[i] = std::max(w[i], row[i].size());
  }
  std::string out =
      fmt::format("ranked by {}: {}\n", cmp["rank_by"].get<std::string>(), cmp["rule"].get<std::string>());
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i)
      out += i == 1 ? fmt::format("{:<{}}  ", cells[i], w[i]) : fmt::format("{:>{}}  ", cells[i], w[i]);
    out.back() = '\n';
  };
  line(h);
  for (const auto& row : r) line(row);
  for (const json& v : cmp["verdict"]) out += "- " + v.get<std::string>() + "\n";
  return out;
}

std::string compare_html(const json& cmp) {
  report::HtmlPage page("moetrain arch compare");
  page.heading(1, "Architecture comparison");
  page.paragraph("Ranking rule (" + cmp["rank_by"].get<std::string>() + "): " + cmp["rule"].get<std::string>() + ".");
  const json& hero = cmp["hero"];
  page.key_values({{"spec", cmp["spec"].get<std::string>()},
                   {"hero model", hero["model"].get<std::string>()},
                   {"target cluster", hero["cluster"].get<std::string>()},
                   {"hero layout", hero["layout"].get<std::string>()},
                   {"hero compute", fmt::format("{:.3g} model FLOPs", hero["flops"].get<double>())},
                   {"equal wall-clock", fmt::format("{:.1f} days", num(hero, "wallclock_days"))}});
  page.heading(2, "Verdict", "verdict");
  std::string list = "<ul class=\"verdict\">";
  for (const json& v : cmp["verdict"]) list += "<li>" + report::html_escape(v.get<std::string>()) + "</li>";
  page.raw(list + "</ul>");
  page.heading(2, "The four factors side by side", "factors");
  page.table(header(), rows(cmp), {report::Align::kRight, report::Align::kLeft}, 0);
  page.note(
      "bench: `moetrain bench` on this machine (MFU against the measured peak; vs GEMM: against the best 2048^3 "
      "GEMM). hero: the planner at the target cluster and layout. a2a share: comm_wait of `mpirun -np 2 moetrain "
      "bench --set dist.ep=2`; EP share: the planner's all-to-all time over the step (exposed: not hidden). largest "
      "rung loss: the held-out "
      "loss measured at the ladder's largest budget (equal compute). loss @: "
      "the ladder's L(N, D) at the hero model's N and the tokens of equal compute or equal wall-clock, with the "
      "bootstrap interval. KV and state at the hero model and the inference context; decode tok/s: `moetrain "
      "generate` on the largest rung.");

  page.heading(2, "Projected loss curves", "curves");
  report::LineChart ch;
  ch.title = "L(N, D) along compute at the hero's tokens per parameter";
  ch.x = {"compute 6 N D (FLOPs)", report::Scale::kLog, {}, {}, {}};
  // The y range from the runs and the fitted curves: a bootstrap refit far from the data (a band
  // spanning decades at the smallest compute) is clipped to it rather than flattening the rest.
  double y_lo = INFINITY, y_hi = 0;
  for (const json& c : cmp["candidates"]) {
    for (const json& r : c["ladder"]["runs"])
      y_hi = std::max(y_hi, num(r, "loss")), y_lo = std::min(y_lo, num(r, "loss"));
    for (const json& p : c["projection"]["curve"])
      if (num(p, "value") > 0) y_lo = std::min(y_lo, num(p, "value"));
  }
  y_hi *= 1.3;
  y_lo = std::max(y_lo / 1.5, y_hi * 1e-4);
  ch.y = {"loss (clipped to the runs and fits)", report::Scale::kLog, y_lo, y_hi, {}};
  auto clip = [&](double v) { return std::min(std::max(v, y_lo), y_hi); };
  size_t k = 0;
  for (const json& c : cmp["candidates"]) {
    const std::string color = report::palette(k++);
    report::Series mid{c["label"].get<std::string>(), {}, color, false, false};
    report::Series lo{c["label"].get<std::string>() + " (interval)", {}, color, true, false};
    report::Series hi{"", {}, color, true, false};
    for (const json& p : c["projection"]["curve"]) {
      const double x = num(p, "compute");
      if (std::isfinite(num(p, "value"))) mid.points.emplace_back(x, clip(num(p, "value")));
      if (std::isfinite(num(p, "lo"))) lo.points.emplace_back(x, clip(num(p, "lo")));
      if (std::isfinite(num(p, "hi"))) hi.points.emplace_back(x, clip(num(p, "hi")));
    }
    for (const json& r : c["ladder"]["runs"])
      ch.markers.push_back({6.0 * num(r, "active_params") * num(r, "tokens"), num(r, "loss"), "", color});
    for (report::Series* s : {&mid, &lo, &hi})
      if (!s->points.empty()) ch.series.push_back(*s);
  }
  if (!ch.series.empty())
    page.figure(report::render_svg(ch),
                "Each candidate's fitted law (solid) with its bootstrap interval (dashed), from its ladder runs "
                "(dots) to the hero compute.");
  else
    page.note("No candidate's ladder could be fitted: no curves.");

  page.heading(2, "Ladder fits", "fits");
  std::vector<std::vector<std::string>> fits;
  for (const json& c : cmp["candidates"]) {
    const json& l = c["ladder"];
    if (l.contains("law"))
      fits.push_back({c["label"].get<std::string>(), std::to_string(l["runs"].size()), fixed(num(l["law"], "E"), 3),
                      fmt::format("{:.3g}", num(l["law"], "A")), fmt::format("{:.3g}", num(l["law"], "B")),
                      fixed(num(l["law"], "alpha"), 3), fixed(num(l["law"], "beta"), 3)});
    else
      fits.push_back({c["label"].get<std::string>(), std::to_string(l["runs"].size()),
                      l.value("error", std::string("not fitted")), "", "", "", ""});
  }
  page.table({"candidate", "runs", "E", "A", "B", "alpha", "beta"}, fits);
  return page.render();
}

}  // namespace mt
