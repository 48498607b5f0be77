// mix_records.cpp — see mix_records.h.
#include "mix/runner/mix_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "mix/rank.h"
#include "mix/search.h"
#include "mix/target_model.h"
#include "rundir/metrics_log.h"
#include "train/post_eval.h"
#include "train/trainer.h"

namespace mt {
namespace fs = std::filesystem;
using json = nlohmann::json;

// A target term's value in a proxy's record (NaN when the record lacks it).
double term_value(const TargetTerm& t, const json& rec) {
  auto num = [](const json& v) { return v.is_number() ? v.get<double>() : NAN; };
  auto at = [&](const char* key, size_t i) {
    return rec.contains(key) && rec[key].is_array() && i < rec[key].size() ? num(rec[key][i]) : NAN;
  };
  auto error = [&](const char* metric) {
    if (!rec.contains("tasks") || !rec["tasks"].contains(t.task)) return double(NAN);
    return 1.0 - num(rec["tasks"][t.task].value(metric, json()));
  };
  switch (t.kind) {
    case TargetName::Kind::kLoss:
      return at("bucket_loss", t.bucket);
    case TargetName::Kind::kBitsPerByte:
      return at("bucket_bits_per_byte", t.bucket);
    case TargetName::Kind::kAcc:
      return error("acc");
    case TargetName::Kind::kAccNorm:
      return error("acc_norm");
    case TargetName::Kind::kTextSet:
      return rec.contains("text_sets") && rec["text_sets"].contains(t.task) ? num(rec["text_sets"][t.task]) : NAN;
  }
  return NAN;
}

// The held-out losses (and, with the eval step, bits per byte and task
// results) and ledger of a finished run, checked against its plan.
Result<json> read_run(const MixSpace& s, const EvalTargets& eval, const MixRun& r, const MixturePlan& plan,
                      const std::string& dir, int64_t steps, const std::string& log) {
  steps *= r.scale;
  const json last = last_metrics_line(dir);
  if (!last.is_object() || last.value("step", int64_t(-1)) != steps || !last.contains("bucket_eval_loss"))
    return Status::errorf("{}/metrics.jsonl: no held-out losses per bucket at the final step {}", dir, steps);
  json rec;
  rec["name"] = r.name;
  if (!r.domain_w.empty()) rec["domain_weights"] = r.domain_w;
  rec["weights"] = r.bucket_w;
  std::vector<double> loss(s.buckets.size(), NAN);
  for (const auto& [name, v] : last["bucket_eval_loss"].items()) {
    const auto it = std::find(s.buckets.begin(), s.buckets.end(), name);
    if (it != s.buckets.end() && v.is_number()) loss[size_t(it - s.buckets.begin())] = v.get<double>();
  }
  rec["bucket_loss"] = json::array();
  for (double l : loss) rec["bucket_loss"].push_back(std::isfinite(l) ? json(l) : json());
  if (s.needs_eval) {
    auto ev = read_eval(dir, steps, eval);
    if (!ev) return ev.status();
    const json bpb = bucket_bits_per_byte(ev.value());
    rec["bucket_bits_per_byte"] = json::array();
    for (const std::string& b : s.buckets) rec["bucket_bits_per_byte"].push_back(bpb.value(b, json()));
    rec["tasks"] = json::object();
    for (const std::string& t : eval.names) rec["tasks"][t] = task_result(ev.value(), t);
    if (!eval.text_set_names.empty()) rec["text_sets"] = text_set_bits_per_byte(ev.value());
  }
  double target = 0;
  for (const TargetTerm& t : s.terms) {
    const double v = term_value(t, rec);
    if (!std::isfinite(v)) return Status::errorf("{}: no value for the target's {}", dir, t.column);
    target += t.weight * v;
  }
  rec["target"] = target;
  // The ledger: bucket b supplied n Q_b / N_full of the n sequences read, to within one.
  const double n = double(s.proxy_sequences * r.scale);
  double worst = 0;
  std::map<std::string, int64_t> ledger;
  if (last.contains("bucket_tokens"))
    for (const auto& [name, v] : last["bucket_tokens"].items()) ledger[name] = v.get<int64_t>();
  for (const BucketPlan& b : plan.buckets) {
    const double got = double(ledger.count(b.name) ? ledger[b.name] : 0) / double(s.seq_len);
    const double want = n * double(b.full_sequences) / double(plan.full_sequences);
    worst = std::max(worst, std::abs(got - want));
  }
  if (worst > 1.0 + 1e-9)
    return Status::errorf("{}: a bucket's ledger is {:.2f} sequences from its mixture (the sampler guarantees one)",
                          dir, worst);
  rec["ledger_max_deviation"] = worst;  // in sequences
  if (const std::string hash = logged_state_hash(log); !hash.empty()) rec["state_hash"] = hash;
  return rec;
}

// The proxies an earlier invocation finished, by name. A record without a
// figure the target now needs (the search file changed) is left out, so that
// proxy is scored again.
std::map<std::string, json> recorded_proxies(const std::string& path, const MixSearchConfig& c, const MixSpace& s) {
  std::map<std::string, json> recorded;
  if (!fs::exists(path)) return recorded;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) continue;
    bool complete = !s.needs_eval || j.contains("tasks");
    for (const std::string& t : c.eval.names) complete = complete && j.contains("tasks") && j["tasks"].contains(t);
    for (const std::string& t : c.eval.text_set_names)
      complete = complete && j.contains("text_sets") && j["text_sets"].contains(t);
    for (const TargetTerm& t : s.terms) complete = complete && std::isfinite(term_value(t, j));
    if (complete) recorded[j["name"].get<std::string>()] = j;
  }
  return recorded;
}

}  // namespace mt
