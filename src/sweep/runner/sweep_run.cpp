// sweep_run.cpp — see sweep_run.h.
#include "sweep/runner/sweep_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/config_schema.h"
#include "core/file_io.h"
#include "core/subprocess.h"
#include "model/flops.h"
#include "rundir/metrics_log.h"
#include "sweep/carbs.h"
#include "sweep/gp.h"
#include "sweep/power_law.h"
#include "sweep/runner/sweep_report.h"
#include "train/run_queue.h"

namespace fs = std::filesystem;

namespace mt {
namespace {

using nlohmann::json;

std::string run_name(int64_t i) { return fmt::format("s{:03d}", i); }

// A run's config, or why the trainer would refuse it.
Result<RunConfig> config_of(const SweepConfig& c, const SweepPlan& plan, const std::vector<double>& settings) {
  return parse_run_config(plan.base_text, c.base,
                          sweep_sets(c, settings, plan.tokens_per_step, plan.base.model.n_kv_heads));
}

// Training FLOPs of a config: model FLOPs per token x tokens (model/flops.h).
double cost_of(const RunConfig& cfg) {
  const TrainConfig& t = cfg.train;
  return flops_per_token(cfg.model, t.seq_len) * double(t.steps) * double(t.batch_size) * double(t.seq_len);
}

json settings_json(const SweepConfig& c, const std::vector<double>& settings) {
  json s = json::object();
  for (size_t i = 0; i < c.params.size(); ++i) {
    const SweepParam& p = c.params[i];
    if (p.scale == ParamScale::kChoice)
      s[p.key] = p.choices[size_t(std::llround(settings[i]))];
    else
      s[p.key] = settings[i];
  }
  return s;
}

json resolved_json(const SweepConfig& c, const RunConfig& cfg, const SweepPlan& plan) {
  json r = json::object();
  for (const SweepParam& p : c.params) {
    if (p.key == "tokens") r["tokens"] = double(cfg.train.steps * plan.tokens_per_step);
    if (p.key == "width") r["width"] = double(cfg.model.d_model);
  }
  return r;
}

SweepObservation observation_of(const SweepConfig& c, const json& rec) {
  SweepObservation o;
  for (const SweepParam& p : c.params) {
    const json& v = rec["settings"][p.key];
    if (p.scale == ParamScale::kChoice) {
      const auto it = std::find(p.choices.begin(), p.choices.end(), v.get<std::string>());
      o.settings.push_back(double(it - p.choices.begin()));
    } else {
      o.settings.push_back(v.get<double>());
    }
  }
  o.failed = rec["failed"].get<bool>();
  o.value = o.failed ? NAN : rec["value"].get<double>();
  o.cost = rec["cost"].get<double>();
  return o;
}

// results.jsonl: every line checked against this sweep's run order.
Result<std::map<int64_t, json>> recorded_results(const std::string& path) {
  std::map<int64_t, json> out;
  if (!fs::exists(path)) return out;
  auto text = read_file(path, "sweep results");
  if (!text) return text.status();
  int64_t line = 0;
  size_t begin = 0;
  const std::string& t = text.value();
  while (begin < t.size()) {
    size_t end = t.find('\n', begin);
    if (end == std::string::npos) end = t.size();
    ++line;
    const std::string l = t.substr(begin, end - begin);
    begin = end + 1;
    if (l.empty()) continue;
    json j = json::parse(l, nullptr, false);
    if (!j.is_object() || !j.contains("index") || !j.contains("settings") || !j.contains("failed"))
      return Status::errorf("{}:{}: not a sweep result", path, line);
    const int64_t index = j["index"].get<int64_t>();  // before the move: the right side is evaluated first
    out[index] = std::move(j);
  }
  return out;
}

// The value GP refitted without each succeeded run, predicting it: how well
// the surrogate knows the loss where it has not seen it.
json leave_one_out(const SweepConfig& c, const std::vector<SweepObservation>& obs) {
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  std::vector<size_t> idx;
  for (size_t i = 0; i < obs.size(); ++i)
    if (!obs[i].failed && std::isfinite(obs[i].value)) {
      std::vector<double> u;
      for (size_t p = 0; p < c.params.size(); ++p) u.push_back(to_unit(c.params[p], obs[i].settings[p]));
      X.push_back(u);
      y.push_back(obs[i].value);
      idx.push_back(i);
    }
  json out = json::array();
  if (X.size() < 3) return out;
  for (size_t k = 0; k < X.size(); ++k) {
    std::vector<std::vector<double>> Xk;
    std::vector<double> yk;
    for (size_t j = 0; j < X.size(); ++j)
      if (j != k) Xk.push_back(X[j]), yk.push_back(y[j]);
    const GpPrediction p = GaussianProcess::fit(Xk, yk).predict(X[k]);
    out.push_back(
        {{"name", run_name(int64_t(idx[k]))}, {"observed", y[k]}, {"predicted", p.mean}, {"sd", std::sqrt(p.var)}});
  }
  return out;
}

// The held-out loss a run ended with at its final step, or why it has none.
struct FinalLoss {
  double value = NAN;
  std::string reason;  // empty: value holds the loss
};
FinalLoss final_loss(const std::string& dir, int64_t steps) {
  const json m = last_metrics_line(dir);
  if (!m.is_object() || m.value("step", int64_t(-1)) != steps || !m.contains("eval_loss"))
    return {NAN, "no held-out loss at the final step (the base config needs held-out data)"};
  const json& v = m["eval_loss"];  // a NaN is written as null
  if (!v.is_number() || !std::isfinite(v.get<double>())) return {NAN, "diverged: held-out loss is not finite"};
  return {v.get<double>(), ""};
}

// The last line of a child's log (core/subprocess.h's file_tail reads only its end).
std::string log_tail_line(const std::string& log) {
  std::string t = file_tail(log, 1000);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Trains each at_costs config (cNN/, resumed if killed, skipped once
// finished) and records its held-out loss as `observed` in its entry.
Status check_at_costs(const std::string& out, const SweepOptions& opt, json& at_costs) {
  std::vector<QueuedRun> q;
  std::vector<std::string> dirs;
  for (size_t k = 0; k < at_costs.size(); ++k) {
    json& a = at_costs[k];
    const std::string config = out + "/" + a["file"].get<std::string>();
    auto cfg = load_run_config(config, {});
    if (!cfg) return cfg.status();
    const int64_t steps = cfg.value().train.steps;
    QueuedRun qr;
    qr.name = fmt::format("c{:02d}", k);
    qr.run_dir = out + "/" + qr.name;
    qr.log_path = out + "/logs/" + qr.name + ".log";
    qr.args = {"train",     "--config", config,     "--set",        fmt::format("train.eval_every={}", steps),
               "--run-dir", qr.run_dir, "--resume", "--no-progress"};
    qr.last_step = steps;
    qr.work = a["config_cost"].get<double>();
    const FinalLoss done = final_loss(qr.run_dir, steps);
    qr.done = done.reason.empty();
    if (qr.done) a["observed"] = done.value;
    a["run"] = qr.name;
    const std::string dir = qr.run_dir;
    qr.on_done = [&a, dir, steps]() -> Status {  // a check without a loss is recorded, never the sweep's end
      const FinalLoss f = final_loss(dir, steps);
      if (f.reason.empty())
        a["observed"] = f.value;
      else
        a["reason"] = f.reason;
      return Status::ok();
    };
    const std::string log = qr.log_path;
    qr.on_failed = [&a, log](int code) -> Status {
      a["reason"] = fmt::format("exit {}: {}", code, log_tail_line(log));
      return Status::ok();
    };
    q.push_back(std::move(qr));
  }
  RunQueueOptions qo;
  qo.jobs = opt.jobs;
  qo.progress = opt.progress;
  qo.label = "at_costs checks";
  return run_queue(q, qo);
}

}  // namespace

Result<SweepPlan> plan_sweep(const SweepConfig& c, const std::string& out_dir) {
  SweepPlan plan;
  plan.out_dir = out_dir;
  auto text = read_file(c.base, "run config");
  if (!text) return text.status();
  plan.base_text = text.value();
  auto base = parse_run_config(plan.base_text, c.base, c.set);
  if (!base) return base.status();
  plan.base = base.value();
  plan.tokens_per_step = plan.base.train.batch_size * plan.base.train.seq_len;
  std::vector<double> center;
  for (const SweepParam& p : c.params) center.push_back(p.center);
  auto at_center = config_of(c, plan, center);
  if (!at_center)
    return Status::errorf("{}: the run at the params' centres is refused: {}", c.source, at_center.status().message());
  return plan;
}

OutputOwner sweep_owner(const SweepConfig& c, const SweepPlan& plan) {
  OutputOwner o;
  o.command = "sweep";
  ConfigSchema s("sweep file");
  SweepConfig copy = c;
  declare_keys(s, copy);
  o.config = flatten_toml(s.to_toml());  // [[param]] tables included
  for (const auto& [k, v] : flatten_toml(to_toml(plan.base))) o.config["base." + k] = v;
  return o;
}

Result<std::string> run_sweep(const SweepConfig& c, const SweepPlan& plan, const SweepOptions& opt) {
  const std::string& out = plan.out_dir;
  std::error_code ec;
  fs::create_directories(out + "/logs", ec);
  if (ec) return Status::errorf("{}: cannot create: {}", out, ec.message());
  const std::string results_path = out + "/results.jsonl";
  auto rec = recorded_results(results_path);
  if (!rec) return rec.status();
  std::map<int64_t, json>& recorded = rec.value();
  auto write_results = [&]() {
    std::string text;
    for (const auto& [i, j] : recorded) text += j.dump() + "\n";
    return write_file_atomic(results_path, text);
  };

  CarbsOptions co;
  co.seed = c.seed;
  co.initial = int(c.initial);
  co.focus_costs = c.focus_costs;
  co.cost_of = [&](const std::vector<double>& settings) {
    auto cfg = config_of(c, plan, settings);
    return cfg ? cost_of(cfg.value()) : NAN;
  };
  fmt::print(stderr, "# sweep: {} runs in rounds of {}, {} hyperparameters, {} at once; logs in {}/logs\n", c.runs,
             c.batch, c.params.size(), opt.jobs, out);

  for (int64_t first = 0; first < c.runs; first += c.batch) {
    const int64_t last = std::min(c.runs, first + c.batch);
    Carbs search(c.params, co);
    for (int64_t j = 0; j < first; ++j) search.observe(observation_of(c, recorded.at(j)));
    std::vector<QueuedRun> q;
    for (int64_t i = first; i < last; ++i) {
      const std::vector<double> settings = search.suggest(uint64_t(i));
      const std::string name = run_name(i);
      json base_rec = {
          {"name", name}, {"index", i}, {"round", first / c.batch}, {"settings", settings_json(c, settings)}};
      if (recorded.count(i)) {
        if (recorded[i]["settings"] != base_rec["settings"])
          return Status::errorf(
              "{}: {} records settings {} where this sweep suggests {}: the directory holds "
              "another sweep's runs",
              results_path, name, recorded[i]["settings"].dump(), base_rec["settings"].dump());
        continue;
      }
      auto cfg = config_of(c, plan, settings);
      if (!cfg) {  // refused before it runs: data for the success model
        base_rec["failed"] = true;
        base_rec["reason"] = "refused: " + cfg.status().message();
        base_rec["cost"] = 0.0;
        recorded[i] = base_rec;
        MT_RETURN_IF_ERROR(write_results());
        continue;
      }
      const int64_t steps = cfg.value().train.steps;
      base_rec["cost"] = cost_of(cfg.value());
      base_rec["steps"] = steps;
      // What the run trains with where the rules round a setting (whole steps, whole heads).
      base_rec["resolved"] = resolved_json(c, cfg.value(), plan);
      QueuedRun qr;
      qr.name = name;
      qr.args = {"train", "--config", c.base};
      std::vector<std::string> sets = sweep_sets(c, settings, plan.tokens_per_step, plan.base.model.n_kv_heads);
      sets.push_back(fmt::format("train.eval_every={}", steps));
      for (const std::string& x : sets) qr.args.insert(qr.args.end(), {"--set", x});
      qr.run_dir = out + "/" + name;
      qr.log_path = out + "/logs/" + name + ".log";
      qr.args.insert(qr.args.end(), {"--run-dir", qr.run_dir, "--resume", "--no-progress"});
      qr.last_step = steps;
      qr.work = base_rec["cost"].get<double>();
      const std::string dir = qr.run_dir, log = qr.log_path;
      qr.on_done = [&, i, base_rec, dir, steps]() -> Status {
        json r = base_rec;
        const FinalLoss f = final_loss(dir, steps);
        r["failed"] = !f.reason.empty();
        if (f.reason.empty())
          r["value"] = f.value;
        else
          r["reason"] = f.reason;
        recorded[i] = r;
        return write_results();
      };
      qr.on_failed = [&, i, base_rec, log](int code) -> Status {
        json r = base_rec;
        r["failed"] = true;
        r["reason"] = fmt::format("exit {}: {}", code, log_tail_line(log));
        recorded[i] = r;
        return write_results();
      };
      q.push_back(std::move(qr));
    }
    RunQueueOptions qo;
    qo.jobs = opt.jobs;
    qo.progress = opt.progress;
    qo.label = fmt::format("round {} runs", first / c.batch);
    MT_RETURN_IF_ERROR(run_queue(q, qo));
  }

  // The front, and how each numeric hyperparameter moves along it.
  Carbs all(c.params, co);
  for (int64_t j = 0; j < c.runs; ++j) all.observe(observation_of(c, recorded.at(j)));
  json front = json::object();
  front["runs"] = json::array();
  std::vector<double> costs;
  std::vector<std::vector<double>> values(c.params.size());
  for (size_t i : all.front()) {
    const SweepObservation& o = all.observations()[i];
    const json& r = recorded.at(int64_t(i));
    front["runs"].push_back({{"name", run_name(int64_t(i))},
                             {"cost", o.cost},
                             {"value", o.value},
                             {"settings", settings_json(c, o.settings)},
                             {"resolved", r.value("resolved", json::object())}});
    costs.push_back(o.cost);
    for (size_t p = 0; p < c.params.size(); ++p) {
      const json res = r.value("resolved", json::object());
      values[p].push_back(res.contains(c.params[p].key) ? res[c.params[p].key].get<double>() : o.settings[p]);
    }
  }
  front["scaling"] = json::object();
  for (size_t p = 0; p < c.params.size(); ++p) {
    if (c.params[p].scale == ParamScale::kChoice) continue;
    const PowerLawFit f = fit_power_law(costs, values[p], 400, c.seed);
    auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    front["scaling"][c.params[p].key] = {
        {"a", f.a}, {"exponent", num(f.b)}, {"interval", {num(f.b_lo), num(f.b_hi)}}, {"r2", num(f.r2)}, {"runs", f.n}};
  }
  int64_t failed = 0;
  for (const auto& [i, r] : recorded) failed += r["failed"].get<bool>() ? 1 : 0;
  front["failed_runs"] = failed;
  front["loo"] = leave_one_out(c, all.observations());

  // A run config for each chosen cost. Numeric settings follow their power
  // laws. The model's size and the tokens are carried past their bounds when
  // the cost lies outside the front's (the hero run is larger than every
  // run: that is what the laws are for); every other setting stays within
  // its bounds, where the runs measured the loss (a law fitted on a handful
  // of front runs can put a learning rate anywhere), and the file says which
  // ones hit them. Choices come from the front run nearest in cost. The
  // tokens are then set so that the config costs what was asked; the loss
  // there is the front's own power law in cost, with its bootstrap interval.
  front["at_costs"] = json::array();
  const std::vector<size_t> front_idx = all.front();
  std::vector<double> front_values;
  for (size_t i : front_idx) front_values.push_back(all.observations()[i].value);
  const std::vector<PowerLawPrediction> losses = predict_power_law(costs, front_values, c.at_costs, 400, c.seed);
  const auto tokens_param =
      std::find_if(c.params.begin(), c.params.end(), [](const SweepParam& p) { return p.key == "tokens"; });
  const double lo_cost = costs.empty() ? 0.0 : *std::min_element(costs.begin(), costs.end());
  const double hi_cost = costs.empty() ? 0.0 : *std::max_element(costs.begin(), costs.end());
  for (size_t k = 0; k < c.at_costs.size(); ++k) {
    const double C = c.at_costs[k];
    if (front_idx.empty()) break;
    size_t nearest = front_idx[0];
    for (size_t i : front_idx)
      if (std::fabs(std::log(all.observations()[i].cost / C)) <
          std::fabs(std::log(all.observations()[nearest].cost / C)))
        nearest = i;
    const bool extrapolated = C < lo_cost * (1 - 1e-9) || C > hi_cost * (1 + 1e-9);
    std::vector<double> settings = all.observations()[nearest].settings;
    json clamped = json::array();
    for (size_t p = 0; p < c.params.size(); ++p) {
      const SweepParam& q = c.params[p];
      const json s = front["scaling"].value(q.key, json());
      if (!s.is_object() || !s["exponent"].is_number()) continue;
      const double v = s["a"].get<double>() * std::pow(C, s["exponent"].get<double>());
      const bool scale = q.key == "width" || q.key == "tokens" || q.key == "model.n_layers";
      settings[p] = extrapolated && scale ? v : std::clamp(v, q.lo, q.hi);
      if (settings[p] != v && !(q.key == "tokens")) clamped.push_back(q.key);  // tokens: solved below
    }
    auto cfg = config_of(c, plan, settings);
    if (cfg && tokens_param != c.params.end()) {
      // Cost is linear in the tokens once the model is fixed: scale the whole steps the config trains.
      const size_t t = size_t(tokens_param - c.params.begin());
      settings[t] = double(cfg.value().train.steps * plan.tokens_per_step) * C / cost_of(cfg.value());
      cfg = config_of(c, plan, settings);
    }
    if (!cfg)
      return Status::errorf("sweep.at_costs {:.3g}: the predicted settings are refused: {}", C, cfg.status().message());
    const std::string file = fmt::format("settings-at-{:.3g}.toml", C);
    const PowerLawPrediction& loss = losses[k];
    const std::string head = fmt::format(
        "# moetrain sweep {}: the settings predicted for {:.3g} training FLOPs{}\n"
        "# {}{}\n",
        c.source, C, extrapolated ? " (beyond the front's costs: extrapolated)" : "",
        !std::isfinite(loss.value) ? std::string("no loss predicted: fewer than 3 front runs")
        : std::isfinite(loss.lo)
            ? fmt::format("the front's loss law predicts {:.4f} there (90% interval {:.4f} to {:.4f})", loss.value,
                          loss.lo, loss.hi)
            : fmt::format("the front's loss law predicts {:.4f} there", loss.value),
        clamped.empty() ? "" : "\n# held at their bounds, where their laws leave them: " + clamped.dump());
    MT_RETURN_IF_ERROR(write_file_atomic(out + "/" + file, head + to_toml(cfg.value())));
    auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    front["at_costs"].push_back({{"cost", C},
                                 {"file", file},
                                 {"settings", settings_json(c, settings)},
                                 {"resolved", resolved_json(c, cfg.value(), plan)},
                                 {"config_cost", cost_of(cfg.value())},
                                 {"extrapolated", extrapolated},
                                 {"clamped", clamped},
                                 {"predicted_value", num(loss.value)},
                                 {"predicted_interval", {num(loss.lo), num(loss.hi)}}});
  }
  if (c.check_at_costs) MT_RETURN_IF_ERROR(check_at_costs(out, opt, front["at_costs"]));
  const std::string front_path = out + "/front.json";
  MT_RETURN_IF_ERROR(write_file_atomic(front_path, front.dump(2) + "\n"));
  MT_RETURN_IF_ERROR(write_sweep_report(out, out + "/report.html"));
  return front_path;
}

}  // namespace mt
