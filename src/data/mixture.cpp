// mixture.cpp — mixture TOML reading, weight resolution and the plan (largest
// remainder rounding to whole sequences, per-bucket epoch check).
#include "data/mixture.h"
#include "core/file_io.h"
#include "core/toml_document.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "data/dataset.h"
#include "data/toml_table.h"

namespace mt {
namespace {

Status read_weights(const toml::table& doc, const char* name, const std::string& source,
                    std::vector<std::pair<std::string, double>>& out) {
  const toml::node* n = doc.get(name);
  if (!n) return Status::ok();
  TomlTable top(doc, source, "");
  if (!n->is_table()) return Status::errorf("{}: {}: expected a table of pattern = weight", top.at(*n), name);
  for (auto&& [k, v] : *n->as_table()) {
    double w;
    if (v.is_floating_point()) w = v.as_floating_point()->get();
    else if (v.is_integer()) w = double(v.as_integer()->get());
    else return Status::errorf("{}: {}.\"{}\": expected a number", top.at(v), name, k.str());
    if (!(w >= 0) || !std::isfinite(w))
      return Status::errorf("{}: {}.\"{}\": weight must be finite and >= 0, got {}", top.at(v), name, k.str(), w);
    out.emplace_back(std::string(k.str()), w);
  }
  return Status::ok();
}

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

Result<Mixture> parse_mixture(const std::string& text, const std::string& source) {
  Mixture m;
  m.source = source;
  m.text = text;
  auto parsed = parse_toml_document(text, source);
  if (!parsed) return parsed.status();
  toml::table doc = std::move(parsed.value());
  TomlTable r(doc, source, "");
  MT_RETURN_IF_ERROR(r.get("total_tokens", m.total_tokens, 1));
  if (!doc.contains("total_tokens")) return Status::errorf("{}: total_tokens: required (full-scale token budget)", source);
  if (const toml::node* s = r.use("scale")) {
    if (s->is_string()) {
      const std::string v = s->as_string()->get();
      long long a = 0, b = 0;
      char extra = 0;
      if (std::sscanf(v.c_str(), "%lld/%lld%c", &a, &b, &extra) == 2 && a > 0 && b > 0 && a <= b) {
        m.scale_num = a;
        m.scale_den = b;
      } else if (std::sscanf(v.c_str(), "%lld%c", &a, &extra) == 1 && a == 1) {
        m.scale_num = m.scale_den = 1;
      } else {
        return Status::errorf("{}: scale: expected a fraction such as \"1/360\" in (0, 1], got \"{}\"", r.at(*s), v);
      }
    } else if (s->is_number()) {
      const double v = s->is_integer() ? double(s->as_integer()->get()) : s->as_floating_point()->get();
      if (!(v > 0 && v <= 1)) return Status::errorf("{}: scale: must be in (0, 1], got {}", r.at(*s), v);
      m.scale_den = 1000000000;
      m.scale_num = std::max<int64_t>(1, std::llround(v * 1e9));
    } else {
      return Status::errorf("{}: scale: expected a fraction string (\"1/360\") or a number", r.at(*s));
    }
    const int64_t g = gcd64(m.scale_num, m.scale_den);
    m.scale_num /= g;
    m.scale_den /= g;
  }
  MT_RETURN_IF_ERROR(r.get("max_epochs", m.max_epochs));
  if (!(m.max_epochs > 0)) return Status::errorf("{}: must be > 0, got {}", r.where("max_epochs"), m.max_epochs);
  MT_RETURN_IF_ERROR(r.get("seed", m.seed));
  r.use("weights");
  r.use("topic_weights");
  r.use("quality_weights");
  MT_RETURN_IF_ERROR(read_weights(doc, "weights", source, m.weights));
  MT_RETURN_IF_ERROR(read_weights(doc, "topic_weights", source, m.topic_weights));
  MT_RETURN_IF_ERROR(read_weights(doc, "quality_weights", source, m.quality_weights));
  if (!m.weights.empty() && (!m.topic_weights.empty() || !m.quality_weights.empty()))
    return Status::errorf("{}: give either [weights] or [topic_weights]/[quality_weights], not both", source);
  MT_RETURN_IF_ERROR(r.finish());
  return m;
}

Result<Mixture> load_mixture(const std::string& path) {
  auto text = read_file(path, "mixture file");
  if (!text) return text.status();
  return parse_mixture(text.value(), path);
}

Result<MixturePlan> plan_mixture(const Dataset& ds, const Mixture& mx, int64_t seq_len) {
  const auto& B = ds.buckets();
  const size_t nb = B.size();
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
    bp.epochs = bp.tokens_available > 0 ? double(bp.tokens_wanted) / double(bp.tokens_available)
                                        : (bp.tokens_wanted > 0 ? INFINITY : 0.0);
    if (double(bp.tokens_wanted) > mx.max_epochs * double(bp.tokens_available)) {
      const double short_by = double(bp.tokens_wanted) - mx.max_epochs * double(bp.tokens_available);
      plan.violations.push_back(fmt::format(
          "bucket {} needs {} tokens but has {} ({:.3g} epochs > max_epochs = {}): short by {:.0f} tokens", bp.name,
          bp.tokens_wanted, bp.tokens_available, bp.epochs, mx.max_epochs, std::ceil(short_by)));
    }
    plan.buckets.push_back(bp);
  }
  return plan;
}

Status MixturePlan::check(const std::string& mixture_source) const {
  if (violations.empty()) return Status::ok();
  std::string msg = fmt::format("{}: the plan would repeat data in {} bucket{}:", mixture_source, violations.size(),
                                violations.size() == 1 ? "" : "s");
  for (const auto& v : violations) msg += "\n  " + v;
  return Status::error(msg);
}

}  // namespace mt
