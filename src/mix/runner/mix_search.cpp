// mix_search.cpp — see mix_search.h. Orchestration: the space and the
// sampled mixtures are planned before any training; proxies run through the
// run queue (train/run_queue.h); the fits and the search are mix/'s.
#include "mix/runner/mix_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <map>
#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/subprocess.h"
#include "mix/dirichlet.h"
#include "mix/noise.h"
#include "mix/rank.h"
#include "mix/runner/mix_fit.h"
#include "mix/runner/mix_records.h"
#include "mix/runner/mix_report.h"
#include "mix/runner/mix_space.h"
#include "mix/search.h"
#include "mix/target_model.h"
#include "train/run_config.h"
#include "rundir/metrics_log.h"
#include "train/post_eval.h"
#include "train/run_queue.h"
#include "train/trainer.h"

namespace mt {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Below this share of draws accepted by the caps, the search warns before training.
constexpr double kLittleRoom = 0.05;

std::string proxy_name(int64_t k) { return fmt::format("p{:03d}", k); }

// Run r's mixture trained again: with train.seed + seed_offset ("<r>-r<offset>"),
// or at `scale` times its tokens ("<r>-x<scale>").
MixRun variant_of(const MixRun& r, int64_t seed_offset, int64_t scale) {
  MixRun x = r;
  x.name = scale > 1 ? fmt::format("{}-x{}", r.name, scale) : fmt::format("{}-r{}", r.name, seed_offset);
  x.mixture = r.mixture_name();
  x.seed_offset = seed_offset;
  x.scale = scale;
  return x;
}
MixRun replicate_of(const MixRun& r, int64_t offset) { return variant_of(r, offset, 1); }
MixRun scaled_of(const MixRun& r, int64_t scale) { return variant_of(r, 0, scale); }

// search.json's description of the search: the config, the space, the
// target, every proxy and the chosen mixture.
void describe_search(const MixSearchConfig& c, const MixSpace& s, const std::string& chosen,
                     const mix::SearchResult& best, const MixRun& best_run, const std::vector<json>& proxies,
                     json& result) {
  result["config"] = {{"source", c.source},
                      {"base", c.base},
                      {"mixture", c.mixture},
                      {"proxies", c.proxies},
                      {"holdout", c.holdout},
                      {"concentration", c.concentration},
                      {"min_distance", c.min_distance},
                      {"seed", c.seed},
                      {"domains", c.reuse_previous.empty() ? c.domains : "reuse"},
                      {"regressor", chosen},
                      {"method", c.method},
                      {"candidates", c.candidates},
                      {"top_k", c.top_k}};
  result["hero_tokens"] = s.hero.total_tokens;
  result["proxy_tokens"] = s.proxy_sequences * s.seq_len;
  result["buckets"] = {{"names", s.buckets}, {"natural", s.natural}, {"cap", s.cap}, {"target", s.target}};
  json terms = json::array();
  for (const TargetTerm& t : s.terms) terms.push_back({{"name", t.column}, {"weight", t.weight}});
  result["target"] = terms;
  json doms = json::array();
  for (size_t d = 0; d < s.domains.size(); ++d)
    doms.push_back(
        {{"name", s.domains[d].name}, {"center", s.center[d]}, {"cap", s.domain_cap[d]}, {"best", best.weights[d]}});
  result["domains"] = doms;
  result["proxies"] = proxies;
  result["best"] = {{"weights", best_run.bucket_w},
                    {"domain_weights", best.weights},
                    {"predicted", best.predicted},
                    {"method", best.method},
                    {"best_candidate_predicted", best.best_candidate_predicted},
                    {"top_k_average_predicted", best.top_k_average_predicted},
                    {"mixture_file", "best-mixture.toml"}};
}

// The closing lines: the regressors' held-out ranking, the noise, the
// choice, the verification and where the report is.
void print_outcome(const MixSearchConfig& c, const json& result, const mix::SearchResult& best, double natural_pred,
                   const std::string& out) {
  const json& reg = result["regressors"];
  fmt::print(stderr, "# held-out rank correlation (Spearman, {} proxies): log-linear {}, xgboost {}\n", c.holdout,
             reg["loglinear"].value("spearman", json()).dump(), reg["xgboost"].value("spearman", json()).dump());
  if (c.replicates > 0)
    fmt::print(stderr, "# seed noise: one run's target varies by {} (standard deviation, {} proxies trained twice)\n",
               result["noise"]["sd"].dump(), c.replicates);
  fmt::print(stderr, "# regressor's mixture: predicted target {:.5f} (natural shares: {:.5f})\n", best.predicted,
             natural_pred);
  fmt::print(stderr, "# choice: {}; best-mixture.toml is the {} mixture\n",
             result["choice"]["reason"].get<std::string>(),
             result["choice"]["kept"] == "natural" ? "natural" : "regressor's");
  if (c.verify) {
    const json& v = result["verify"];
    const json& d = v["difference"];
    fmt::print(stderr, "# trained: regressor's mixture {:.5f}, natural {:.5f}; difference {:.5f}{} ({} seed{} each)\n",
               v["best"]["actual"].get<double>(), v["natural"]["actual"].get<double>(), d["mean"].get<double>(),
               d["std_error"].is_number() ? fmt::format(" +- {:.5f}", d["std_error"].get<double>()) : "",
               c.verify_seeds, c.verify_seeds == 1 ? "" : "s");
  }
  if (result.contains("transfer")) {
    const json& t = result["transfer"];
    fmt::print(stderr,
               "# scale transfer (x{}, {} proxies): Spearman {:.3f} between the scales; at x{} the regressor's "
               "mixture {:.5f}, natural {:.5f}\n",
               t["scale"].get<int64_t>(), t["proxies"].get<int64_t>(), t["spearman"].get<double>(),
               t["scale"].get<int64_t>(), t["best"].get<double>(), t["natural"].get<double>());
  }
  fmt::print(stderr, "# report: {}/report.html\n", out);
}

const char* mixture_comment(const std::string& run) {
  return run == "natural" ? "natural token shares (moetrain mix search)"
                          : "sampled proxy mixture (moetrain mix search)";
}

}  // namespace

Result<MixSearchPlan> plan_mix_search(const MixSearchConfig& c, const std::string& out_dir) {
  MixSearchPlan plan;
  plan.out_dir = out_dir;
  auto base = load_run_config(c.base, c.set);
  if (!base) return Status::errorf("{}: search.base: {}", c.source, base.status().message());
  MT_RETURN_IF_ERROR(check_trainer_limits(base.value()));
  plan.base = std::move(base.value());
  const TrainConfig& tc = plan.base.train;
  if (plan.base.data.dataset.empty())
    return Status::errorf("{}: search.base {} trains without data.dataset: a mixture search needs a bucketed dataset",
                          c.source, c.base);
  auto space = make_mix_space(c, plan.base.data.dataset, tc.seq_len, tc.steps * tc.grad_accum * tc.batch_size,
                              tc.eval_batches * tc.batch_size);
  if (!space) return space.status();
  plan.space = std::move(space.value());
  const MixSpace& s = plan.space;
  const int64_t m = int64_t(s.domains.size());
  if (m < 2) return Status::errorf("{}: only {} domain to vary: nothing to search", c.source, m);
  if (c.transfer_scale > 0 && s.proxy_sequences * c.transfer_scale > s.hero_sequences)
    return Status::errorf(
        "{}: search.transfer_scale = {}: {} sequences a proxy at that scale reads are more than the hero run's {} "
        "(search.mixture's total_tokens / train.seq_len)",
        c.source, c.transfer_scale, s.proxy_sequences * c.transfer_scale, s.hero_sequences);

  mix::ProxySampleOptions po;
  po.concentration = c.concentration;
  po.min_distance = c.min_distance;
  po.seed = c.seed;
  auto drawn = mix::sample_proxies(s.center, s.domain_cap, c.proxies, po);
  if (!drawn) return Status::errorf("{}: {}", c.source, drawn.status().message());
  plan.samples = std::move(drawn.value());
  const auto& samples = plan.samples.mixtures;
  for (int64_t k = 0; k < c.proxies; ++k)
    plan.runs.push_back(
        {proxy_name(k), samples[size_t(k)], mix::expand(s.domains, samples[size_t(k)], int64_t(s.buckets.size())), ""});
  if (c.verify) {
    plan.runs.push_back({"natural", {}, mix::within_caps_or_projected(s.natural, s.cap), ""});
  }
  // Replicates: the same mixtures with another seed (the seed noise).
  for (int64_t k = 0; k < c.replicates; ++k) plan.runs.push_back(replicate_of(plan.runs[size_t(k)], 1));
  // Each mixture planned at the hero scale (never repeats data).
  for (const MixRun& r : plan.runs) {
    if (!r.mixture.empty()) continue;  // a replicate trains another run's mixture
    const std::string text = mixture_file_text(s, r.bucket_w, mixture_comment(r.name));
    auto hero = plan_at_hero_scale(s, text, out_dir + "/mixtures/" + r.name + ".toml");
    if (!hero) return Status::errorf("{}: {}", r.name, hero.status().message());
    plan.texts[r.name] = text;
    plan.plans[r.name] = hero.value();
  }
  return plan;
}

OutputOwner mix_search_owner(const MixSearchPlan& plan) {
  OutputOwner o;
  o.command = "mix search";
  o.config = flatten_toml(to_toml(plan.base), "base.");
  o.config["hero.total_tokens"] = fmt::format("{}", plan.space.hero.total_tokens);
  for (const auto& [name, text] : plan.texts) o.parts[name] = flatten_toml(text, "mixture.");
  return o;
}

Result<std::string> run_mix_search(const MixSearchConfig& c, MixSearchPlan& plan, const MixSearchOptions& opt) {
  const std::string out = plan.out_dir;
  const MixSpace& s = plan.space;
  const TrainConfig& tc = plan.base.train;
  const int64_t m = int64_t(s.domains.size());
  std::vector<MixRun>& runs = plan.runs;
  std::map<std::string, MixturePlan>& plans = plan.plans;
  std::error_code ec;
  fs::create_directories(out + "/logs", ec);
  fs::create_directories(out + "/mixtures", ec);
  if (ec) return Status::errorf("{}: cannot create: {}", out, ec.message());

  // Each mixture as a file (unless an earlier invocation wrote the same).
  auto write_mixture = [&](const MixRun& r, const std::string& what) -> Status {
    const std::string path = out + "/mixtures/" + r.name + ".toml";
    if (!plan.texts.count(r.name)) {
      const std::string text = mixture_file_text(s, r.bucket_w, what);
      auto hero = plan_at_hero_scale(s, text, path);
      if (!hero) return Status::errorf("{}: {}", r.name, hero.status().message());
      plan.texts[r.name] = text;
      plans[r.name] = hero.value();
    }
    const std::string& text = plan.texts.at(r.name);
    if (fs::exists(path)) {
      auto old = read_file(path, "mixture");
      if (old && old.value() == text) return Status::ok();  // as an earlier invocation wrote it
    }
    return write_file_atomic(path, text);
  };
  for (const MixRun& r : runs)
    if (r.mixture.empty()) MT_RETURN_IF_ERROR(write_mixture(r, mixture_comment(r.name)));

  // What an earlier invocation finished.
  const std::string proxies_path = out + "/proxies.jsonl";
  std::map<std::string, json> recorded = recorded_proxies(proxies_path, c, s);
  auto write_proxies = [&](const std::vector<MixRun>& all) {
    std::string text;
    for (const MixRun& r : all)
      if (recorded.count(r.name)) text += recorded[r.name].dump() + "\n";
    return write_file_atomic(proxies_path, text);
  };

  auto queue_of = [&](const std::vector<MixRun>& todo, const std::vector<MixRun>& all) {
    std::vector<QueuedRun> q;
    for (const MixRun& r : todo) {
      QueuedRun qr;
      qr.name = r.name;
      qr.args = {"train", "--config", c.base};
      std::vector<std::string> sets = c.set;
      sets.push_back("data.mixture=" + fs::absolute(out + "/mixtures/" + r.mixture_name() + ".toml").string());
      if (r.seed_offset != 0) sets.push_back(fmt::format("train.seed={}", tc.seed + uint64_t(r.seed_offset)));
      const int64_t steps = tc.steps * r.scale;
      if (r.scale != 1) sets.push_back(fmt::format("train.steps={}", steps));
      sets.push_back(fmt::format("train.eval_every={}", steps));
      for (const std::string& x : sets) qr.args.insert(qr.args.end(), {"--set", x});
      qr.run_dir = out + "/" + r.name;
      qr.log_path = out + "/logs/" + r.name + ".log";
      qr.args.insert(qr.args.end(), {"--run-dir", qr.run_dir, "--resume", "--no-progress"});
      qr.last_step = steps;
      qr.done = recorded.count(r.name) > 0;
      const MixRun run = r;
      const std::string dir = qr.run_dir, log = qr.log_path;
      auto record = [&, run, dir, log]() -> Status {
        auto rec = read_run(s, c.eval, run, plans.at(run.mixture_name()), dir, tc.steps, log);
        if (!rec) return rec.status();
        recorded[run.name] = rec.value();
        return write_proxies(all);
      };
      const bool done = qr.done;
      if (!s.needs_eval) qr.on_done = record;
      q.push_back(std::move(qr));
      if (s.needs_eval) {  // then `moetrain eval` of its final checkpoint, which records it
        QueuedRun ev = queued_eval(c.eval, r.name, dir, out + "/logs/" + r.name + ".eval.log", steps, q.size() - 1);
        ev.done = done;
        ev.on_done = record;
        q.push_back(std::move(ev));
      }
    }
    return q;
  };

  fmt::print(stderr,
             "# mix search: {} buckets, {} domains ({}), {} proxies of {} sequences x {} tokens ({} held out), hero "
             "budget {} tokens; {} at once; logs in {}/logs\n",
             s.buckets.size(), m, c.reuse_previous.empty() ? c.domains : "reuse", c.proxies, s.proxy_sequences,
             s.seq_len, c.holdout, s.hero.total_tokens, opt.jobs, out);
  std::vector<std::string> names;
  for (const auto& d : s.domains) names.push_back(d.name);
  fmt::print(stderr, "# proxies: {}\n", mix::describe(plan.samples, names));
  if (plan.samples.cap_acceptance() < kLittleRoom)
    fmt::print(stderr,
               "# warning: the caps leave little room: they accepted {:.1f}% of the Dirichlet's draws around the "
               "natural shares ({} of {} proxies pulled inside them), so the proxies crowd the caps' boundary; the "
               "hero budget (search.mixture's total_tokens) is what sets the caps\n",
               100.0 * plan.samples.cap_acceptance(), plan.samples.pulled_inside, c.proxies);
  RunQueueOptions qo;
  qo.jobs = opt.jobs;
  qo.progress = opt.progress;
  qo.label = "proxies";
  {
    auto q = queue_of(runs, runs);
    MT_RETURN_IF_ERROR(run_queue(q, qo));
  }

  // Fit: weights -> per-bucket target losses, checked on the held-out proxies.
  std::vector<json> proxies;
  for (int64_t k = 0; k < c.proxies; ++k) proxies.push_back(recorded.at(proxy_name(k)));
  json result;
  auto fitted = fit_target(c, s, runs, proxies, result);
  if (!fitted) return fitted.status();
  const mix::TargetModel& model = fitted.value().model;
  const mix::SearchResult& best = fitted.value().best;
  const std::string& chosen = fitted.value().chosen;
  MixRun best_run{"best", {}, mix::expand(s.domains, best.weights, int64_t(s.buckets.size())), ""};
  MT_RETURN_IF_ERROR(write_mixture(best_run, fmt::format("the mixture search's choice: predicted target {:.5f} "
                                                         "({}, {} regressor on {} proxies)",
                                                         best.predicted, best.method, chosen, c.proxies)));
  // The noise: the replicates' seed-to-seed spread, and the gain's interval
  // over bootstrap refits. The natural mixture is kept unless the gain is
  // clear of both (mix/noise.h).
  std::vector<std::pair<double, double>> pairs;
  for (int64_t k = 0; k < c.replicates; ++k)
    pairs.push_back({recorded.at(proxy_name(k))["target"].get<double>(),
                     recorded.at(proxy_name(k) + "-r1")["target"].get<double>()});
  const double noise_sd = mix::replicate_sd(pairs);
  mix::MixtureChoice choice;
  mix::GainInterval gain;
  const FittedTarget& ft = fitted.value();
  if (c.bootstrap > 0) {
    auto g = mix::bootstrap_gain(ft.kind, ft.X, ft.Y, ft.lambda, c.seed, s.center, best.weights, c.bootstrap);
    if (!g) return g.status();
    gain = g.value();
    choice = mix::choose_mixture(gain, noise_sd);
  }
  const MixRun natural_run{"natural", {}, mix::within_caps_or_projected(s.natural, s.cap), ""};
  if (choice.keep_natural && !c.verify) MT_RETURN_IF_ERROR(write_mixture(natural_run, mixture_comment("natural")));
  const std::string best_path = out + "/best-mixture.toml";
  const std::string kept = choice.keep_natural ? "natural" : "best";
  MT_RETURN_IF_ERROR(write_file_atomic(best_path, read_file(out + "/mixtures/" + kept + ".toml", "mixture").value()));

  // Verification: the regressor's choice and the natural mixture, each with search.verify_seeds seeds.
  if (c.verify) {
    std::vector<MixRun> todo = {best_run};
    for (int64_t v = 1; v < c.verify_seeds; ++v) {
      todo.push_back(replicate_of(natural_run, v));
      todo.push_back(replicate_of(best_run, v));
    }
    runs.insert(runs.end(), todo.begin(), todo.end());
    auto q = queue_of(todo, runs);
    MT_RETURN_IF_ERROR(run_queue(q, qo));
  }

  // Scale transfer: the first proxies, the natural and the regressor's
  // mixture again at transfer_scale times the tokens (their hero-scale
  // schedules read further: the same downsampling rule at both scales).
  std::vector<MixRun> larger;
  const int64_t n_transfer = c.transfer_proxies > 0 ? c.transfer_proxies : c.proxies;
  if (c.transfer_scale > 0) {
    for (int64_t k = 0; k < n_transfer; ++k) larger.push_back(scaled_of(runs[size_t(k)], c.transfer_scale));
    larger.push_back(scaled_of(natural_run, c.transfer_scale));
    larger.push_back(scaled_of(best_run, c.transfer_scale));
    if (!c.verify) MT_RETURN_IF_ERROR(write_mixture(natural_run, mixture_comment("natural")));
    runs.insert(runs.end(), larger.begin(), larger.end());
    auto q = queue_of(larger, runs);
    MT_RETURN_IF_ERROR(run_queue(q, qo));
  }

  // search.json: everything the report and a reader need.
  describe_search(c, s, chosen, best, best_run, proxies, result);
  const mix::ProxySamples& ps = plan.samples;
  result["sampling"] = {{"distinct", ps.mixtures.size()},
                        {"draws", ps.draws},
                        {"cap_acceptance", ps.cap_acceptance()},
                        {"pulled_inside", ps.pulled_inside},
                        {"too_close", ps.too_close},
                        {"min_pair_distance", ps.min_pair_distance},
                        {"lo", ps.lo},
                        {"hi", ps.hi}};
  const double natural_pred = model.predict(s.center);
  result["natural_predicted"] = natural_pred;
  result["noise"] = {{"replicates", c.replicates},
                     {"pairs", json::array()},
                     {"sd", std::isfinite(noise_sd) ? json(noise_sd) : json()}};
  for (const auto& [a, b] : pairs) result["noise"]["pairs"].push_back({a, b});
  if (c.bootstrap > 0)
    result["gain"] = {{"predicted", gain.predicted}, {"lo", gain.lo}, {"hi", gain.hi}, {"resamples", gain.resamples}};
  result["choice"] = {{"kept", kept}, {"reason", c.bootstrap > 0 ? choice.reason : "search.bootstrap = 0"}};
  if (c.verify) {
    auto targets = [&](const std::string& name) {
      std::vector<double> v = {recorded.at(name)["target"].get<double>()};
      for (int64_t r = 1; r < c.verify_seeds; ++r)
        v.push_back(recorded.at(fmt::format("{}-r{}", name, r))["target"].get<double>());
      return v;
    };
    const std::vector<double> nat = targets("natural"), bst = targets("best");
    const mix::SeedDifference d = mix::seed_difference(bst, nat, noise_sd);
    auto mean = [](const std::vector<double>& v) {
      return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    };
    // "actual": the mean over the seeds (the one run with search.verify_seeds = 1).
    result["verify"] = {{"natural", {{"predicted", natural_pred}, {"actual", mean(nat)}, {"seeds", nat}}},
                        {"best", {{"predicted", best.predicted}, {"actual", mean(bst)}, {"seeds", bst}}},
                        {"difference",
                         {{"mean", d.mean},
                          {"std_error", std::isfinite(d.std_error) ? json(d.std_error) : json()},
                          {"seeds", c.verify_seeds}}}};
  }
  if (c.transfer_scale > 0) {
    std::vector<double> small, big;
    json pairs_json = json::array();
    for (int64_t k = 0; k < n_transfer; ++k) {
      small.push_back(recorded.at(proxy_name(k))["target"].get<double>());
      big.push_back(recorded.at(larger[size_t(k)].name)["target"].get<double>());
      pairs_json.push_back({small.back(), big.back()});
    }
    const double nat = recorded.at(larger[size_t(n_transfer)].name)["target"].get<double>();
    const double bst = recorded.at(larger[size_t(n_transfer) + 1].name)["target"].get<double>();
    result["transfer"] = {{"scale", c.transfer_scale},
                          {"proxies", n_transfer},
                          {"spearman", mix::spearman(small, big)},
                          {"pearson", mix::pearson(small, big)},
                          {"targets", pairs_json},
                          {"natural", nat},
                          {"best", bst},
                          {"best_beats_natural", bst < nat}};
  }
  MT_RETURN_IF_ERROR(write_file_atomic(out + "/search.json", result.dump(2) + "\n"));
  MT_RETURN_IF_ERROR(write_file_atomic(out + "/report.html", mix_search_html(result)));

  print_outcome(c, result, best, natural_pred, out);
  return best_path;
}

}  // namespace mt
