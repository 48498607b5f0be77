// arch_rank.cpp — see arch_rank.h.
#include "arch/arch_rank.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ladder/bootstrap.h"
#include "ladder/law.h"
#include "ladder/projection.h"

namespace mt {
namespace {

using json = nlohmann::json;

double num(const json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : NAN;
}

ladder::Law law_of(const json& v) {  // {"E":..} or [E, A, B, alpha, beta]; null -> NaN
  auto at = [&](size_t i, const char* k) {
    const json& x = v.is_array() ? v[i] : v[k];
    return x.is_number() ? x.get<double>() : NAN;
  };
  ladder::Law l;
  l.E = at(0, "E");
  l.A = at(1, "A");
  l.B = at(2, "B");
  l.alpha = at(3, "alpha");
  l.beta = at(4, "beta");
  return l;
}

// `f(law)` at the fit and on every bootstrap law, summarised.
template <typename F>
json project(const json& fit, double level, F f) {
  if (!fit.contains("law")) return nullptr;
  std::vector<double> samples;
  for (const json& b : fit.value("bootstrap_laws", json::array())) samples.push_back(f(law_of(b)));
  const ladder::Estimate e = ladder::summarize(f(law_of(fit["law"])), samples, level);
  return {{"value", e.value}, {"lo", e.lo}, {"hi", e.hi}};
}

std::string rule_text(const ArchSpec& s) {
  if (s.rank_by == RankBy::kLossAtEqualCompute)
    return fmt::format(
        "lowest projected hero loss at equal compute: {:.3g} model FLOPs each, the tokens that buys the "
        "candidate's hero model",
        s.hero_flops);
  return fmt::format(
      "lowest projected hero loss at equal wall-clock on the target cluster: the time the first candidate "
      "({}) needs for {:.3g} model FLOPs at its planned step time, each candidate training for that long at its "
      "own planned tokens/s",
      s.candidates.front().name, s.hero_flops);
}

}  // namespace

json project_loss(const json& fit, double N, double D, double level) {
  return project(fit, level, [&](const ladder::Law& l) { return ladder::law_loss(l, N, D); });
}

json compare_json(const ArchSpec& spec, const std::vector<CandidateRecords>& records) {
  json out;
  out["spec"] = spec.source;
  out["rank_by"] = rank_by_name(spec.rank_by);
  out["rule"] = rule_text(spec);
  const json& ref_plan = records.front().plan;
  const double wallclock_s = num(ref_plan, "tokens") / num(ref_plan, "tokens_per_s");
  out["hero"] = {{"model", spec.hero_model},
                 {"cluster", spec.cluster},
                 {"layout", spec.layout},
                 {"flops", spec.hero_flops},
                 {"wallclock_days", wallclock_s / 86400.0}};
  out["level"] = spec.level;
  json cands = json::array();
  std::vector<double> key;  // the ranked value per candidate (NaN: no projection)
  for (size_t i = 0; i < records.size(); ++i) {
    const ArchCandidate& c = spec.candidates[i];
    const CandidateRecords& r = records[i];
    json j;
    j["name"] = c.name;
    j["label"] = c.label;
    j["bench"] = r.bench;
    j["ep_bench"] = r.ep;
    json plan = r.plan;
    plan.erase("inference");
    j["plan"] = plan;
    json lad = {{"runs", r.fit.value("runs", json::array())}};
    if (r.fit.contains("error")) lad["error"] = r.fit["error"];
    if (r.fit.contains("law")) {
      lad["law"] = r.fit["law"];
      lad["estimates"] = r.fit["estimates"];
    }
    // The measured loss at the largest budget: equal compute at the ladder's own scale, no extrapolation.
    json largest;
    for (const json& run : lad["runs"])
      if (largest.is_null() || num(run, "flops") > num(largest, "flops")) largest = run;
    lad["largest"] = largest;
    j["ladder"] = lad;
    // Projections: equal compute (the plan's tokens) and equal wall-clock (the reference's time at this
    // candidate's planned tokens/s), both on the candidate's hero model.
    const double N = num(r.plan, "active_params"), D = num(r.plan, "tokens");
    const double D_wall = wallclock_s * num(r.plan, "tokens_per_s");
    json proj;
    proj["equal_compute"] = {{"params", N}, {"tokens", D}, {"loss", project_loss(r.fit, N, D, spec.level)}};
    proj["equal_wallclock"] = {{"params", N}, {"tokens", D_wall}, {"loss", project_loss(r.fit, N, D_wall, spec.level)}};
    // The curve: the law along compute C = 6 N D at the hero's tokens per parameter, from the ladder's
    // smallest run to the hero (equal compute).
    json curve = json::array();
    double c_lo = INFINITY;
    for (const json& run : lad["runs"]) c_lo = std::min(c_lo, 6.0 * num(run, "active_params") * num(run, "tokens"));
    const double c_hi = 6.0 * N * D, R = D / N;
    if (r.fit.contains("law") && std::isfinite(c_lo) && c_hi > c_lo) {
      const int kPoints = 25;
      for (int k = 0; k < kPoints; ++k) {
        const double C = std::exp(std::log(c_lo) + (std::log(c_hi) - std::log(c_lo)) * k / (kPoints - 1));
        json p =
            project(r.fit, spec.level, [&](const ladder::Law& l) { return ladder::at_tokens_per_param(l, C, R).loss; });
        p["compute"] = C;
        curve.push_back(p);
      }
    }
    proj["curve"] = curve;
    j["projection"] = proj;
    json inf = r.plan.value("inference", json::object());
    inf["decode"] = r.decode;
    j["inference"] = inf;
    const json& ranked =
        spec.rank_by == RankBy::kLossAtEqualCompute ? proj["equal_compute"]["loss"] : proj["equal_wallclock"]["loss"];
    key.push_back(ranked.is_object() ? num(ranked, "value") : NAN);
    cands.push_back(j);
  }
  // Rank: lowest projected loss first; a candidate without a projection last; ties in spec order.
  std::vector<size_t> order(records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool fa = std::isfinite(key[a]), fb = std::isfinite(key[b]);
    if (fa != fb) return fa;
    return fa && key[a] < key[b];
  });
  json ranking = json::array();
  for (size_t k = 0; k < order.size(); ++k) {
    cands[order[k]]["rank"] = int64_t(k + 1);
    ranking.push_back(spec.candidates[order[k]].name);
  }
  out["candidates"] = cands;
  out["ranking"] = ranking;

  // The verdict: what the numbers decide, and what they leave open.
  json verdict = json::array();
  const char* which = spec.rank_by == RankBy::kLossAtEqualCompute ? "equal_compute" : "equal_wallclock";
  auto loss_of = [&](size_t i) { return cands[i]["projection"][which]["loss"]; };
  if (std::isfinite(key[order[0]])) {
    const json a = loss_of(order[0]);
    verdict.push_back(
        fmt::format("By the rule ({}), {} ranks first: projected hero loss {:.3f} ({:.0f}% interval "
                    "{:.3f} to {:.3f}).",
                    rank_by_name(spec.rank_by), spec.candidates[order[0]].label, num(a, "value"), 100 * spec.level,
                    num(a, "lo"), num(a, "hi")));
    std::vector<std::string> overlapping;
    for (size_t k = 1; k < order.size(); ++k) {
      const json b = loss_of(order[k]);
      if (std::isfinite(key[order[k]]) && !(num(b, "lo") > num(a, "hi")))
        overlapping.push_back(spec.candidates[order[k]].label);
    }
    if (overlapping.empty())
      verdict.push_back("Its interval lies below every other candidate's: the ladder separates them.");
    else {
      std::string names;
      for (const std::string& n : overlapping) names += (names.empty() ? "" : ", ") + n;
      verdict.push_back(
          fmt::format("Its interval overlaps {}: at this ladder's scale the projection cannot "
                      "separate them; more or larger rungs (or seeds) are needed for a decision.",
                      names));
    }
  }
  // What the ladder measured without extrapolating: the loss at its largest budget.
  {
    size_t bi = records.size();
    for (size_t i = 0; i < records.size(); ++i) {
      const json& l = cands[i]["ladder"]["largest"];
      if (!l.is_null() && (bi == records.size() || num(l, "loss") < num(cands[bi]["ladder"]["largest"], "loss")))
        bi = i;
    }
    if (bi < records.size()) {
      std::string others;
      for (size_t i = 0; i < records.size(); ++i)
        if (i != bi && !cands[i]["ladder"]["largest"].is_null())
          others += fmt::format("{}{} {:.3f}", others.empty() ? "" : ", ", spec.candidates[i].label,
                                num(cands[i]["ladder"]["largest"], "loss"));
      const json& l = cands[bi]["ladder"]["largest"];
      verdict.push_back(
          fmt::format("Measured at the ladder's largest budget ({:.3g} FLOPs, equal compute, no "
                      "extrapolation): {} has the lowest held-out loss, {:.3f} ({}).",
                      num(l, "flops"), spec.candidates[bi].label, num(l, "loss"), others));
    }
  }
  // An irreducible loss the ladder cannot see: the projection is then the reducible terms extrapolated.
  for (size_t i = 0; i < records.size(); ++i) {
    const json& lad = cands[i]["ladder"];
    double min_loss = INFINITY;
    for (const json& r : lad["runs"]) min_loss = std::min(min_loss, num(r, "loss"));
    if (lad.contains("law") && num(lad["law"], "E") < 0.05 * min_loss)
      verdict.push_back(
          fmt::format("{}: the fit puts the irreducible loss E at {:.3g}, far below its runs' "
                      "losses ({:.3f} at best): the ladder does not constrain E, and the hero "
                      "projection extrapolates the reducible terms alone.",
                      spec.candidates[i].label, num(lad["law"], "E"), min_loss));
  }
  for (size_t i = 0; i < records.size(); ++i)
    if (!std::isfinite(key[i]))
      verdict.push_back(fmt::format("{}: no projection ({}).", spec.candidates[i].label,
                                    records[i].fit.value("error", std::string("no fit"))));
  auto best = [&](const char* what, auto value, bool low, const char* fmtspec) {
    size_t bi = records.size();
    double bv = NAN;
    for (size_t i = 0; i < records.size(); ++i) {
      const double v = value(i);
      if (std::isfinite(v) && (bi == records.size() || (low ? v < bv : v > bv))) bi = i, bv = v;
    }
    if (bi < records.size())
      verdict.push_back(
          fmt::format("{}: {} ({}).", what, spec.candidates[bi].label, fmt::format(fmt::runtime(fmtspec), bv)));
  };
  best(
      "Fastest on this machine (bench tokens/s)", [&](size_t i) { return num(records[i].bench, "tokens_per_s"); },
      false, "{:.0f} tokens/s");
  best(
      "Highest planned hero MFU on the target cluster", [&](size_t i) { return 100 * num(records[i].plan, "mfu"); },
      false, "{:.1f}%");
  best(
      "Smallest measured all-to-all share (np = 2)", [&](size_t i) { return 100 * num(records[i].ep, "comm_share"); },
      true, "{:.1f}% of the step");
  best(
      "Smallest KV cache + state per sequence at the inference context",
      [&](size_t i) {
        const json& inf = records[i].plan.value("inference", json::object());
        return (num(inf, "kv_cache_bytes_per_sequence") + num(inf, "state_bytes_per_sequence")) / double(1 << 20);
      },
      true, "{:.1f} MiB");
  out["verdict"] = verdict;
  return out;
}

}  // namespace mt
