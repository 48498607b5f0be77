// mix_config.cpp — keys of the mixture-search file and their cross checks.
#include "mix/runner/mix_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "core/config_schema.h"

namespace mt {
namespace fs = std::filesystem;

void declare_keys(ConfigSchema& s, MixSearchConfig& c) {
  s.add("search.base", &c.base, "run config every proxy trains (relative to this file); needs data.dataset")
      .required();
  s.add("search.mixture", &c.mixture,
        "the hero mixture (relative to this file): its total_tokens and max_epochs bound every sampled mixture, so "
        "no proxy and no hero run repeats data; its seed orders documents")
      .required();
  s.add("search.set", &c.set, "overrides applied to every proxy, as with --set");
  s.add("search.proxies", &c.proxies, "K: mixtures sampled and trained").range(4, 100000);
  s.add("search.holdout", &c.holdout, "the last proxies, not fitted: the rank-correlation check").range(1, 100000);
  s.add("search.concentration", &c.concentration,
        "Dirichlet concentration around the natural token shares (1: alpha_i = m x share_i; higher: closer)")
      .above(0)
      .max(1e6);
  s.add("search.min_distance", &c.min_distance,
        "L1 distance every proxy's domain mixture keeps from every earlier one: no two proxies train the same "
        "mixture (draws are truncated to the caps by rejection, mix/proxy_samples.h)")
      .range(0, 2);
  s.add("search.seed", &c.seed, "sampling seed; proxy k's mixture depends only on (seed, k)");
  s.add_choice("search.domains", &c.domains, {"bucket", "topic", "quality"},
               "what the search varies: every bucket, or topics / quality levels as natural blends of their buckets");
  s.add_choice("search.regressor", &c.regressor, {"auto", "loglinear", "xgboost"},
               "the regressor the search trusts (both are fitted and checked; auto: the one with the higher held-out "
               "Spearman, log-linear on a tie)");
  s.add_choice("search.method", &c.method, {"top-k-average", "optimum"},
               "the choice: the average of the top_k predicted candidates (RegMix; stays near the proxies' mixtures) "
               "or the regressor's own optimum on the capped simplex (may sit at a cap)");
  s.add("search.candidates", &c.candidates, "mixtures the search predicts").range(1, 100000000);
  s.add("search.top_k", &c.top_k, "best candidates averaged (RegMix)").range(1, 100000000);
  s.add("search.verify", &c.verify, "also train the natural mixture and the chosen one: predicted against actual");
  s.add("search.verify_seeds", &c.verify_seeds,
        "seeds (train.seed, +1, ...) the natural and the chosen mixture are each trained with under search.verify: "
        "their difference with its standard error")
      .range(1, 64);
  s.add("search.replicates", &c.replicates,
        "the first N proxies are trained again with train.seed + 1: the seed-to-seed standard deviation of the "
        "target, which the choice must beat")
      .range(0, 100000);
  s.add("search.transfer_scale", &c.transfer_scale,
        "also train proxies, the natural and the chosen mixture at this many times the proxy's tokens (the same "
        "hero-scale schedules read further, train.steps x this): the rank correlation between the two scales, and "
        "whether the choice still beats natural at the larger one")
      .range(0, 1000)
      .note("0 = one scale only");
  s.add("search.transfer_proxies", &c.transfer_proxies, "proxies trained at search.transfer_scale: the first N")
      .range(0, 100000)
      .note("0 = all of them");
  s.add("search.bootstrap", &c.bootstrap,
        "refits of the chosen regressor on bootstrap resamples of the proxies: the 90% interval of the predicted "
        "gain over natural; the natural mixture is kept unless the interval is above 0 and the gain above the seed "
        "noise")
      .range(0, 100000)
      .note("0 = no interval: the regressor's choice is taken as it is");
  s.add_map(
       "target", &c.target,
       "\"NAME\" = weight of a term of the target (minimised): \"GLOB\" or \"loss:GLOB\" the held-out loss of "
       "the buckets matching the glob over <topic>/<quality>, \"bpb:GLOB\" their bits per byte, "
       "\"acc:TASK\" / \"acc_norm:TASK\" 1 - that accuracy on a task of eval.tasks, \"text:NAME\" the bits per "
       "byte on a text set of eval.text_sets (not a training bucket); empty = every bucket's held-out loss, equally")
      .min(0);
  declare_keys(s, c.eval, /*with_metric=*/false);
  s.add("reuse.previous", &c.reuse_previous,
        "an earlier mixture file (relative to this file): keep its proportions for the unchanged buckets")
      .note("\"\" = search from scratch");
  s.add("reuse.changed", &c.reuse_changed, "globs of the buckets whose data changed (new buckets count as changed)")
      .or_one_string();
}

Result<TargetName> parse_target_name(const std::string& key) {
  using K = TargetName::Kind;
  const size_t colon = key.find(':');
  if (colon == std::string::npos) return TargetName{K::kLoss, key};
  const std::string prefix = key.substr(0, colon), what = key.substr(colon + 1);
  TargetName t{K::kLoss, what};
  if (prefix == "loss") t.kind = K::kLoss;
  else if (prefix == "bpb") t.kind = K::kBitsPerByte;
  else if (prefix == "acc") t.kind = K::kAcc;
  else if (prefix == "acc_norm") t.kind = K::kAccNorm;
  else if (prefix == "text")
    t.kind = K::kTextSet;
  else
    return Status::errorf(
        "unknown target kind \"{}\" (a target is \"GLOB\", \"loss:GLOB\", \"bpb:GLOB\", "
        "\"acc:TASK\", \"acc_norm:TASK\" or \"text:NAME\")",
        prefix);
  const char* named = t.of_buckets() ? "buckets" : t.kind == K::kTextSet ? "text set" : "task";
  if (what.empty()) return Status::errorf("\"{}:\" names no {}", prefix, named);
  return t;
}

const char* target_prefix(TargetName::Kind k) {
  switch (k) {
    case TargetName::Kind::kLoss: return "loss";
    case TargetName::Kind::kBitsPerByte: return "bpb";
    case TargetName::Kind::kAcc: return "acc";
    case TargetName::Kind::kAccNorm: return "acc_norm";
    case TargetName::Kind::kTextSet:
      return "text";
  }
  return "?";
}

Result<MixSearchConfig> load_mix_search_config(const std::string& path, const std::vector<std::string>& overrides) {
  MixSearchConfig c;
  c.source = path;
  ConfigSchema s("mixture search file");
  declare_keys(s, c);
  ConfigOrigins o;
  MT_RETURN_IF_ERROR(s.load_file(path, overrides, o));
  auto resolve = [&](std::string& p) {
    if (!p.empty() && !fs::path(p).is_absolute()) p = (fs::path(path).parent_path() / p).lexically_normal().string();
  };
  resolve(c.base);
  resolve(c.mixture);
  resolve(c.reuse_previous);
  if (c.holdout >= c.proxies)
    return o.error("search.holdout", fmt::format("must leave proxies to fit: it is {} of search.proxies = {}",
                                                 c.holdout, c.proxies));
  if (c.proxies - c.holdout < 3)
    return o.error("search.proxies", "needs at least 3 fitted proxies besides search.holdout");
  if (c.top_k > c.candidates) return o.error("search.top_k", "must not exceed search.candidates");
  if (c.transfer_scale == 1)
    return o.error("search.transfer_scale", "1 is the proxies' own scale: 0 (off) or 2 and more");
  if (c.transfer_proxies > c.proxies)
    return o.error("search.transfer_proxies", fmt::format("at most search.proxies = {}", c.proxies));
  if (c.transfer_scale > 0 && (c.transfer_proxies == 0 ? c.proxies : c.transfer_proxies) < 3)
    return o.error("search.transfer_proxies", "a rank correlation needs at least 3 proxies at both scales");
  if (c.replicates > c.proxies)
    return o.error("search.replicates", fmt::format("replicates proxies: at most search.proxies = {}", c.proxies));
  if (c.reuse_previous.empty() && !c.reuse_changed.empty())
    return o.error("reuse.changed", "needs reuse.previous (the mixture being reused)");
  if (!c.reuse_previous.empty() && c.domains != "bucket")
    return o.error("search.domains", "must be \"bucket\" with [reuse] (the changed buckets are the domains)");
  MT_RETURN_IF_ERROR(check_eval_targets(c.eval, path, o));
  double sum = 0;
  for (const auto& [name, w] : c.target) {
    sum += w;
    // Where the key is: quoted in the file unless it is a bare TOML key.
    const std::string key = o.was_set("target." + name) ? "target." + name : "target." + toml_quote(name);
    auto t = parse_target_name(name);
    if (!t) return o.error(key, t.status().message());
    if (t->kind == TargetName::Kind::kTextSet &&
        std::find(c.eval.text_set_names.begin(), c.eval.text_set_names.end(), t->what) == c.eval.text_set_names.end())
      return o.error(
          key, fmt::format(
                   "names text set \"{}\", which is not among eval.text_sets ({})", t->what,
                   c.eval.text_set_names.empty() ? "none" : fmt::format("{}", fmt::join(c.eval.text_set_names, ", "))));
    if ((t->kind == TargetName::Kind::kAcc || t->kind == TargetName::Kind::kAccNorm) &&
        std::find(c.eval.names.begin(), c.eval.names.end(), t->what) == c.eval.names.end())
      return o.error(key, fmt::format("names task \"{}\", which is not among eval.tasks ({})", t->what,
                                      c.eval.names.empty() ? "none" : fmt::format("{}", fmt::join(c.eval.names, ", "))));
    if (t->kind == TargetName::Kind::kAccNorm &&
        std::find(c.eval.generative.begin(), c.eval.generative.end(), t->what) != c.eval.generative.end())
      return o.error(key,
                     fmt::format("task \"{}\" is generative: exact match has acc only (\"acc:{}\")", t->what, t->what));
  }
  if (!c.target.empty() && !(sum > 0)) return o.error("target", "needs a positive weight");
  return c;
}

}  // namespace mt
