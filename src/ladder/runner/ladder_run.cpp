// ladder_run.cpp — see ladder_run.h. Orchestration only: the ladder is
// planned here (shapes, budgets, branch points), each piece of training is a
// `moetrain train` child process (train/run_queue.h), and the results file
// is rewritten in one canonical order whenever a run finishes.
#include "ladder/runner/ladder_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/config_schema.h"
#include "core/file_io.h"
#include "core/file_lock.h"
#include "core/subprocess.h"
#include "model/flops.h"
#include "model/weights.h"
#include "optim/lr_schedule.h"
#include "train/run_config.h"
#include "rundir/metrics_log.h"
#include "rundir/run_dir.h"
#include "train/run_branch.h"
#include "train/run_queue.h"
#include "train/trainer.h"

namespace mt {
namespace fs = std::filesystem;
using json = nlohmann::json;

void declare_keys(ConfigSchema& s, LadderConfig& c) {
  s.add("ladder.base", &c.base, "run config every rung starts from (relative to this file)").required();
  s.add("ladder.set", &c.set, "overrides applied to every rung, as with --set");
  s.add("ladder.tokens_per_param", &c.tokens_per_param, "each rung trains on ratio x its active matmul parameters")
      .above(0);
  s.add("ladder.head_dim", &c.head_dim, "n_heads = d_model / head_dim").range(2, 1 << 16);
  s.add("ladder.expert_ratio", &c.expert_ratio, "d_expert = ratio x d_model").min(0).note("0 = the base's");
  s.add("ladder.ffn_ratio", &c.ffn_ratio, "d_ff = ratio x d_model").min(0).note("0 = the base's");
  s.add("ladder.cooldowns", &c.cooldowns,
        "fractions of each rung's budget that also get a result: the rung's run stopped at the start of that "
        "budget's decay and cooled down from there (needs train.schedule = \"wsd\")")
      .above(0)
      .below(1)
      .note("[] = none");
  s.add_table_array<LadderRung>(
      "rung", &c.rungs,
      [](ConfigSchema& r, LadderRung& g) {
        r.add("name", &g.name, "label; the rung's run directory is OUT/NAME").required();
        r.add("d_model", &g.d_model, "width").range(2, 1 << 20).required();
        r.add("n_layers", &g.n_layers, "depth").range(1, 1 << 14).required();
        r.add("flops", &g.flops, "compute budget in model FLOPs").min(0).note("0 = ladder.tokens_per_param");
      },
      "one table per rung, run in order")
      .required();
  declare_keys(s, c.eval, /*with_metric=*/true);
}

Result<LadderConfig> load_ladder_config(const std::string& path, const std::vector<std::string>& overrides) {
  LadderConfig c;
  c.source = path;
  ConfigSchema s("ladder file");
  declare_keys(s, c);
  ConfigOrigins o;
  MT_RETURN_IF_ERROR(s.load_file(path, overrides, o));
  if (!c.base.empty() && !fs::path(c.base).is_absolute())
    c.base = (fs::path(path).parent_path() / c.base).lexically_normal().string();
  std::set<std::string> names;
  for (size_t i = 0; i < c.rungs.size(); ++i) {
    const LadderRung& r = c.rungs[i];
    if (!names.insert(r.name).second) return o.error(fmt::format("rung[{}].name", i), "names a rung twice");
    if (r.name.empty() || r.name.find_first_of("/@") != std::string::npos || r.name == "logs")
      return o.error(fmt::format("rung[{}].name", i), "must be a file name without '/' or '@' (and not \"logs\")");
    if (r.d_model % c.head_dim != 0)
      return o.error(fmt::format("rung[{}].d_model", i), fmt::format("must be a multiple of ladder.head_dim = {}", c.head_dim));
  }
  MT_RETURN_IF_ERROR(check_eval_targets(c.eval, path, o));
  std::sort(c.cooldowns.begin(), c.cooldowns.end());
  if (std::adjacent_find(c.cooldowns.begin(), c.cooldowns.end()) != c.cooldowns.end())
    return o.error("ladder.cooldowns", "lists a fraction twice");
  return c;
}

namespace {

using Unit = LadderUnit;
using RungPlan = LadderRungPlan;

// The rung's overrides: the ladder's, then its shape.
std::vector<std::string> shape_sets(const LadderConfig& c, const LadderRung& r) {
  std::vector<std::string> sets = c.set;
  sets.push_back(fmt::format("model.d_model={}", r.d_model));
  sets.push_back(fmt::format("model.n_layers={}", r.n_layers));
  sets.push_back(fmt::format("model.n_heads={}", r.d_model / c.head_dim));
  if (c.expert_ratio > 0) sets.push_back(fmt::format("model.d_expert={}", std::max<int64_t>(1, std::llround(c.expert_ratio * double(r.d_model)))));
  if (c.ffn_ratio > 0) sets.push_back(fmt::format("model.d_ff={}", std::max<int64_t>(1, std::llround(c.ffn_ratio * double(r.d_model)))));
  return sets;
}

// A run of `steps` steps: one held-out pass at its end and four checkpoints
// (keys a resume may change, so a branch can differ from its full run).
std::vector<std::string> length_sets(std::vector<std::string> sets, int64_t steps) {
  sets.push_back(fmt::format("train.steps={}", steps));
  sets.push_back(fmt::format("train.eval_every={}", steps));
  sets.push_back(fmt::format("train.checkpoint_every={}", std::max<int64_t>(1, steps / 4)));
  return sets;
}

// The first step of a WSD schedule's decay (optim/lr_schedule.cpp): until
// then the learning rate is the peak's whatever the run's length.
int64_t decay_start(const ScheduleParams& p, int64_t steps) {
  int64_t b = 0;
  while (b < steps && learning_rate(p, b, steps) == learning_rate(p, b, std::numeric_limits<int32_t>::max())) ++b;
  return b;
}

std::string cooldown_label(double f) { return fmt::format("{:g}", f); }

Result<std::vector<json>> read_results(const std::string& path) {
  std::vector<json> out;
  if (!fs::exists(path)) return out;
  auto text = read_file(path, "ladder results");
  if (!text) return text.status();
  size_t line = 0, at = 0;
  while (at < text->size()) {
    const size_t end = text->find('\n', at);
    const std::string l = text->substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text->size() : end + 1;
    ++line;
    if (l.empty()) continue;
    json j = json::parse(l, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string())
      return Status::errorf("{}:{}: not a ladder result", path, line);
    out.push_back(std::move(j));
  }
  return out;
}

// The last metrics line of a finished run (it carries the final held-out loss).
Result<json> final_metrics(const std::string& dir, int64_t steps) {
  const json last = last_metrics_line(dir);
  if (!last.is_object() || last.value("step", int64_t(-1)) != steps)
    return Status::errorf("{}/metrics.jsonl: no line for the final step {}", dir, steps);
  if (!last.contains("eval_loss") || !last["eval_loss"].is_number())
    return Status::error(
        "no held-out loss: the base config needs held-out data (data.dataset with eval documents, or "
        "data.eval_frac > 0)");
  return last;
}

// A branch starts as a copy of the full run at its branch step (the
// segment before it stopped there with a checkpoint): train/run_branch.h.
Status make_branch(const std::string& full_dir, const std::string& branch_dir, int64_t step) {
  if (fs::exists(branch_dir)) return Status::ok();
  auto b = branch_run(run_checkpoints_dir(full_dir) + "/" + checkpoint_dir_name(step), branch_dir);
  if (!b)
    return Status::errorf("{}: cannot branch {} at step {}: {}", branch_dir, full_dir, step, b.status().message());
  return Status::ok();
}

// A recorded result carries every task asked for, by the metric asked for, and every text set.
bool has_eval(const EvalTargets& e, const json& rec) {
  if (!e.enabled()) return true;
  if (!rec.contains("meta") || !rec["meta"].contains("eval") || rec["meta"]["eval"].value("metric", "") != e.metric)
    return false;
  for (const std::string& t : e.names)
    if (!rec.contains("accuracy") || !rec["accuracy"].contains(t)) return false;
  for (const std::string& t : e.text_set_names)
    if (!rec["meta"]["eval"].contains("text_set_bits_per_byte") ||
        !rec["meta"]["eval"]["text_set_bits_per_byte"].contains(t))
      return false;
  return true;
}

std::vector<std::string> train_args(const LadderConfig& c, const std::vector<std::string>& sets,
                                    const std::string& dir) {
  std::vector<std::string> a = {"train", "--config", c.base};
  for (const std::string& s : sets) {
    a.push_back("--set");
    a.push_back(s);
  }
  a.insert(a.end(), {"--run-dir", dir, "--resume", "--no-progress"});
  return a;
}

}  // namespace

Result<LadderPlan> plan_ladder(const LadderConfig& c, const std::string& out_dir) {
  LadderPlan plan;
  plan.base = c.base;
  plan.out_dir = out_dir;
  std::vector<RungPlan>& rungs = plan.rungs;
  std::vector<Unit>& units = plan.units;
  double& total_flops = plan.total_flops;
  for (size_t ri = 0; ri < c.rungs.size(); ++ri) {
    const LadderRung& r = c.rungs[ri];
    RungPlan p;
    p.sets = shape_sets(c, r);
    auto cfg = load_run_config(c.base, p.sets);
    if (!cfg) return Status::errorf("{}: rung {}: {}", c.source, r.name, cfg.status().message());
    p.cfg = std::move(cfg.value());
    MT_RETURN_IF_ERROR(check_trainer_limits(p.cfg));
    const TrainConfig& tc = p.cfg.train;
    const double per_token = flops_per_token(p.cfg.model, tc.seq_len);
    p.active = double(active_matmul_params(p.cfg.model));
    ParamLayout layout;
    build_layout(p.cfg.model, layout);
    p.total = double(layout.total());
    const double want_tokens = r.flops > 0 ? r.flops / per_token : c.tokens_per_param * p.active;
    const double tokens_per_step = double(tc.batch_size * tc.seq_len * tc.grad_accum);
    p.steps = std::max<int64_t>(1, std::llround(want_tokens / tokens_per_step));
    if (!c.cooldowns.empty() && tc.schedule.kind != ScheduleKind::kWsd)
      return Status::errorf("{}: ladder.cooldowns needs train.schedule = \"wsd\" (rung {} has another schedule)",
                            c.source, r.name);
    const std::string full_dir = out_dir + "/" + r.name;
    int64_t prev_steps = 0;
    for (double f : c.cooldowns) {
      Unit u;
      u.name = r.name + "@" + cooldown_label(f);
      u.dir = out_dir + "/" + u.name;
      u.rung = ri;
      u.cooldown = f;
      u.steps = std::llround(f * double(p.steps));
      u.branch_step = decay_start(tc.schedule, u.steps);
      if (u.steps <= prev_steps || u.steps >= p.steps || u.branch_step < 1 || u.branch_step >= u.steps)
        return Status::errorf(
            "{}: rung {}: cooldown {} gives a run of {} of the rung's {} steps with its decay from step {}: each "
            "cooldown needs its own length, shorter than the rung's, and at least one step before its decay "
            "(raise the budget or drop the fraction)",
            c.source, r.name, cooldown_label(f), u.steps, p.steps, u.branch_step);
      prev_steps = u.steps;
      u.sets = length_sets(p.sets, u.steps);
      u.tokens = double(u.steps) * tokens_per_step;
      u.flops = per_token * u.tokens;
      p.units.push_back(units.size());
      units.push_back(std::move(u));
    }
    Unit full;
    full.name = r.name;
    full.dir = full_dir;
    full.rung = ri;
    full.steps = p.steps;
    full.sets = length_sets(p.sets, p.steps);
    full.tokens = double(p.steps) * tokens_per_step;
    full.flops = per_token * full.tokens;
    total_flops += full.flops;
    for (size_t u : p.units) total_flops += units[u].flops - per_token * double(units[u].branch_step) * tokens_per_step;
    p.units.push_back(units.size());
    units.push_back(std::move(full));
    rungs.push_back(std::move(p));
  }
  return plan;
}

OutputOwner ladder_owner(const LadderPlan& plan) {
  OutputOwner o;
  o.command = "ladder run";
  for (const Unit& u : plan.units) {
    auto resolved = load_run_config(plan.base, u.sets);  // loaded once already by plan_ladder
    o.parts[u.name] = resolved ? flatten_toml(to_toml(resolved.value()))
                               : std::map<std::string, std::string>{{"error", resolved.status().message()}};
    o.parts[u.name]["ladder.branch_step"] = std::to_string(u.branch_step);
  }
  return o;
}

namespace {

// The results.jsonl line of a finished run: its size and budget, the final
// held-out loss, and with [eval] the accuracy `moetrain eval` gave it.
Result<json> result_record(const LadderConfig& c, const LadderPlan& plan, const Unit& u) {
  const RungPlan& p = plan.rungs[u.rung];
  const LadderRung& r = c.rungs[u.rung];
  auto last = final_metrics(u.dir, u.steps);
  if (!last) return Status::errorf("{}: {}", u.name, last.status().message());
  json rec;
  rec["name"] = u.name;
  rec["active_params"] = p.active;
  rec["total_params"] = p.total;
  if (p.cfg.model.n_experts > 0) rec["n_experts"] = p.cfg.model.n_experts;
  rec["tokens"] = u.tokens;
  rec["flops"] = u.flops;
  rec["loss"] = (*last)["eval_loss"];
  rec["meta"] = {{"rung", r.name},
                 {"d_model", r.d_model},
                 {"n_layers", r.n_layers},
                 {"steps", u.steps},
                 {"train_loss", last->value("loss", 0.0)},
                 {"state_hash", logged_state_hash(plan.out_dir + "/logs/" + u.name + ".log")}};
  if (u.branch_step > 0) {
    rec["meta"]["cooldown"] = u.cooldown;
    rec["meta"]["branch_step"] = u.branch_step;
  }
  if (last->contains("bucket_eval_loss")) rec["meta"]["bucket_eval_loss"] = (*last)["bucket_eval_loss"];
  if (c.eval.enabled()) {
    auto ev = read_eval(u.dir, u.steps, c.eval);
    if (!ev) return Status::errorf("{}: {}", u.name, ev.status().message());
    json tasks = json::object();
    for (const std::string& t : c.eval.names) {
      tasks[t] = task_result(ev.value(), t);
      rec["accuracy"][t] = tasks[t][c.eval.metric];
    }
    rec["meta"]["eval"] = {{"metric", c.eval.metric}, {"tasks", tasks}};
    const json bpb = bucket_bits_per_byte(ev.value());
    if (!bpb.empty()) rec["meta"]["eval"]["bucket_bits_per_byte"] = bpb;
    const json sets = text_set_bits_per_byte(ev.value());
    if (!sets.empty()) rec["meta"]["eval"]["text_set_bits_per_byte"] = sets;
  }
  return rec;
}

// One line per rung (its size, budget, branches, whether it is recorded) and the total.
void print_plan(const LadderConfig& c, const LadderPlan& plan, const std::map<std::string, json>& recorded,
                const std::string& results_path, int64_t jobs) {
  const std::vector<RungPlan>& rungs = plan.rungs;
  const std::vector<Unit>& units = plan.units;
  const std::string& out_dir = plan.out_dir;
  for (size_t ri = 0; ri < rungs.size(); ++ri) {
    const RungPlan& p = rungs[ri];
    const Unit& full = units[p.units.back()];
    std::string branches;
    for (size_t k = 0; k + 1 < p.units.size(); ++k)
      branches += fmt::format("{}{} ({} steps from step {})", k ? ", " : "; cooldowns ", units[p.units[k]].name,
                              units[p.units[k]].steps, units[p.units[k]].branch_step);
    fmt::print(stderr,
               "# ladder: rung {}/{} {} (d_model {}, {} layers): {:.3g} active params, {:.3g} tokens, {} steps, {:.3g} "
               "FLOP{}{}\n",
               ri + 1, rungs.size(), full.name, c.rungs[ri].d_model, c.rungs[ri].n_layers, p.active, full.tokens,
               full.steps, full.flops, branches, recorded.count(full.name) ? " — already in " + results_path : "");
  }
  fmt::print(stderr, "# ladder: {:.3g} FLOP in all, {} runs at once; logs in {}/logs\n", plan.total_flops, jobs,
             out_dir);
}

}  // namespace

Result<std::vector<size_t>> select_rungs(const LadderConfig& c, const std::vector<std::string>& names) {
  std::vector<size_t> out;
  for (const std::string& n : names) {
    size_t i = 0;
    while (i < c.rungs.size() && c.rungs[i].name != n) ++i;
    if (i == c.rungs.size() && !n.empty() && n.find_first_not_of("0123456789") == std::string::npos && n.size() < 9)
      i = size_t(std::stoul(n));
    if (i >= c.rungs.size()) {
      std::string known;
      for (const LadderRung& r : c.rungs) known += (known.empty() ? "" : ", ") + r.name;
      return Status::errorf("--rung {}: {} has no rung of that name ({}) nor of that index (0 to {})", n, c.source,
                            known, c.rungs.size() - 1);
    }
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  }
  return out;
}

namespace {

// One ladder's side of a queue: what its results file holds and how a
// finished run is recorded there.
struct LadderState {
  const LadderConfig& c;
  const LadderPlan& plan;
  const LadderRunOptions& opt;
  std::string results_path;
  std::map<std::string, json> recorded;
  std::vector<json> foreign;  // records of runs this ladder does not plan: kept, after ours
  std::set<std::string> planned;

  LadderState(const LadderConfig& c_, const LadderPlan& p_, const LadderRunOptions& o_)
      : c(c_), plan(p_), opt(o_), results_path(p_.out_dir + "/results.jsonl") {}

  // What an earlier invocation recorded.
  Status read_previous() {
    std::error_code ec;
    fs::create_directories(plan.out_dir + "/logs", ec);
    if (ec) return Status::errorf("{}: cannot create: {}", plan.out_dir, ec.message());
    auto previous = read_results(results_path);
    if (!previous) return previous.status();
    for (const Unit& u : plan.units) planned.insert(u.name);
    for (json& j : previous.value()) {
      const std::string name = j["name"].get<std::string>();
      if (!planned.count(name))
        foreign.push_back(std::move(j));
      else if (has_eval(c.eval, j))
        recorded[name] = std::move(j);
      // else: recorded before these tasks were asked for: scored again (its training resumes at its end)
    }
    return Status::ok();
  }

  Status write_results() {
    // Other tasks of an array may have recorded their rungs since: keep them.
    std::optional<FileLock> lock;
    if (!opt.lock.empty()) {
      auto l = FileLock::acquire(opt.lock);
      if (!l) return l.status();
      lock.emplace(std::move(l.value()));
      auto now = read_results(results_path);
      if (!now) return now.status();
      foreign.clear();
      for (json& j : now.value()) {
        const std::string name = j["name"].get<std::string>();
        if (!planned.count(name))
          foreign.push_back(std::move(j));
        else if (!recorded.count(name) && has_eval(c.eval, j))
          recorded[name] = std::move(j);
      }
    }
    std::string text;
    for (const Unit& u : plan.units)
      if (recorded.count(u.name)) text += recorded[u.name].dump() + "\n";
    for (const json& j : foreign) text += j.dump() + "\n";
    return write_file_atomic(results_path, text);
  }

  Status record(const Unit& u) {
    auto rec = result_record(c, plan, u);
    if (!rec) return rec.status();
    recorded[u.name] = std::move(rec.value());
    return write_results();
  }
};

// Appends the ladder's runs to `queue` (indices in `after` are the queue's):
// per rung, the full run in segments that stop at each branch step (a branch
// is copied when its segment ends), each branch, and the full run's last segment.
void enqueue_ladder(LadderState& st, std::vector<QueuedRun>& queue) {
  const LadderConfig& c = st.c;
  const LadderRunOptions& opt = st.opt;
  const std::string& out_dir = st.plan.out_dir;
  const std::vector<RungPlan>& rungs = st.plan.rungs;
  const std::vector<Unit>& units = st.plan.units;
  const std::map<std::string, json>& recorded = st.recorded;
  // A run whose end is a result: recorded when it finishes, or once
  // `moetrain eval` has scored its final checkpoint.
  auto push_recorded = [&](QueuedRun run, size_t ui) {
    const Unit& u = units[ui];
    const bool done = run.done;
    LadderState* s = &st;
    auto rec = [s, ui] { return s->record(s->plan.units[ui]); };
    if (!c.eval.enabled()) {
      run.on_done = rec;
      queue.push_back(std::move(run));
      return;
    }
    queue.push_back(std::move(run));
    QueuedRun ev =
        queued_eval(c.eval, u.name, u.dir, out_dir + "/logs/" + u.name + ".eval.log", u.steps, queue.size() - 1);
    ev.done = done;
    ev.on_done = rec;
    queue.push_back(std::move(ev));
  };
  for (size_t ri = 0; ri < rungs.size(); ++ri) {
    if (!opt.rungs.empty() && std::find(opt.rungs.begin(), opt.rungs.end(), ri) == opt.rungs.end()) continue;
    const RungPlan& p = rungs[ri];
    const Unit& full = units[p.units.back()];
    const double per_step = full.flops / double(full.steps);
    std::vector<size_t> prev;  // the full run's previous segment
    int64_t seg_from = 0;
    std::map<int64_t, size_t> segment_at;  // branch step -> its segment's index
    for (size_t k = 0; k + 1 < p.units.size(); ++k) {
      const Unit& b = units[p.units[k]];
      if (!segment_at.count(b.branch_step)) {
        QueuedRun seg;
        seg.name = fmt::format("{} to step {}", full.name, b.branch_step);
        seg.args = train_args(c, full.sets, full.dir);
        seg.args.insert(seg.args.end(), {"--stop-at", std::to_string(b.branch_step)});
        seg.run_dir = full.dir;
        seg.log_path = out_dir + "/logs/" + full.name + ".log";
        seg.first_step = seg_from;
        seg.last_step = b.branch_step;
        seg.work = per_step * double(b.branch_step - seg_from);
        seg.after = prev;
        seg.done = recorded.count(full.name) > 0;
        const std::string full_dir = full.dir;
        std::vector<std::pair<std::string, int64_t>> copies;
        for (size_t q = k; q + 1 < p.units.size(); ++q)
          if (units[p.units[q]].branch_step == b.branch_step) copies.emplace_back(units[p.units[q]].dir, b.branch_step);
        bool all_copied = true;
        for (const auto& [dir, step] : copies) all_copied = all_copied && fs::exists(dir);
        seg.done = seg.done || all_copied;
        seg.on_done = [full_dir, copies]() -> Status {
          for (const auto& [dir, step] : copies) MT_RETURN_IF_ERROR(make_branch(full_dir, dir, step));
          return Status::ok();
        };
        segment_at[b.branch_step] = queue.size();
        prev = {queue.size()};
        seg_from = b.branch_step;
        queue.push_back(std::move(seg));
      }
      QueuedRun br;
      br.name = b.name;
      br.args = train_args(c, b.sets, b.dir);
      br.run_dir = b.dir;
      br.log_path = out_dir + "/logs/" + b.name + ".log";
      br.first_step = b.branch_step;
      br.last_step = b.steps;
      br.work = per_step * double(b.steps - b.branch_step);
      br.after = {segment_at[b.branch_step]};
      br.done = recorded.count(b.name) > 0;
      push_recorded(std::move(br), p.units[k]);
    }
    QueuedRun last;
    last.name = full.name;
    last.args = train_args(c, full.sets, full.dir);
    last.run_dir = full.dir;
    last.log_path = out_dir + "/logs/" + full.name + ".log";
    last.first_step = seg_from;
    last.last_step = full.steps;
    last.work = per_step * double(full.steps - seg_from);
    last.after = prev;
    last.done = recorded.count(full.name) > 0;
    push_recorded(std::move(last), p.units.back());
  }
}

}  // namespace

Result<std::vector<std::string>> run_ladders(const std::vector<LadderJob>& ladders, const LadderRunOptions& opt) {
  std::vector<std::unique_ptr<LadderState>> states;  // stable addresses: the queue's callbacks point at them
  std::vector<QueuedRun> queue;
  for (const LadderJob& l : ladders) {
    states.push_back(std::make_unique<LadderState>(*l.config, *l.plan, opt));
    MT_RETURN_IF_ERROR(states.back()->read_previous());
    enqueue_ladder(*states.back(), queue);
    print_plan(*l.config, *l.plan, states.back()->recorded, states.back()->results_path, opt.jobs);
  }
  RunQueueOptions qo;
  qo.jobs = opt.jobs;
  qo.progress = opt.progress;
  qo.label = opt.label;
  MT_RETURN_IF_ERROR(run_queue(queue, qo));
  std::vector<std::string> paths;
  for (auto& s : states) {
    MT_RETURN_IF_ERROR(s->write_results());
    paths.push_back(s->results_path);
  }
  return paths;
}

Result<std::string> run_ladder(const LadderConfig& c, const LadderPlan& plan, const LadderRunOptions& opt) {
  auto paths = run_ladders({LadderJob{&c, &plan}}, opt);
  if (!paths) return paths.status();
  return paths->front();
}

}  // namespace mt
