// ladder_run.cpp — see ladder_run.h. Orchestration only: each rung is a
// plain Trainer run in its own run directory (resumable like any run).
#include "ladder/runner/ladder_run.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/config_schema.h"
#include "core/file_io.h"
#include "core/timer.h"
#include "model/flops.h"
#include "model/weights.h"
#include "train/run_config.h"
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
    if (r.name.empty() || r.name.find('/') != std::string::npos)
      return o.error(fmt::format("rung[{}].name", i), "must be a non-empty file name");
    if (r.d_model % c.head_dim != 0)
      return o.error(fmt::format("rung[{}].d_model", i), fmt::format("must be a multiple of ladder.head_dim = {}", c.head_dim));
  }
  return c;
}

namespace {

// The rung's run config: the base, the ladder's overrides and its shape.
Result<RunConfig> rung_config(const LadderConfig& c, const LadderRung& r) {
  std::vector<std::string> sets = c.set;
  sets.push_back(fmt::format("model.d_model={}", r.d_model));
  sets.push_back(fmt::format("model.n_layers={}", r.n_layers));
  sets.push_back(fmt::format("model.n_heads={}", r.d_model / c.head_dim));
  if (c.expert_ratio > 0) sets.push_back(fmt::format("model.d_expert={}", std::max<int64_t>(1, std::llround(c.expert_ratio * double(r.d_model)))));
  if (c.ffn_ratio > 0) sets.push_back(fmt::format("model.d_ff={}", std::max<int64_t>(1, std::llround(c.ffn_ratio * double(r.d_model)))));
  auto cfg = load_run_config(c.base, sets);
  if (!cfg) return Status::errorf("{}: rung {}: {}", c.source, r.name, cfg.status().message());
  return cfg;
}

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
    if (!j.is_object() || !j.contains("name")) return Status::errorf("{}:{}: not a ladder result", path, line);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

Result<std::string> run_ladder(const LadderConfig& c, const LadderRunOptions& opt) {
  std::error_code ec;
  fs::create_directories(opt.out_dir, ec);
  if (ec) return Status::errorf("{}: cannot create: {}", opt.out_dir, ec.message());
  const std::string results_path = opt.out_dir + "/results.jsonl";
  auto results = read_results(results_path);
  if (!results) return results.status();
  std::set<std::string> done;
  for (const json& j : results.value()) done.insert(j["name"].get<std::string>());

  // Plan every rung first (sizes, steps, FLOPs): errors surface before any training.
  struct Plan {
    RunConfig cfg;
    int64_t steps = 0;
    double active = 0, tokens = 0, flops = 0;
  };
  std::vector<Plan> plans;
  double total_flops = 0, done_flops = 0;
  for (const LadderRung& r : c.rungs) {
    auto shape = rung_config(c, r);
    if (!shape) return shape.status();
    TrainConfig& tc = shape->train;
    const double per_token = flops_per_token(shape->model, tc.seq_len);
    const double active = double(active_matmul_params(shape->model));
    const double want_tokens = r.flops > 0 ? r.flops / per_token : c.tokens_per_param * active;
    const double tokens_per_step = double(tc.batch_size * tc.seq_len * tc.grad_accum);
    const int64_t steps = std::max<int64_t>(1, std::llround(want_tokens / tokens_per_step));
    // The length, one held-out pass at the end, and four checkpoints: none of
    // them changes a cross-field check the load above ran.
    tc.steps = steps;
    tc.eval_every = steps;
    tc.checkpoint_every = std::max<int64_t>(1, steps / 4);
    const double tokens = double(steps) * tokens_per_step;
    plans.push_back({shape.value(), steps, active, tokens, per_token * tokens});
    total_flops += plans.back().flops;
    if (done.count(r.name)) done_flops += plans.back().flops;
  }

  const double t0 = now_seconds();
  double run_flops = 0;  // trained in this invocation, for the ETA
  for (size_t i = 0; i < c.rungs.size(); ++i) {
    const LadderRung& r = c.rungs[i];
    Plan& p = plans[i];
    if (done.count(r.name)) {
      fmt::print(stderr, "# ladder: rung {}/{} {} already in {}\n", i + 1, c.rungs.size(), r.name, results_path);
      continue;
    }
    const double elapsed = now_seconds() - t0;
    const double left = total_flops - done_flops;
    fmt::print(stderr,
               "# ladder: rung {}/{} {} (d_model {}, {} layers): {:.3g} active params, {:.3g} tokens, {} steps, "
               "{:.3g} FLOP; {:.0f}% of the ladder's compute done{}\n",
               i + 1, c.rungs.size(), r.name, r.d_model, r.n_layers, p.active, p.tokens, p.steps, p.flops,
               100.0 * done_flops / total_flops,
               run_flops > 0 ? fmt::format(", ladder ETA {:.0f} s", elapsed / run_flops * left) : std::string());
    TrainerOptions topt;
    topt.run_dir = opt.out_dir + "/" + r.name;
    topt.resume = true;  // a killed ladder continues the rung from its checkpoint
    topt.progress = opt.progress;
    topt.print_config = false;
    auto trainer = Trainer::create(p.cfg, topt);
    if (!trainer) return Status::errorf("rung {}: {}", r.name, trainer.status().message());
    MT_RETURN_IF_ERROR(trainer.value()->run());
    // The held-out loss of the last step (the eval pass at the end).
    std::ifstream in(topt.run_dir + "/metrics.jsonl");
    json last;
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) last = json::parse(line, nullptr, false);
    if (!last.is_object() || !last.contains("eval_loss") || !last["eval_loss"].is_number())
      return Status::errorf("rung {}: no held-out loss: the base config needs held-out data (data.dataset with eval "
                            "documents, or data.eval_frac > 0)",
                            r.name);
    json rec;
    rec["name"] = r.name;
    rec["active_params"] = p.active;
    rec["total_params"] = double(trainer.value()->model().layout().total());
    if (p.cfg.model.n_experts > 0) rec["n_experts"] = p.cfg.model.n_experts;
    rec["tokens"] = p.tokens;
    rec["flops"] = p.flops;
    rec["loss"] = last["eval_loss"];
    rec["meta"] = {{"d_model", r.d_model},
                   {"n_layers", r.n_layers},
                   {"steps", p.steps},
                   {"train_loss", last.value("loss", 0.0)},
                   {"state_hash", trainer.value()->state_hash()}};
    if (last.contains("bucket_eval_loss")) rec["meta"]["bucket_eval_loss"] = last["bucket_eval_loss"];
    results->push_back(rec);
    std::string text;
    for (const json& j : results.value()) text += j.dump() + "\n";
    MT_RETURN_IF_ERROR(write_file_atomic(results_path, text));
    done_flops += p.flops;
    run_flops += p.flops;
  }
  return results_path;
}

}  // namespace mt
