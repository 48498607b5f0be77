// plan_report.cpp — the HTML report of a plan: summary, memory stack per GPU,
// MFU across layouts, step-time breakdown, goodput vs checkpoint interval and
// the spare-rack trade, isoFLOP curves and over-training, inference cost, the
// largest model per NVLink domain. Self-contained (report/html.h, report/svg.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "plan/plan.h"
#include "plan/format.h"
#include "report/html.h"
#include "report/svg.h"

namespace mt::plan {
namespace {

using report::Align;
using report::Axis;
using report::HBars;
using report::HtmlPage;
using report::LineChart;
using report::Marker;
using report::Scale;
using report::Series;
using report::StackedBars;
using report::VLine;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string pct(double v) { return fmt::format("{:.1f}%", 100 * v); }
std::string gib(double b) { return fmt::format("{:.1f} GiB", b / kGiB); }
std::string minutes(double s) { return fmt::format("{:.1f} min", s / 60); }

std::vector<double> mem_values(const MemoryBreakdown& m) {
  std::vector<double> v;
  for (const MemoryItem& it : m.items()) v.push_back(it.bytes / kGiB);
  return v;
}

void summary(HtmlPage& h, const Plan& p) {
  const ClusterConfig& c = p.in.cluster;
  h.key_values({
      {"model", fmt::format("{}: {} parameters, {} active", p.in.model_source, fmtx::count(double(p.stats.total)),
                            fmtx::count(double(p.stats.active_params)))},
      {"cluster", fmt::format("{}: {} racks x {} {} ({} spare), {} GPUs in the job", c.name.empty() ? c.source : c.name,
                              c.racks, c.gpus_per_rack, c.device.type, c.spare_racks, p.par.gpus)},
      {"layout", fmt::format("{} ({}), dp {}, {} sequences x {} tokens per step{}", layout_label(p.par.cfg),
                             p.par.cfg.source, p.par.dp, p.par.global_batch, p.par.seq_len,
                             p.par.cfg.comm_sms > 0 ? "; " + comm_sms_text(p.par.cfg, c.device) : "")},
      {"memory per GPU",
       fmt::format("{} of {} ({})", gib(p.mem.total()), gib(p.mem.capacity), p.mem.fits() ? "fits" : "does not fit")},
      {"step time, MFU", fmt::format("{:.3f} s, MFU {} (HFU {}), {} tokens/s", p.time.step_s,
                                     fmtx::mfu(p.time.mfu, full_square_ratio(p.stats)), pct(p.time.hfu),
                                     fmtx::count(p.time.tokens_per_s))},
      {"token budget",
       fmt::format("{} tokens: {} steps, {:.1f} days, {} GPU-hours{}", fmtx::count(p.in.tokens), p.steps, p.days,
                   fmtx::count(p.gpu_hours), c.gpu_hour_usd > 0 ? ", $" + fmtx::count(p.cost_usd) : "")},
      {"failures", fmt::format("{:.0f} interruptions expected, checkpoint every {}, goodput {}",
                               p.rel.expected_interruptions, minutes(p.rel.checkpoint_interval_s), pct(p.rel.goodput))},
      {"end to end", fmt::format("{:.1f} days", p.rel.wall_days)},
  });
  for (const std::string& w : p.warnings) h.note("warning: " + w);
}

// Phases: the per-phase table, the totals, and the batch (tokens per step) against tokens trained.
void phases_section(HtmlPage& h, const Plan& p) {
  if (p.in.layout.phases.empty()) return;
  const PhaseTotals& t = p.totals;
  h.heading(2, "Training phases");
  std::vector<std::vector<std::string>> rows;
  for (const PhasePlan& ph : p.phases) {
    const Parallel& q = ph.par;
    rows.push_back({ph.name, fmtx::count(ph.tokens), fmt::format("{}", q.seq_len),
                    ph.ramp_from > 0 ? fmt::format("{} → {}", ph.ramp_from, q.global_batch)
                                     : fmt::format("{}", q.global_batch),
                    fmtx::count(double(q.tokens_per_step())), layout_label(q.cfg),
                    fmt::format("{} x {} x {}", q.tp, q.pp, q.dp), fmt::format("{}", ph.steps),
                    fmt::format("{:.3f} s", ph.time.step_s), pct(ph.mfu), gib(ph.mem.total()),
                    fmt::format("{:.2f}", ph.days), fmtx::count(ph.gpu_hours)});
  }
  rows.push_back({"total", fmtx::count(t.tokens), "", "", "", "", "", fmt::format("{}", t.steps), "",
                  pct(t.mfu_by_tokens), gib(t.memory_bytes), fmt::format("{:.2f}", t.days), fmtx::count(t.gpu_hours)});
  h.table({"phase", "tokens", "seq", "batch (seqs)", "tokens/step", "layout", "tp x pp x dp", "steps", "step",
           "MFU (causal half)", "memory/GPU", "days", "GPU-hours"},
          rows, {}, int(rows.size()) - 1);
  h.note(fmt::format("Total MFU weighted by tokens; weighted by GPU-time (model FLOPs over peak FLOPs of the whole "
                     "run) it is {}. Memory: the fullest phase ({}). The sections below describe \"{}\", the phase "
                     "with the most tokens; days and GPU-hours everywhere are the whole run's. A ramp's step time is "
                     "taken level by level (each batch rounded to a multiple of dp x micro-batch).",
                     pct(t.mfu_by_time), p.phases[t.fullest].name, p.phases[t.main].name));
  LineChart lc;
  lc.title = "Tokens per step over the run";
  lc.x = {"tokens trained", Scale::kLinear, 0.0, {}, [](double v) { return fmtx::count(v); }};
  lc.y = {"tokens per step", Scale::kLinear, 0.0, {}, [](double v) { return fmtx::count(v); }};
  Series s{"batch", {}, "", false, false};
  double done = 0;
  for (const PhasePlan& ph : p.phases) {
    auto stretch = [&](double tokens, double per_step) {
      s.points.push_back({done, per_step});
      done += tokens;
      s.points.push_back({done, per_step});
    };
    if (ph.ramp.empty()) stretch(ph.tokens, double(ph.par.tokens_per_step()));
    for (const RampLevel& r : ph.ramp) stretch(r.tokens, double(r.global_batch * ph.par.seq_len));
    lc.vlines.push_back({done, ph.name, "#999"});
  }
  lc.series.push_back(s);
  lc.width = 900;
  h.figure(report::render_svg(lc), "Global batch in tokens against tokens trained; a line marks the end of each phase.");
}

void memory_section(HtmlPage& h, const Plan& p) {
  h.heading(2, "Memory per GPU");
  StackedBars sb;
  sb.title = "Memory per GPU by item";
  sb.y_label = "GiB";
  for (const MemoryItem& it : p.mem.items()) sb.segments.push_back(it.label);
  sb.categories.push_back("this layout");
  sb.values.push_back(mem_values(p.mem));
  // The same layout under the other recomputation choices.
  for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (rc == p.par.cfg.recompute) continue;
    if (rc == Recompute::kSelective && p.par.cfg.flash_attention) continue;  // same as none with flash attention
    Parallel q = p.par;
    q.cfg.recompute = rc;
    sb.categories.push_back("recompute " + to_string(rc));
    sb.values.push_back(mem_values(memory_per_gpu(p.in.model, p.stats, q, p.in.cluster)));
  }
  for (size_t i = 0; i < p.layouts.size() && sb.categories.size() < 7; ++i) {
    if (p.layouts[i].label == layout_label(p.par.cfg)) continue;
    sb.categories.push_back(p.layouts[i].label);
    sb.values.push_back(mem_values(p.layouts[i].mem));
  }
  sb.limit = p.mem.capacity / kGiB;
  sb.limit_label = p.in.cluster.device.type + " capacity";
  sb.format = [](double v) { return fmt::format("{:.3g}", v); };
  sb.width = 980;
  h.figure(report::render_svg(sb),
           fmt::format("Stage {} (the fullest) of this layout, the same layout under other recomputation choices, and "
                       "the best layouts by MFU. Hover a segment for its size.",
                       p.mem.stage));
  std::vector<std::vector<std::string>> rows;
  for (const MemoryItem& it : p.mem.items())
    rows.push_back({it.label, gib(it.bytes), fmt::format("{:.1f}%", 100 * it.bytes / p.mem.total())});
  rows.push_back({"total", gib(p.mem.total()), fmt::format("{:.0f}% of capacity", 100 * p.mem.total() / p.mem.capacity)});
  h.table({"item", "per GPU", "share"}, rows, {}, int(rows.size()) - 1);
  h.note(fmt::format("Activations: {} micro-batches in flight on stage {} ({} layers). Without / selective / full "
                     "recomputation: {} / {} / {}.",
                     p.mem.in_flight, p.mem.stage, p.mem.layers_in_stage, gib(p.mem.activations_by_recompute[0]),
                     gib(p.mem.activations_by_recompute[1]), gib(p.mem.activations_by_recompute[2])));
  // Activations op by op (plan/activations.h), under the layout's recomputation choice.
  std::vector<std::vector<std::string>> ops;
  for (const MemoryItem& it : p.mem.activation_ops)
    if (it.bytes > 0 && p.mem.activations > 0)
      ops.push_back({it.key, gib(it.bytes), fmt::format("{:.1f}%", 100 * it.bytes / p.mem.activations)});
  if (!ops.empty()) h.table({"activation op", "per GPU", "share of activations"}, ops, {}, -1);
  h.note(fmt::format("Allocator overhead: {:g} of activations and buffers (memory.allocator = \"{}\"; "
                     "memory.fragmentation overrides it with a measured figure).",
                     allocator_overhead(p.par.cfg), to_string(p.par.cfg.allocator)));
}

void time_section(HtmlPage& h, const Plan& p) {
  h.heading(2, "Step time and MFU");
  const StepTime& t = p.time;
  auto row = [&](const std::string& what, double s, const std::string& note) {
    return std::vector<std::string>{what, fmt::format("{:.3f} s", s), fmt::format("{:.1f}%", 100 * s / t.step_s), note};
  };
  h.table(
      {"part", "per step", "share", "note"},
      {row("compute (forward + backward)", t.compute_s, "kernels of the busiest pipeline stage"),
       row("recomputation", t.recompute_s, to_string(p.par.cfg.recompute)),
       row("pipeline bubble", t.bubble_s, p.par.pp > 1 ? to_string(p.par.cfg.schedule) : "no pipeline"),
       row("TP communication, exposed", t.tp_exposed_s, fmt::format("of {:.3f} s", t.tp_comm_s)),
       row("EP all-to-all, exposed", t.ep_exposed_s, fmt::format("of {:.3f} s", t.ep_comm_s)),
       row("DP communication, exposed", t.dp_exposed_s, fmt::format("of {:.3f} s", t.dp_comm_s)),
       row("PP send/receive, exposed", t.pp_p2p_exposed_s, ""), row("optimizer step", t.optimizer_s, ""),
       row("step", t.step_s, fmt::format("MFU {}, HFU {}", fmtx::mfu(t.mfu, full_square_ratio(p.stats)), pct(t.hfu)))},
      {Align::kLeft, Align::kRight, Align::kRight, Align::kLeft}, 8);
  h.heading(3, "Where each figure comes from");
  std::vector<std::pair<std::string, std::string>> src;
  for (const TermSource& ts : step_time_sources(p.in.cluster, p.par.cfg)) src.push_back({ts.term, ts.source});
  h.key_values(src);
  if (p.layouts.empty()) return;
  HBars hb;
  hb.title = fmt::format("MFU by layout on {} GPUs (layouts that fit)", p.par.gpus);
  hb.x_label = "MFU (causal-half attention FLOPs)";
  const std::string mine = layout_label(p.par.cfg);
  bool seen = false;
  for (const LayoutOption& o : p.layouts) {
    if (o.label == mine) hb.highlight = int(hb.labels.size()), seen = true;
    hb.labels.push_back(o.label);
    hb.values.push_back(o.time.mfu);
    hb.notes.push_back(fmt::format("{:.2f} s/step, {}", o.time.step_s, gib(o.mem.total())));
  }
  if (!seen) {
    hb.highlight = int(hb.labels.size());
    hb.labels.push_back(mine + " (this layout)");
    hb.values.push_back(p.time.mfu);
    hb.notes.push_back(fmt::format("{:.2f} s/step, {}", p.time.step_s, gib(p.mem.total())));
  }
  hb.format = [](double v) { return fmt::format("{:.1f}%", 100 * v); };
  hb.width = 900;
  h.figure(report::render_svg(hb), "This layout in orange. Other layouts keep its batch, schedule, precision and "
                                   "overlap settings and sweep TP, PP, EP, the ZeRO stage and recomputation.");
}

// Interruption causes grouped for the timeline's colours (failure_causes() keys; -1 = a whole-rack outage).
std::pair<std::string, std::string> cause_group(int cause) {
  if (cause < 0) return {"rack outage", "#000000"};
  const std::string& k = failure_causes()[size_t(cause)].key;
  if (k.find("gpu") != std::string::npos || k == "silent_data_corruption") return {"GPU", "#D55E00"};
  if (k == "software_bug" || k == "dependency") return {"software", "#0072B2"};
  if (k == "network_switch_cable" || k == "nccl_watchdog") return {"network", "#009E73"};
  return {"host (maintenance, NIC, CPU, memory, disk, power)", "#CC79A7"};
}

// One simulated run (failure_sim.h) drawn against time, next to the analytic expectation.
void failure_timeline(HtmlPage& h, const Plan& p) {
  const Reliability& r = p.rel;
  const FailureSimResult& sim = r.sim;
  h.heading(3, "A simulated run");
  LineChart lc;
  lc.title = "Training progress against wall time, one simulated run";
  lc.x = {"days", Scale::kLinear, 0.0, {}, [](double v) { return report::compact_number(v); }};
  lc.y = {"training done", Scale::kLinear, 0.0, 1.0, [](double v) { return fmt::format("{:.0f}%", 100 * v); }};
  Series s{"work done (drops: compute lost since the last checkpoint)", {}, "#333", false, false};
  for (auto [t, f] : sim.progress) s.points.push_back({t / 86400, f});
  lc.series.push_back(s);
  bool waited = false, shrunk = false;
  for (const SimPeriod& q : sim.periods) {
    lc.bands.push_back({q.t0_s / 86400, q.t1_s / 86400,
                        q.shrunk ? fmt::format("shrunk to {:.1f}% throughput", 100 * q.speed) : "waiting for a repair",
                        q.shrunk ? "#fde3a7" : "#f4b6b6"});
    (q.shrunk ? shrunk : waited) = true;
  }
  std::vector<std::string> seen;
  for (const SimInterruption& ev : sim.interruptions) {
    const auto [group, color] = cause_group(ev.cause);
    const std::string cause = ev.cause < 0 ? "whole-rack outage" : failure_causes()[size_t(ev.cause)].label;
    lc.ticks.push_back({ev.t_s / 86400,
                        fmt::format("{}{}, {:.0f} min of compute lost", cause,
                                    ev.unit_lost ? (ev.spare_used ? ", rack replaced by a spare" : ", rack lost, no spare")
                                                 : "",
                                    ev.lost_s / 60),
                        color});
    if (std::find(seen.begin(), seen.end(), group) == seen.end()) {
      seen.push_back(group);
      lc.legend_extra.push_back({group, color});
    }
  }
  if (waited) lc.legend_extra.push_back({"waiting for a repair", "#f4b6b6"});
  if (shrunk) lc.legend_extra.push_back({"running shrunk", "#fde3a7"});
  lc.vlines.push_back({r.wall_days, fmt::format("expected end {:.1f} days", r.wall_days), "#D55E00"});
  lc.width = 980;
  lc.height = 440;
  h.figure(report::render_svg(lc),
           fmt::format("Seed {} (moetrain plan --seed): {:.1f} days end to end{} against {:.1f} expected by the analytic "
                       "model (Daly's goodput x availability; one run scatters around it). {} interruptions (marks at "
                       "the bottom, coloured by cause; hover for details), {} racks lost, {} replaced by a spare, {} "
                       "planned restarts to rejoin; {:.1f} h waiting, {:.1f} h shrunk, {:.1f} h restarting, {:.1f} h of "
                       "compute lost, {:.1f} h writing checkpoints.",
                       p.in.sim_seed, r.sim_days, sim.finished ? "" : " (stopped: no end in sight)", r.wall_days,
                       sim.interruptions.size(), sim.units_lost, sim.spares_used, sim.planned_restarts,
                       sim.waiting_s / 3600, sim.shrunk_s / 3600, sim.restarting_s / 3600, sim.lost_s / 3600,
                       sim.checkpoint_s / 3600));
}

// Days end to end against spare racks, under each shortage policy (Reliability::spares).
void spares_chart(HtmlPage& h, const Plan& p) {
  const Reliability& r = p.rel;
  if (r.spares.size() < 2) return;
  LineChart lc;
  lc.title = "Days end to end vs spare racks";
  lc.x = {"spare racks (held out of the job)", Scale::kLinear, {}, {}, [](double v) { return fmt::format("{:g}", v); }};
  lc.y = {"days end to end", Scale::kLinear, {}, {}, [](double v) { return fmt::format("{:.3g}", v); }};
  Series wait{"wait for a repair", {}, "#D55E00", false, true}, shrink{"shrink by whole replicas", {}, "#0072B2", true, true};
  for (const SpareOption& o : r.spares) {
    wait.points.push_back({double(o.spare_racks), o.days_wait});
    shrink.points.push_back({double(o.spare_racks), o.days_shrink});
    if (o.configured)
      lc.markers.push_back({double(o.spare_racks), o.effective_days,
                            fmt::format("configured ({})", to_string(r.rates.policy)), "#000"});
  }
  double lo = 1e300, hi = 0;
  for (const Series* se : {&wait, &shrink})
    for (auto [x, y] : se->points) lo = std::min(lo, y), hi = std::max(hi, y);
  if (hi > 4 * lo) lc.y.scale = Scale::kLog;  // waiting without spares can dwarf the rest
  lc.series = {wait, shrink};
  h.figure(report::render_svg(lc), "Each point is the job on the racks left after holding some spare (its dp the "
                                   "largest the batch allows): fewer GPUs, better odds of a free spare. Shrinking "
                                   "drops data-parallel replicas instead of waiting when no spare is free.");
}

void failure_section(HtmlPage& h, const Plan& p) {
  const Reliability& r = p.rel;
  h.heading(2, "Failures, checkpoints and goodput");
  LineChart lc;
  lc.title = "Checkpoint goodput vs checkpoint interval";
  lc.x = {"checkpoint interval (minutes)", Scale::kLog, {}, {}, {}};
  lc.y = {"goodput (fraction of wall time training)", Scale::kLinear, {}, {}, {}};
  Series s{"Daly (2006) expected goodput", {}, "", false, false};
  for (auto [tau, g] : r.goodput_curve) s.points.push_back({tau / 60, g});
  lc.series.push_back(s);
  lc.vlines.push_back({r.young_interval_s / 60, fmt::format("Young {:.0f} min", r.young_interval_s / 60), "#009E73"});
  lc.vlines.push_back({r.daly_interval_s / 60, fmt::format("Daly {:.0f} min", r.daly_interval_s / 60), "#D55E00"});
  lc.markers.push_back({r.checkpoint_interval_s / 60, r.checkpoint_goodput,
                        fmt::format("chosen: {:.1f}%", 100 * r.checkpoint_goodput), "#D55E00"});
  lc.y.format = [](double v) { return fmt::format("{:.1f}%", 100 * v); };
  lc.y.max = 1.0;  // headroom for the optimum's label
  lc.x.format = [](double v) { return report::compact_number(v); };
  h.figure(report::render_svg(lc),
           fmt::format("Job MTBF {:.1f} h, checkpoint blocks training {:.0f} s, restart {:.1f} min (restart overhead "
                       "plus loading {:.2f} TB).",
                       r.mtbf_s / 3600, r.checkpoint_write_s, r.restart_s / 60, r.checkpoint_bytes / 1e12));
  h.key_values({{"expected interruptions", fmt::format("{:.0f}", r.expected_interruptions)},
                {"checkpoint interval", fmt::format("{} (Young {}, Daly {})", minutes(r.checkpoint_interval_s),
                                                    minutes(r.young_interval_s), minutes(r.daly_interval_s))},
                {"checkpoint goodput", pct(r.checkpoint_goodput)},
                {"failure causes", fmt::format("{:.0f}% take a node out (hardware), the rest only restart the job",
                                               100 * r.node_share)},
                {"repairs and spares", fmt::format("{:.2f} node losses/day, {:.0f}% absorbed inside the rack; {:.2f} "
                                                   "racks in repair on average; a spare free {:.1f}% of the time",
                                                   24 * r.rates.node_losses_per_h, 100 * r.rates.absorbed,
                                                   r.rates.units_out_mean, 100 * r.rates.p_spare)},
                {"availability", fmt::format("{:.3f}% ({} when no spare is free; {:.2f} job-hours lost per shortage)",
                                             100 * r.rates.availability, to_string(r.rates.policy),
                                             r.rates.shortage_cost_h)},
                {"goodput", pct(r.goodput)},
                {"days", fmt::format("{:.1f} compute, {:.1f} end to end", p.days, r.wall_days)}});
  h.heading(3, "Spare racks");
  std::vector<std::vector<std::string>> rows;
  int hl = -1;
  for (const SpareOption& o : r.spares) {
    if (o.configured) hl = int(rows.size());
    rows.push_back({fmt::format("{} used + {} spare{}", o.racks_used, o.spare_racks, o.configured ? " (configured)" : ""),
                    fmt::format("{}", o.gpus), fmt::format("{}", o.dp), fmt::format("{:.3f}%", 100 * o.availability),
                    fmt::format("{:.1f} h", o.mtbf_s / 3600), pct(o.checkpoint_goodput), pct(o.goodput),
                    fmt::format("{:.1f}", o.compute_days), fmt::format("{:.1f}", o.effective_days),
                    fmt::format("{:.1f}", o.days_wait), fmt::format("{:.1f}", o.days_shrink)});
  }
  h.table({"racks", "GPUs", "dp", "availability", "job MTBF", "ckpt goodput", "goodput", "compute days",
           "effective days", "days if waiting", "days if shrinking"},
          rows, {}, hl);
  h.note("Holding racks back costs throughput (proportional to GPUs) and buys availability: a rack lost to a hardware "
         "failure (not absorbed by the SLA or the rack's slack) is replaced by a free spare; with none free the job "
         "waits for a repair or drops data-parallel replicas until one returns. Only data-parallel degrees that divide "
         "the global batch are offered.");
  spares_chart(h, p);
  failure_timeline(h, p);
}

void chinchilla_section(HtmlPage& h, const Plan& p) {
  const ChinchillaReport& ch = p.chin;
  const ScalingLaw& law = p.in.law;
  h.heading(2, "Parameters vs data");
  LineChart lc;
  lc.title = fmt::format("isoFLOP curves, L(N, D) = {} + {}/N^{} + {}/D^{} ({})", law.E, law.A, law.alpha, law.B,
                         law.beta, law.name);
  lc.x = {"parameters N (active)", Scale::kLog, {}, {}, [](double v) { return fmtx::count(v); }};
  lc.y = {"predicted loss", Scale::kLinear, {}, {}, {}};
  const double n_opt = ch.optimal.N;
  double ymax = 0, ymin = 1e9;
  int i = 0;
  for (double f : {0.01, 0.1, 1.0, 10.0, 100.0}) {
    const double C = ch.compute * f;
    const Allocation a = compute_optimal(law, C);
    Series s{fmt::format("C = {} FLOP", fmtx::flops(C)), isoflop_curve(law, C, a.N / 30, a.N * 30, 80), "", f != 1.0, false};
    for (auto [n, l] : s.points) ymax = std::max(ymax, l), ymin = std::min(ymin, l);
    lc.series.push_back(s);
    lc.markers.push_back({a.N, a.loss, f == 1.0 ? "optimum" : "", report::palette(size_t(i))});
    ++i;
  }
  lc.markers.push_back({ch.n_active, ch.loss_at_plan, fmt::format("this run ({:.1f}x)", ch.overtrain_k), "#000"});
  lc.y.min = ymin - 0.02 * (ymax - ymin);
  lc.y.max = std::min(ymax, ymin + 1.5);
  lc.width = 760;
  lc.height = 440;
  (void)n_opt;
  h.figure(report::render_svg(lc), "Loss against model size at fixed compute (C = 6 N D); dots mark each curve's "
                                   "optimum, the black dot this run (active parameters, token budget).");
  std::vector<std::vector<std::string>> rows;
  for (const Overtrain& o : ch.table)
    rows.push_back({fmt::format("{:.0f}x", o.k), fmtx::count(o.at.N), fmtx::count(o.at.D), fmt::format("{:.0f}", o.at.D / o.at.N),
                    fmt::format("{:.4f}", o.at.loss), fmt::format("+{:.4f}", o.loss_penalty),
                    fmt::format("{:.0f}%", 100 * o.inference_saving)});
  h.table({"over-training k", "N", "D", "tokens/param", "loss", "penalty", "inference saved"}, rows);
  h.note(fmt::format("At C = {} FLOP the optimum is N = {}, D = {} ({:.1f} tokens per parameter). Training k times "
                     "past that ratio at the same compute shrinks the model by sqrt(k): inference FLOPs per token fall "
                     "by 1 - 1/sqrt(k) for the loss penalty shown.",
                     fmtx::flops(ch.compute), fmtx::count(ch.optimal.N), fmtx::count(ch.optimal.D), ch.optimal.tokens_per_param()));
}

void inference_section(HtmlPage& h, const Plan& p) {
  const ModelStats& s = p.stats;
  h.heading(2, "Inference cost of the architecture");
  h.key_values({{"active parameters", fmtx::count(double(s.active_params))},
                {"KV cache per token", fmtx::bytes(s.kv_bytes_per_token) + " (bf16, every layer)"},
                {"KV cache per sequence", fmt::format("{} at {} tokens (sliding-window layers keep {} entries)",
                                                      fmtx::bytes(s.kv_bytes_per_sequence), s.seq_len, p.in.model.window)},
                {"forward FLOPs per token", fmt::format("{} prefill (mean over {} tokens), {} decode at full context",
                                                        fmtx::flops(s.prefill_flops_per_token), s.seq_len,
                                                        fmtx::flops(s.decode_flops_per_token))}});
}

// The best layout's answer and plain FSDP's, side by side, with what both assume.
void largest_side_by_side(HtmlPage& h, const LargestModel& lm) {
  auto col = [](const LargestFit& f) {
    if (!f.found) return std::vector<std::string>{"does not fit", "", "", "", "", f.binding};
    return std::vector<std::string>{
        fmtx::count(double(f.total_params)), fmtx::count(double(f.active_params)),
        fmt::format("{} layers{}", f.model.n_layers,
                    f.model.n_experts ? fmt::format(", {} experts", f.model.n_experts) : ""),
        f.best.label, fmt::format("{}, {}", pct(f.best.time.mfu), gib(f.best.mem.total())),
        fmt::format("{}: {}", fmtx::count(double(f.next_params)), f.binding)};
  };
  const std::vector<std::string> names = {"parameters", "active", "shape", "layout", "MFU, memory per GPU",
                                          "one size up binds on"};
  const auto best = col(lm), fsdp = col(lm.fsdp), streaming = col(lm.streaming);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < names.size(); ++i) rows.push_back({names[i], best[i], fsdp[i], streaming[i]});
  h.table({"", "best layout found", "plain FSDP (ZeRO-3 only)", "weight streaming from host memory"}, rows,
          {Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft});
  const SearchAssumptions& a = lm.assumptions;
  std::string rc;
  for (Recompute x : a.recompute) rc += (rc.empty() ? "" : ", ") + to_string(x);
  h.key_values({{"sequence length", fmt::format("{} tokens", a.seq_len)},
                {"batch", fmt::format("micro-batch {} sequences; global batch dp x micro-batch x {} x pp (enough "
                                      "micro-batches to fill the pipeline)", a.micro_batch, a.microbatches_per_stage)},
                {"recomputation", fmt::format("tried {}; each answer takes its best that fits", rc)},
                {"precision and optimizer",
                 fmt::format("{} weights, {} gradients, {}: {:g} bytes per parameter before sharding",
                             a.params == Precision::kBf16 ? "bf16 (fp32 master copy)" : "fp32",
                             a.grads == Precision::kBf16 ? "bf16" : "fp32",
                             fmt::format("{} ({} {} moment{})", a.optimizer == OptimizerKind::kAdamW ? "AdamW" : "Muon",
                                         a.optimizer == OptimizerKind::kAdamW ? 2 : 1,
                                         a.moments == Precision::kBf16 ? "bf16" : "fp32",
                                         a.optimizer == OptimizerKind::kAdamW ? "s" : ""),
                             a.state_bytes_per_param)},
                {"memory headroom", fmt::format("fits when the fullest stage needs at most {} per GPU, allocator "
                                                "overhead {:g} of activations and buffers and the runtime included; "
                                                "no further margin", gib(a.capacity_bytes), a.allocator_overhead)},
                {"layouts (best)", a.layouts_best},
                {"layouts (plain FSDP)", a.layouts_fsdp},
                {"layouts (weight streaming)",
                 "as the best layout's, with memory.offload = \"params\" from host memory, prefetch of at least "
                 "one layer: fits when the GPU's layer buffers and activations fit and the offloaded state fits "
                 "the host memory of the nodes (topology.host_memory_gib)"}});
}

void largest_section(HtmlPage& h, const Plan& p) {
  const LargestModel& lm = p.largest;
  if (!lm.found && lm.binding.empty()) return;
  h.heading(2, "Largest model per NVLink domain");
  largest_side_by_side(h, lm);
  if (lm.found) {
    h.key_values({{"family", fmt::format("this architecture, varying {}", to_string(lm.axis))},
                  {"GPUs", fmt::format("{} (one NVLink domain, as many as the SLA guarantees)", lm.gpus)},
                  {"largest that fits", fmt::format("{} parameters ({} active): {} layers{}", fmtx::count(double(lm.total_params)),
                                                    fmtx::count(double(lm.active_params)), lm.model.n_layers,
                                                    lm.model.n_experts ? fmt::format(", {} experts", lm.model.n_experts)
                                                                       : "")},
                  {"best layout", fmt::format("{}: MFU {}, {} per GPU", lm.best.label, pct(lm.best.time.mfu),
                                              gib(lm.best.mem.total()))},
                  {"what binds", fmt::format("next size ({} parameters): {}", fmtx::count(double(lm.next_params)), lm.binding)}});
    if (lm.next_mem.capacity > 0) {
      StackedBars sb;
      sb.title = "Largest fit vs one size up";
      sb.y_label = "GiB";
      for (const MemoryItem& it : lm.best.mem.items()) sb.segments.push_back(it.label);
      sb.categories = {fmt::format("{} ({})", fmtx::count(double(lm.total_params)), lm.best.label),
                       fmt::format("{} ({})", fmtx::count(double(lm.next_params)), lm.next_label)};
      sb.values = {mem_values(lm.best.mem), mem_values(lm.next_mem)};
      sb.limit = lm.next_mem.capacity / kGiB;
      sb.limit_label = "capacity";
      sb.format = [](double v) { return fmt::format("{:.3g}", v); };
      h.figure(report::render_svg(sb), "Memory per GPU of the largest member that fits (best layout by MFU) and of "
                                       "the next member (the layout needing the least memory).");
    }
  } else {
    h.paragraph(fmt::format("Even the smallest member of the family does not fit {} GPUs: {}", lm.gpus, lm.binding));
  }
}

}  // namespace

std::string to_html(const Plan& p) {
  HtmlPage h(fmt::format("Training plan: {} on {} x {}", p.in.model_source, p.par.gpus, p.in.cluster.device.type));
  summary(h, p);
  phases_section(h, p);
  memory_section(h, p);
  time_section(h, p);
  failure_section(h, p);
  chinchilla_section(h, p);
  inference_section(h, p);
  largest_section(h, p);
  h.heading(2, "Assumptions");
  h.note("Compute: roofline per kernel with the efficiency model of the cluster file (GEMM, fused attention, "
         "element-wise traffic, per-kernel latency), calibrated on the Megatron-LM H100 table. Communication: ring / "
         "hierarchical collectives at the stated link efficiency; overlap as the layout says. FLOPs: the count of "
         "`moetrain bench` (6 x active matmul parameters + attention). See docs/planner.md.");
  return h.render();
}

}  // namespace mt::plan
