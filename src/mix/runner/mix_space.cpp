// mix_space.cpp — see mix_space.h.
#include "mix/runner/mix_space.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/config_schema.h"
#include "mix/dirichlet.h"

namespace mt {
namespace {

// The same glob rule as mixture files ("*" matches "/" too).
bool glob(const std::string& pattern, const std::string& s) { return fnmatch(pattern.c_str(), s.c_str(), 0) == 0; }

Status set_target(const MixSearchConfig& c, MixSpace& s) {
  using K = TargetName::Kind;
  s.target.assign(s.buckets.size(), 0.0);
  std::vector<bool> has_eval(s.buckets.size());
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    // As the trainer's eval pass: a split too small for it is left out.
    has_eval[b] = held_out_windows(s.dataset->buckets()[b], s.seq_len) >= std::max<int64_t>(1, s.held_out_sequences);
  }
  auto bucket_term = [&](K kind, size_t b, double w) {
    s.terms.push_back({kind, b, "", w, fmt::format("{}:{}", target_prefix(kind), s.buckets[b])});
  };
  if (c.target.empty()) {
    for (size_t b = 0; b < s.buckets.size(); ++b)
      if (has_eval[b]) bucket_term(K::kLoss, b, 1.0);
  } else {
    // A bucket is matched by one glob per kind at most.
    std::map<std::pair<K, size_t>, std::string> matched_by;
    for (const auto& [name, w] : c.target) {
      const TargetName t = parse_target_name(name).value();  // checked when the file was read
      if (!t.of_buckets()) {
        s.terms.push_back({t.kind, 0, t.what, w, name});
        continue;
      }
      bool any = false;
      for (size_t b = 0; b < s.buckets.size(); ++b) {
        if (!glob(t.what, s.buckets[b])) continue;
        auto [it, fresh] = matched_by.emplace(std::pair(t.kind, b), name);
        if (!fresh)
          return Status::errorf("{}: [target] \"{}\" and \"{}\" both match bucket {}", c.source, it->second, name,
                                s.buckets[b]);
        if (!has_eval[b]) continue;
        bucket_term(t.kind, b, w);
        any = true;
      }
      if (!any)
        return Status::errorf(
            "{}: [target] \"{}\" matches no bucket whose held-out split holds the proxies' eval "
            "pass (train.eval_batches x train.batch_size = {} sequences of {} tokens)",
            c.source, name, s.held_out_sequences, s.seq_len);
    }
  }
  // Columns in a fixed order: losses by bucket, bits per byte by bucket, then tasks and sets as listed.
  std::erase_if(s.terms, [](const TargetTerm& t) { return t.weight == 0; });
  std::stable_sort(s.terms.begin(), s.terms.end(), [](const TargetTerm& a, const TargetTerm& b) {
    const bool ta = !TargetName::of_buckets(a.kind), tb = !TargetName::of_buckets(b.kind);
    if (ta || tb) return !ta && tb;
    return std::pair(a.kind, a.bucket) < std::pair(b.kind, b.bucket);
  });
  double sum = 0;
  for (const TargetTerm& t : s.terms) sum += t.weight;
  if (!(sum > 0)) return Status::errorf("{}: no bucket of the dataset has held-out data for the target", c.source);
  for (TargetTerm& t : s.terms) {
    t.weight /= sum;
    if (t.kind == K::kLoss) s.target[t.bucket] = t.weight;
    s.needs_eval = s.needs_eval || t.kind != K::kLoss;
  }
  if (c.eval.enabled()) s.needs_eval = true;  // tasks asked for are scored (and recorded) even outside the target
  return Status::ok();
}

Status set_domains(const MixSearchConfig& c, MixSpace& s) {
  const std::vector<double>& nat = s.natural;
  if (c.reuse_previous.empty()) {
    if (c.domains == "bucket") s.domains = mix::bucket_domains(s.buckets);
    else s.domains = mix::grouped_domains(s.buckets, nat, '/', c.domains == "topic" ? 0 : 1);
    s.center = mix::domain_center(s.domains, nat);
  } else {
    auto prev = load_mixture(c.reuse_previous);
    if (!prev) return prev.status();
    auto plan = plan_mixture(*s.dataset, prev.value(), s.seq_len);
    if (!plan) return Status::errorf("reuse.previous: {}", plan.status().message());
    s.previous.assign(s.buckets.size(), 0.0);
    for (const BucketPlan& b : plan->buckets) s.previous[size_t(b.bucket)] = b.weight;
    std::vector<bool> changed(s.buckets.size(), false);
    for (const std::string& pattern : c.reuse_changed) {
      bool any = false;
      for (size_t b = 0; b < s.buckets.size(); ++b)
        if (glob(pattern, s.buckets[b])) changed[b] = any = true;
      if (!any) return Status::errorf("{}: reuse.changed \"{}\" matches no bucket of the dataset", c.source, pattern);
    }
    auto d = mix::reuse_domains(s.buckets, s.previous, changed);
    if (!d) return Status::errorf("{}: [reuse]: {}", c.source, d.status().message());
    s.domains = std::move(d.value());
    // Centre: a changed or new bucket at its natural share, the rest as before.
    s.center.assign(s.domains.size(), 0.0);
    double fresh = 0;
    for (size_t i = 0; i + 1 < s.domains.size(); ++i) fresh += s.center[i] = nat[size_t(s.domains[i].buckets[0])];
    s.center.back() = std::max(0.0, 1.0 - fresh);
    const double sum = std::accumulate(s.center.begin(), s.center.end(), 0.0);
    for (double& x : s.center) x /= sum;
  }
  s.domain_cap = mix::domain_caps(s.domains, s.cap);
  const double cap_sum = std::accumulate(s.domain_cap.begin(), s.domain_cap.end(), 0.0);
  if (cap_sum < 1.0)
    return Status::errorf("{}: the domains cannot reach the hero budget without repeating data (their caps sum to "
                          "{:.4f} < 1): lower total_tokens in {} or raise max_epochs",
                          c.source, cap_sum, c.mixture);
  s.center = mix::within_caps_or_projected(s.center, s.domain_cap);
  return Status::ok();
}

// A pattern matching exactly `name`.
std::string glob_literal(const std::string& name) {
  std::string out;
  for (char ch : name) {
    if (ch == '*' || ch == '?' || ch == '[' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

Result<MixSpace> make_mix_space(const MixSearchConfig& c, const std::string& dataset_dir, int64_t seq_len,
                                int64_t proxy_sequences, int64_t held_out_sequences) {
  MixSpace s;
  auto ds = Dataset::open(dataset_dir, ShardVerify::kHeadersOnly);
  if (!ds) return ds.status();
  s.dataset = std::move(ds.value());
  auto hero = load_mixture(c.mixture);
  if (!hero) return hero.status();
  s.hero = std::move(hero.value());
  s.seq_len = seq_len;
  s.hero_sequences = s.hero.total_tokens / seq_len;
  s.proxy_sequences = proxy_sequences;
  s.held_out_sequences = held_out_sequences;
  if (proxy_sequences > s.hero_sequences)
    return Status::errorf("{}: a proxy reads {} sequences of {} tokens, more than the hero budget total_tokens = {} "
                          "of {}: proxies must be smaller than the hero run",
                          c.source, proxy_sequences, seq_len, s.hero.total_tokens, c.mixture);
  double total = 0;
  for (const Bucket& b : s.dataset->buckets()) {
    s.buckets.push_back(b.name);
    s.available.push_back(double(b.train->n_tokens() + b.train->n_docs()));
    total += s.available.back();
  }
  if (!(total > 0)) return Status::errorf("{}: the dataset has no training tokens", dataset_dir);
  for (double a : s.available) s.natural.push_back(a / total);
  // Largest-remainder rounding gives bucket b at most w N + 1 sequences, and a
  // run reads seq_len + 1 tokens past its last sequence start: keep that slack.
  const double full_tokens = double(s.hero_sequences) * double(seq_len);
  for (double a : s.available)
    s.cap.push_back(std::clamp((s.hero.max_epochs * a - 1.0 - double(seq_len)) / full_tokens, 0.0, 1.0));
  const double cap_sum = std::accumulate(s.cap.begin(), s.cap.end(), 0.0);
  if (cap_sum < 1.0)
    return Status::errorf("{}: total_tokens = {} with max_epochs = {} needs more data than the dataset has (about "
                          "{:.4g} tokens): no mixture avoids repeating data",
                          c.mixture, s.hero.total_tokens, s.hero.max_epochs, s.hero.max_epochs * total);
  MT_RETURN_IF_ERROR(set_target(c, s));
  MT_RETURN_IF_ERROR(set_domains(c, s));
  return s;
}

std::string mixture_file_text(const MixSpace& s, const std::vector<double>& w, const std::string& comment) {
  std::string t = "# " + comment + "\n";
  t += fmt::format("total_tokens = {}\nscale = \"1\"\nmax_epochs = {}\nseed = {}\n\n[weights]\n", s.hero.total_tokens,
                   toml_double(s.hero.max_epochs), s.hero.seed);
  for (size_t b = 0; b < w.size(); ++b)
    if (w[b] > 0) t += fmt::format("{} = {}\n", toml_quote(glob_literal(s.buckets[b])), toml_double(w[b]));
  return t;
}

Result<MixturePlan> plan_at_hero_scale(const MixSpace& s, const std::string& text, const std::string& name) {
  auto m = parse_mixture(text, name);
  if (!m) return m.status();
  auto plan = plan_mixture(*s.dataset, m.value(), s.seq_len);
  if (!plan) return plan.status();
  MT_RETURN_IF_ERROR(plan->check(name));
  return plan;
}

}  // namespace mt
