// mixture.cpp — mixture TOML reading, weight resolution and the plan (largest
// remainder rounding to whole sequences, per-bucket epoch check).
#include "data/mixture.h"

#include "core/check.h"
#include "core/file_io.h"
#include "core/config_schema.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "data/dataset.h"

namespace mt {
namespace {

bool glob(const std::string& pattern, const std::string& s) { return fnmatch(pattern.c_str(), s.c_str(), 0) == 0; }

// Largest-remainder rounding of `target` (sums to total) to integers summing
// to total; ties go to the lower index.
std::vector<int64_t> apportion(const std::vector<long double>& target, int64_t total) {
  std::vector<int64_t> q(target.size());
  std::vector<std::pair<long double, size_t>> rem;
  int64_t sum = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    q[i] = int64_t(std::floor(target[i]));
    sum += q[i];
    rem.push_back({target[i] - std::floor(target[i]), i});
  }
  std::stable_sort(rem.begin(), rem.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t k = 0; sum < total && k < rem.size(); ++k, ++sum) ++q[rem[k].second];
  return q;
}

int64_t gcd64(int64_t a, int64_t b) { return b == 0 ? a : gcd64(b, a % b); }

}  // namespace

namespace {

// "1/360", "1", or a number in (0, 1] (kept as a fraction with denominator 1e9).
Status read_scale(Mixture& m, const ConfigValue& v, const std::string& at) {
  if (v.is_string()) {
    const std::string text = v.as_string();
    long long a = 0, b = 0;
    char extra = 0;
    if (std::sscanf(text.c_str(), "%lld/%lld%c", &a, &b, &extra) == 2 && a > 0 && b > 0 && a <= b) {
      m.scale_num = a;
      m.scale_den = b;
    } else if (std::sscanf(text.c_str(), "%lld%c", &a, &extra) == 1 && a == 1) {
      m.scale_num = m.scale_den = 1;
    } else {
      return Status::errorf("{}: scale: expected a fraction such as \"1/360\" in (0, 1], got {}", at, v.describe());
    }
  } else if (v.is_number()) {
    const double x = v.as_double();
    if (!(x > 0 && x <= 1)) return Status::errorf("{}: scale: expected a number in (0, 1], got {}", at, v.describe());
    m.scale_den = 1000000000;
    m.scale_num = std::max<int64_t>(1, std::llround(x * 1e9));
  } else {
    return Status::errorf("{}: scale: expected a fraction string (\"1/360\") or a number, got {}", at, v.describe());
  }
  const int64_t g = gcd64(m.scale_num, m.scale_den);
  m.scale_num /= g;
  m.scale_den /= g;
  return Status::ok();
}

}  // namespace

void declare_keys(ConfigSchema& s, Mixture& m) {
  s.add("total_tokens", &m.total_tokens, "full-scale (hero run) token budget").min(1).unit("tokens").required();
  s.add_custom(
      "scale", "fraction string (\"1/360\") or number in (0, 1]",
      [&m](const ConfigValue& v, const std::string& at) { return read_scale(m, v, at); },
      [&m] { return toml_quote(fmt::format("{}/{}", m.scale_num, m.scale_den)); },
      "this run reads this fraction of the full-scale budget, from every bucket alike");
  s.add("max_epochs", &m.max_epochs, "passes over a bucket's documents allowed").above(0);
  s.add("seed", &m.seed, "document order inside each bucket");
  s.add_map("weights", &m.weights,
            "\"glob over <topic>/<quality>\" = weight; a pattern's weight is spread over its buckets by size")
      .min(0);
  s.add_map("topic_weights", &m.topic_weights, "\"glob over topics\" = weight (factorised form)").min(0);
  s.add_map("quality_weights", &m.quality_weights, "\"glob over quality levels\" = weight (factorised form)").min(0);
}

Result<Mixture> parse_mixture(const std::string& text, const std::string& source,
                              const std::vector<std::string>& overrides) {
  Mixture m;
  m.source = source;
  m.text = text;
  ConfigSchema s("mixture file");
  declare_keys(s, m);
  ConfigOrigins o;
  MT_RETURN_IF_ERROR(s.load(text, source, overrides, o));
  if (!m.weights.empty() && (!m.topic_weights.empty() || !m.quality_weights.empty()))
    return Status::errorf("{}: give either [weights] or [topic_weights]/[quality_weights], not both", source);
  // The text identifies the mixture (its hash is checked on resume): with
  // overrides, the resolved file is what was run.
  if (!overrides.empty()) m.text = s.to_toml();
  return m;
}

Result<Mixture> load_mixture(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_file(path, "mixture file");
  if (!text) return text.status();
  return parse_mixture(text.value(), path, overrides);
}

Result<MixturePlan> plan_mixture(const Dataset& ds, const Mixture& mx, int64_t seq_len,
                                 const std::vector<int64_t>& taken) {
  const auto& B = ds.buckets();
  const size_t nb = B.size();
  MT_CHECK(taken.empty() || taken.size() == nb, "{} taken counts for {} buckets", taken.size(), nb);
  if (seq_len < 1) return Status::errorf("seq_len must be >= 1, got {}", seq_len);
  std::vector<double> size(nb), w(nb, 0.0);
  for (size_t b = 0; b < nb; ++b) size[b] = double(B[b].train->n_tokens());

  auto unmatched = [&](const std::string& table, const std::string& pat, const std::string& what) {
    std::string names;
    for (size_t b = 0; b < std::min<size_t>(nb, 12); ++b) names += (b ? ", " : "") + (what == "bucket" ? B[b].name : what == "topic" ? B[b].topic : B[b].quality);
    return Status::errorf("{}: {}.\"{}\": unknown {}: the pattern matches nothing in {} (it has {}{})", mx.source, table,
                          pat, what, ds.dir(), names, nb > 12 ? ", ..." : "");
  };
  if (!mx.weights.empty()) {
    std::vector<int> owner(nb, -1);
    for (size_t p = 0; p < mx.weights.size(); ++p) {
      const auto& [pat, pw] = mx.weights[p];
      double matched = 0;
      std::vector<size_t> hit;
      for (size_t b = 0; b < nb; ++b)
        if (glob(pat, B[b].name)) {
          if (owner[b] >= 0)
            return Status::errorf("{}: weights: bucket \"{}\" matches both \"{}\" and \"{}\"", mx.source, B[b].name,
                                  mx.weights[size_t(owner[b])].first, pat);
          owner[b] = int(p);
          hit.push_back(b);
          matched += size[b];
        }
      if (hit.empty()) return unmatched("weights", pat, "bucket");
      for (size_t b : hit) w[b] = matched > 0 ? pw * size[b] / matched : pw / double(hit.size());
    }
  } else {
    // Factorised: topic share x (quality weight x size, normalised within the topic).
    std::map<std::string, double> topic_w, topic_size;
    for (size_t b = 0; b < nb; ++b) topic_size[B[b].topic] += size[b];
    auto pattern_weight = [&](const std::vector<std::pair<std::string, double>>& pats, const std::string& s,
                              double dflt) {
      for (const auto& [p, v] : pats)
        if (glob(p, s)) return v;
      return pats.empty() ? dflt : 0.0;
    };
    // One pattern per topic (quality), as in [weights]: an overlap is an error, never a silent precedence.
    auto check_overlaps = [&](const std::vector<std::pair<std::string, double>>& pats, const char* table,
                              auto&& name_of) -> Status {
      std::map<std::string, size_t> owner;
      for (size_t b = 0; b < nb; ++b) {
        const std::string& name = name_of(B[b]);
        for (size_t p = 0; p < pats.size(); ++p) {
          if (!glob(pats[p].first, name)) continue;
          auto [it, fresh] = owner.emplace(name, p);
          if (!fresh && it->second != p)
            return Status::errorf("{}: {}: \"{}\" matches both \"{}\" and \"{}\"", mx.source, table, name,
                                  pats[it->second].first, pats[p].first);
        }
      }
      return Status::ok();
    };
    MT_RETURN_IF_ERROR(check_overlaps(mx.topic_weights, "topic_weights", [](const Bucket& b) -> const std::string& { return b.topic; }));
    MT_RETURN_IF_ERROR(check_overlaps(mx.quality_weights, "quality_weights", [](const Bucket& b) -> const std::string& { return b.quality; }));
    for (const auto& entry : mx.topic_weights) {
      const std::string& pat = entry.first;  // (clang 14 cannot capture structured bindings)
      if (std::none_of(B.begin(), B.end(), [&](const Bucket& b) { return glob(pat, b.topic); }))
        return unmatched("topic_weights", pat, "topic");
    }
    for (const auto& entry : mx.quality_weights) {
      const std::string& pat = entry.first;  // (clang 14 cannot capture structured bindings)
      if (std::none_of(B.begin(), B.end(), [&](const Bucket& b) { return glob(pat, b.quality); }))
        return unmatched("quality_weights", pat, "quality");
    }
    std::map<std::string, double> inner_sum;
    std::vector<double> inner(nb);
    for (size_t b = 0; b < nb; ++b) {
      inner[b] = pattern_weight(mx.quality_weights, B[b].quality, 1.0) * size[b];
      inner_sum[B[b].topic] += inner[b];
    }
    for (size_t b = 0; b < nb; ++b) {
      const double tw = pattern_weight(mx.topic_weights, B[b].topic, topic_size[B[b].topic]);
      w[b] = inner_sum[B[b].topic] > 0 ? tw * inner[b] / inner_sum[B[b].topic] : 0.0;
    }
  }
  const double total_w = std::accumulate(w.begin(), w.end(), 0.0);
  if (!(total_w > 0)) return Status::errorf("{}: every bucket has weight 0", mx.source);

  MixturePlan plan;
  plan.seq_len = seq_len;
  plan.full_sequences = mx.total_tokens / seq_len;
  if (plan.full_sequences < 1)
    return Status::errorf("{}: total_tokens = {} is less than one sequence of {} tokens", mx.source, mx.total_tokens,
                          seq_len);
  plan.sequences = int64_t((__int128)plan.full_sequences * mx.scale_num / mx.scale_den);
  plan.scale_num = mx.scale_num;
  plan.scale_den = mx.scale_den;
  plan.max_epochs = mx.max_epochs;
  plan.seed = mx.seed;
  std::vector<long double> target(nb);
  for (size_t b = 0; b < nb; ++b) target[b] = (long double)(w[b] / total_w) * plan.full_sequences;
  const std::vector<int64_t> q = apportion(target, plan.full_sequences);
  for (size_t b = 0; b < nb; ++b) {
    if (w[b] <= 0) continue;
    BucketPlan bp;
    bp.bucket = int64_t(b);
    bp.name = B[b].name;
    bp.weight = w[b] / total_w;
    bp.full_sequences = q[b];
    const __int128 num = (__int128)q[b] * mx.scale_num;
    bp.sequences = int64_t((num + mx.scale_den - 1) / mx.scale_den);
    bp.tokens_wanted = bp.sequences > 0 ? bp.sequences * seq_len + 1 : 0;
    bp.tokens_available = B[b].train->n_tokens() + B[b].train->n_docs();
    bp.tokens_before = taken.empty() ? 0 : taken[b];
    const int64_t reach = bp.tokens_before + bp.tokens_wanted;
    bp.epochs = bp.tokens_available > 0 ? double(reach) / double(bp.tokens_available) : (reach > 0 ? INFINITY : 0.0);
    if (double(reach) > mx.max_epochs * double(bp.tokens_available)) {
      const double short_by = double(reach) - mx.max_epochs * double(bp.tokens_available);
      plan.violations.push_back(fmt::format(
          "bucket {} needs {} tokens{} but has {} ({:.3g} epochs > max_epochs = {}): short by {:.0f} tokens", bp.name,
          bp.tokens_wanted,
          bp.tokens_before > 0 ? fmt::format(" after the {} that earlier phases take", bp.tokens_before) : "",
          bp.tokens_available, bp.epochs, mx.max_epochs, std::ceil(short_by)));
    }
    plan.buckets.push_back(bp);
  }
  return plan;
}

std::vector<int64_t> MixturePlan::taken_after(std::vector<int64_t> taken) const {
  for (const BucketPlan& b : buckets) {
    if (taken.size() <= size_t(b.bucket)) taken.resize(size_t(b.bucket) + 1, 0);
    taken[size_t(b.bucket)] += b.full_sequences * seq_len;
  }
  return taken;
}

Status MixturePlan::check(const std::string& mixture_source) const {
  if (violations.empty()) return Status::ok();
  std::string msg = fmt::format("{}: the plan would repeat data in {} bucket{}:", mixture_source, violations.size(),
                                violations.size() == 1 ? "" : "s");
  for (const auto& v : violations) msg += "\n  " + v;
  return Status::error(msg);
}

}  // namespace mt
