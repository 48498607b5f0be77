// run_report.cpp — parses metrics lines (nlohmann::json) and lays out charts.
#include "report/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "report/html.h"
#include "rundir/events_log.h"
#include "rundir/metrics_log.h"
#include "report/svg.h"

namespace mt::report {
namespace {

using Points = std::vector<std::pair<double, double>>;

Points ema(const Points& p, double alpha) {
  Points out;
  double acc = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    acc = i == 0 ? p[i].second : alpha * p[i].second + (1.0 - alpha) * acc;
    out.push_back({p[i].first, acc});
  }
  return out;
}

// A run in phases: each phase's steps and tokens, and its loss at the end.
struct PhaseRow {
  std::string name;
  int64_t first = 0, last = 0, tokens = 0;
  std::vector<double> losses;
};

// Where each phase begins, drawn on every chart of a phased run.
std::vector<VLine> phase_lines(const std::vector<PhaseRow>& phases) {
  std::vector<VLine> out;
  for (size_t i = 1; i < phases.size(); ++i) out.push_back({double(phases[i].first) - 0.5, phases[i].name, "#8e44ad"});
  return out;
}

std::string chart(const std::string& title, const std::string& ylabel, std::vector<Series> series,
                  Scale yscale = Scale::kLinear, const std::vector<VLine>& vlines = {}) {
  LineChart c;
  c.vlines = vlines;
  c.title = title;
  c.x.label = "step";
  c.y.label = ylabel;
  c.y.scale = yscale;
  c.series = std::move(series);
  return render_svg(c);
}

}  // namespace

// RUN_DIR/events.jsonl (spikes, rollbacks, launches, failures, hosts) as a
// timeline: wall-clock minutes since the first event against the step, one
// marker per event, and the table of them. Checkpoint commits are only
// counted: a run logs one every few steps.
void add_events_timeline(HtmlPage& page, const std::string& run_dir) {
  const std::string path = events_path(run_dir);
  std::vector<nlohmann::json> ev;
  int64_t commits = 0, last_commit = 0;
  for (nlohmann::json& j : read_events(run_dir)) {
    if (j["event"] == "checkpoint") {
      ++commits;
      last_commit = j.value("step", int64_t(0));
      continue;
    }
    ev.push_back(std::move(j));
  }
  if (ev.empty()) return;
  const double t0 = ev.front()["time"].get<double>();
  LineChart c;
  c.title = "Events";
  c.x = {"minutes since the first event", Scale::kLinear, 0.0, std::nullopt, nullptr};
  c.y = {"step", Scale::kLinear, 0.0, std::nullopt, nullptr};
  std::vector<std::vector<std::string>> rows;
  int64_t step = 0;
  for (const auto& e : ev) {
    const std::string kind = e["event"].get<std::string>();
    for (const char* k : {"step", "from_step", "to_step", "spike_step"})
      if (e.contains(k) && e[k].is_number_integer()) {
        step = e[k].get<int64_t>();
        break;
      }
    const double m = (e["time"].get<double>() - t0) / 60.0;
    const bool bad = kind == "failure" || kind == "spike" || kind == "rollback" || kind == "host quarantined";
    c.markers.push_back({m, double(step), kind, bad ? "#c0392b" : "#2c7fb8"});
    std::string what;
    for (auto it = e.begin(); it != e.end(); ++it)
      if (it.key() != "event" && it.key() != "time" && it.key() != "utc" && it.key() != "hosts")
        what += (what.empty() ? "" : ", ") + it.key() + " " +
                (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
    rows.push_back({e.value("utc", ""), fmt::format("{:.2f}", m), kind, what});
  }
  page.heading(2, "Events");
  page.figure(render_svg(c), "Every event of " + path + ": red for failures, spikes, rollbacks and quarantines" +
                                 (commits ? fmt::format("; besides them, {} checkpoint commits, the last at step {}.",
                                                        commits, last_commit)
                                          : std::string(".")));
  page.table({"time (UTC)", "minute", "event", "details"}, rows,
             {Align::kLeft, Align::kRight, Align::kLeft, Align::kLeft});
}

Status write_run_report(const std::string& run_dir, const std::string& out_path, const std::string& title) {
  auto rows = load_metrics(run_dir);
  if (!rows) return rows.status();
  const std::string metrics = metrics_path(run_dir);
  Points loss, eval_loss, lr, gnorm, tps, mfu, aux, z, dropped;
  std::map<std::string, Points> bucket_eval;
  std::map<std::string, int64_t> bucket_dropped;  // since the start: the last line's bucket_dropped_total
  std::vector<Points> load_spread;                // per MoE layer: max/mean expert load over steps
  nlohmann::json last;
  std::vector<PhaseRow> phases;
  // Reinforcement learning and distillation (metrics' "rl" object, train/rl_feed.h).
  Points reward, pass1, pass_k, sample_acc, rl_kl, entropy, resp_len, clip, well_formed, tool_use;
  int64_t eval_k = 0;
  for (nlohmann::json& j : rows.value()) {
    const double s = j["step"].get<double>();
    if (j.contains("phase") && j["phase"].is_string()) {
      const std::string name = j["phase"].get<std::string>();
      if (phases.empty() || phases.back().name != name) phases.push_back({name, int64_t(s), int64_t(s), 0, {}});
      phases.back().last = int64_t(s);
      phases.back().tokens += j.value("tokens", int64_t(0));
      if (j.contains("loss") && j["loss"].is_number()) phases.back().losses.push_back(j["loss"].get<double>());
    }
    auto take = [&](const char* key, Points& p) {
      if (j.contains(key) && j[key].is_number()) p.push_back({s, j[key].get<double>()});
    };
    take("loss", loss);
    take("eval_loss", eval_loss);
    take("lr", lr);
    take("grad_norm", gnorm);
    take("tokens_per_s", tps);
    take("aux_loss", aux);
    take("z_loss", z);
    take("dropped_frac", dropped);
    if (j.contains("rl") && j["rl"].is_object()) {
      const nlohmann::json& r = j["rl"];
      auto rl_take = [&](const nlohmann::json& o, const char* key, Points& p, double scale = 1.0) {
        if (o.contains(key) && o[key].is_number()) p.push_back({s, scale * o[key].get<double>()});
      };
      rl_take(r, "reward", reward);
      rl_take(r, "kl", rl_kl);
      rl_take(r, "entropy", entropy);
      rl_take(r, "response_len", resp_len);
      rl_take(r, "clip_frac", clip, 100.0);
      rl_take(r, "well_formed", well_formed, 100.0);
      rl_take(r, "tool_use", tool_use, 100.0);
      if (r.contains("eval") && r["eval"].is_object()) {
        rl_take(r["eval"], "pass1", pass1, 100.0);
        rl_take(r["eval"], "pass_k", pass_k, 100.0);
        rl_take(r["eval"], "sample_acc", sample_acc, 100.0);
        eval_k = r["eval"].value("k", eval_k);
      }
    }
    if (j.contains("mfu") && j["mfu"].is_number()) mfu.push_back({s, 100.0 * j["mfu"].get<double>()});
    if (j.contains("bucket_dropped_total") && j["bucket_dropped_total"].is_object()) {
      bucket_dropped.clear();
      for (auto it = j["bucket_dropped_total"].begin(); it != j["bucket_dropped_total"].end(); ++it)
        if (it.value().is_number_integer()) bucket_dropped[it.key()] = it.value().get<int64_t>();
    }
    if (j.contains("bucket_eval_loss") && j["bucket_eval_loss"].is_object())
      for (auto it = j["bucket_eval_loss"].begin(); it != j["bucket_eval_loss"].end(); ++it)
        if (it.value().is_number()) bucket_eval[it.key()].push_back({s, it.value().get<double>()});
    if (j.contains("expert_load") && j["expert_load"].is_array()) {
      const auto& layers = j["expert_load"];
      if (load_spread.size() < layers.size()) load_spread.resize(layers.size());
      for (size_t l = 0; l < layers.size(); ++l) {
        double mx = 0.0, sum = 0.0;
        for (const auto& v : layers[l]) {
          mx = std::max(mx, v.get<double>());
          sum += v.get<double>();
        }
        const double mean = layers[l].empty() ? 0.0 : sum / double(layers[l].size());
        if (mean > 0) load_spread[l].push_back({s, mx / mean});
      }
    }
    last = std::move(j);
  }
  if (loss.empty()) return Status::errorf("{}: no metrics lines", metrics);

  HtmlPage page(title);
  auto mean_of = [](const Points& p, size_t from) {
    double acc = 0.0;
    size_t n = 0;
    for (size_t i = from; i < p.size(); ++i, ++n) acc += p[i].second;
    return n ? acc / double(n) : 0.0;
  };
  const size_t k = std::min<size_t>(10, loss.size());
  std::vector<std::pair<std::string, std::string>> kv = {
      {"steps logged", fmt::format("{} (last step {})", loss.size(), int64_t(loss.back().first))},
      {"loss, first 10 steps", fmt::format("{:.4f}", mean_of(Points(loss.begin(), loss.begin() + k), 0))},
      {"loss, last 10 steps", fmt::format("{:.4f}", mean_of(loss, loss.size() - k))},
      {"tokens/s (median)", ""},
      {"MFU (median)", ""},
  };
  auto median = [](Points p) {
    if (p.empty()) return 0.0;
    std::sort(p.begin(), p.end(), [](auto& a, auto& b) { return a.second < b.second; });
    return p[p.size() / 2].second;
  };
  kv[3].second = fmt::format("{:.0f}", median(tps));
  kv[4].second = fmt::format("{:.1f}%", median(mfu));
  if (!dropped.empty())
    kv.push_back({"dropped assignments (mean)", fmt::format("{:.2f}%", 100.0 * mean_of(dropped, 0))});
  if (!eval_loss.empty()) kv.push_back({"eval loss (last)", fmt::format("{:.4f}", eval_loss.back().second)});
  page.key_values(kv);
  const std::vector<VLine> pl = phase_lines(phases);
  if (!phases.empty()) {
    std::vector<std::vector<std::string>> prow;
    for (const PhaseRow& ph : phases) {
      const size_t n = std::min<size_t>(10, ph.losses.size());
      double end = 0;
      for (size_t i = ph.losses.size() - n; i < ph.losses.size(); ++i) end += ph.losses[i] / double(n);
      prow.push_back({ph.name, fmt::format("{}-{}", ph.first, ph.last), fmt::format("{}", ph.tokens),
                      n ? fmt::format("{:.4f}", end) : "-"});
    }
    page.heading(2, "Phases");
    page.table({"phase", "steps", "tokens", "loss (its last 10 steps)"}, prow,
               {Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
  }

  std::vector<Series> ls = {{"train loss", loss, "", false, false}, {"EMA(0.1)", ema(loss, 0.1), "", false, false}};
  if (!eval_loss.empty()) ls.push_back({"eval loss", eval_loss, "", true, true});
  page.begin_row();
  page.figure(chart("Loss", "cross-entropy (nats/token)", ls, Scale::kLinear, pl),
              "Training loss per step and its moving average.");
  page.figure(chart("Learning rate", "lr", {{"lr", lr, "", false, false}}, Scale::kLinear, pl), "Schedule as applied.");
  page.end_row();
  page.begin_row();
  page.figure(
      chart("Gradient norm (before clipping)", "L2 norm", {{"grad norm", gnorm, "", false, false}}, Scale::kLog, pl),
      "Global gradient norm.");
  page.figure(chart("Throughput", "MFU (%)", {{"MFU %", mfu, "", false, false}}, Scale::kLinear, pl),
              fmt::format("Median {:.0f} tokens/s.", median(tps)));
  page.end_row();
  if (!aux.empty() || !load_spread.empty()) {
    page.heading(2, "Router");
    page.begin_row();
    page.figure(chart("Router losses (unweighted)", "loss",
                      {{"load balancing", aux, "", false, false}, {"z-loss", z, "", true, false}}, Scale::kLinear, pl),
                "Switch balancing loss is 1.0 at perfect balance.");
    std::vector<Series> ss;
    for (size_t l = 0; l < load_spread.size(); ++l)
      ss.push_back({fmt::format("MoE layer {}", l), load_spread[l], "", false, false});
    page.figure(chart("Expert load imbalance", "max / mean load", ss, Scale::kLinear, pl),
                "1.0 = every expert equally loaded.");
    page.end_row();
    if (!dropped.empty()) {
      Points pct;
      for (auto [s, v] : dropped) pct.push_back({s, 100.0 * v});
      page.figure(chart("Dropped by capacity", "% of routed assignments", {{"dropped", pct, "", false, false}},
                        Scale::kLinear, pl),
                  "Assignments over an expert's static capacity.");
    }
    if (!bucket_dropped.empty() && last.contains("bucket_tokens") && last["bucket_tokens"].is_object()) {
      std::vector<std::vector<std::string>> rows_b;
      for (const auto& [name, d] : bucket_dropped) {
        const int64_t tokens = last["bucket_tokens"].value(name, int64_t(0));
        rows_b.push_back({name, fmt::format("{}", tokens), fmt::format("{}", d),
                          tokens > 0 ? fmt::format("{:.2f}", 1000.0 * double(d) / double(tokens)) : "-"});
      }
      page.table({"bucket", "tokens", "dropped assignments", "per 1000 tokens"}, rows_b,
                 {Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
    }
  }
  if (!reward.empty()) {
    // The evaluation at the start (events.jsonl's rl_eval) is where the curves begin.
    for (const nlohmann::json& e : read_events(run_dir))
      if (e.value("event", "") == "rl_eval" && e.contains("pass1") && e["pass1"].is_number()) {
        pass1.insert(pass1.begin(), {0.0, 100.0 * e["pass1"].get<double>()});
        if (e.contains("pass_k") && e["pass_k"].is_number())
          pass_k.insert(pass_k.begin(), {0.0, 100.0 * e["pass_k"].get<double>()});
      }
    page.heading(2, "Reinforcement learning");
    page.begin_row();
    page.figure(chart("Reward", "mean reward of the step's rollouts",
                      {{"reward", reward, "", false, false}, {"EMA(0.05)", ema(reward, 0.05), "", false, false}}),
                "Share of the rollouts their verifier accepts (the same for every pass over one batch).");
    if (!pass1.empty()) {
      std::vector<Series> ev = {{"pass@1 (greedy)", pass1, "", false, true}};
      if (!pass_k.empty()) ev.push_back({fmt::format("pass@{}", eval_k), pass_k, "", true, true});
      if (!sample_acc.empty()) ev.push_back({"sample accuracy", sample_acc, "", true, false});
      page.figure(chart("Held-out accuracy", "% of held-out items", ev),
                  "Greedy pass@1, and pass@k of k samples at the rollouts' temperature.");
    }
    page.end_row();
    page.begin_row();
    page.figure(
        chart("Policy", "nats per completion token",
              {{"entropy", entropy, "", false, false}, {"KL (to the reference or teacher)", rl_kl, "", true, false}}),
        "Entropy of the policy and its divergence, per completion token.");
    page.figure(chart("Rollouts", "tokens / %",
                      {{"response length (tokens)", resp_len, "", false, false},
                       {"clipped tokens (%)", clip, "", true, false},
                       {"well formed (%)", well_formed, "", true, false},
                       {"tool use (%)", tool_use, "", false, false}}),
                "Completion length, PPO-clipped share of tokens, answers that parse as their check's kind, "
                "rollouts that called a tool.");
    page.end_row();
  }
  if (!bucket_eval.empty()) {
    std::vector<Series> bs;
    for (auto& [name, p] : bucket_eval) bs.push_back({name, p, "", false, false});
    page.heading(2, "Evaluation by bucket");
    page.figure(chart("Eval loss per bucket", "loss", bs, Scale::kLinear, pl), "Held-out loss of each data bucket.");
  }
  add_events_timeline(page, run_dir);
  std::ofstream out(out_path);
  if (!out) return Status::errorf("{}: cannot write", out_path);
  out << page.render();
  if (!out) return Status::errorf("{}: write failed", out_path);
  return Status::ok();
}

}  // namespace mt::report
