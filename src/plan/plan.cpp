// plan.cpp — make_plan (see plan.h), the JSON document and the terminal table.
#include "plan/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "plan/format.h"
#include "plan/reliability.h"

namespace mt::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Bytes of one checkpoint: weights, fp32 master copy and optimizer moments.
double checkpoint_bytes(const ModelStats& s, const LayoutConfig& l) {
  const double opt = l.optimizer == OptimizerKind::kAdamW ? 8.0 : 4.0;
  const double per_param = l.params == Precision::kBf16 ? 2.0 + 4.0 + opt : 4.0 + opt;
  return per_param * double(s.total);
}

// The failure model's view of a job of `gpus` GPUs on `racks_used` of the cluster's racks.
FailureInputs failure_inputs(const Plan& p, int64_t gpus, int64_t racks_used, double restart_s) {
  const ClusterConfig& c = p.in.cluster;
  FailureInputs f;
  f.job_gpus = gpus;
  f.units_used = racks_used;
  f.spare_units = c.racks - racks_used;
  f.gpus_per_unit = c.gpus_per_rack;
  f.gpus_needed_per_unit = (gpus + racks_used - 1) / racks_used;
  f.gpus_per_node = std::min(c.device.gpus_per_node, c.gpus_per_rack);
  f.sla_min_gpus_up = c.sla_min_gpus_up;
  // A replica can be dropped only with its whole expert-parallel group: pp x lcm(tp x cp, ep) GPUs.
  f.shrink_gpus = p.par.pp * std::lcm(p.par.tp * p.par.cp, p.par.ep);
  f.gpu_mtbf_h = c.gpu_mtbf_hours;
  f.node_share = c.node_share();
  f.repair_h = c.gpu_repair_hours;
  f.rack_mtbf_h = c.rack_mtbf_hours;
  f.rack_repair_h = c.rack_repair_hours;
  f.restart_s = restart_s;
  f.policy = c.on_shortage;
  return f;
}

Reliability reliability(const Plan& p) {
  const ClusterConfig& c = p.in.cluster;
  const LayoutConfig& l = p.par.cfg;
  Reliability r;
  const double gpus = double(p.par.gpus);
  const int64_t per_rack = c.usable_gpus_per_rack();
  const int64_t racks_used = std::max<int64_t>(1, (p.par.gpus + per_rack - 1) / per_rack);
  r.checkpoint_bytes = checkpoint_bytes(p.stats, l);
  r.checkpoint_full_write_s = r.checkpoint_bytes / (c.storage_write_gbps * 1e9);
  r.checkpoint_write_s = l.checkpoint_async ? r.checkpoint_bytes / gpus / (c.host_link_gbps * 1e9)
                                            : r.checkpoint_full_write_s;
  r.restart_s = c.restart_minutes * 60.0 + r.checkpoint_bytes / (c.storage_read_gbps * 1e9);
  r.node_share = c.node_share();
  r.rates = failure_rates(failure_inputs(p, p.par.gpus, racks_used, r.restart_s));
  r.mtbf_s = 3600.0 / r.rates.interruptions_per_h;
  r.young_interval_s = young_interval_s(r.checkpoint_write_s, r.mtbf_s);
  r.daly_interval_s = daly_interval_s(r.checkpoint_write_s, r.mtbf_s);
  r.checkpoint_interval_s = l.checkpoint_interval_minutes > 0 ? l.checkpoint_interval_minutes * 60.0 : r.daly_interval_s;
  if (l.checkpoint_async)  // the next checkpoint cannot start before the previous one is persisted
    r.checkpoint_interval_s = std::max(r.checkpoint_interval_s, r.checkpoint_full_write_s);
  r.checkpoint_goodput = checkpoint_goodput(r.checkpoint_interval_s, r.checkpoint_write_s, r.restart_s, r.mtbf_s);
  r.goodput = r.checkpoint_goodput * r.rates.availability;
  r.wall_days = p.days / r.goodput;
  r.expected_interruptions = p.days * 86400.0 / r.checkpoint_goodput / r.mtbf_s;

  FailureSimInputs sim;
  sim.job = failure_inputs(p, p.par.gpus, racks_used, r.restart_s);
  sim.cause_weights = c.failure_cause_weights;
  sim.work_s = p.days * 86400.0;
  sim.checkpoint_interval_s = r.checkpoint_interval_s;
  sim.checkpoint_write_s = r.checkpoint_write_s;
  sim.seed = p.in.sim_seed;
  r.sim = simulate_failures(sim);
  r.sim_days = r.sim.wall_s / 86400.0;

  for (int i = 0; i <= 60; ++i) {
    const double lo = std::max(r.checkpoint_write_s, 0.05 * r.daly_interval_s), hi = 20.0 * r.daly_interval_s;
    const double tau = lo * std::pow(hi / lo, double(i) / 60.0);
    r.goodput_curve.push_back({tau, checkpoint_goodput(tau, r.checkpoint_write_s, r.restart_s, r.mtbf_s)});
  }

  // The spare-rack trade: the job on fewer racks (throughput proportional to GPUs), the rest spare. Only
  // data-parallel degrees the batch allows are offered: dp x micro_batch divides the global batch and
  // dp x tp is a multiple of ep; for each number of racks used, the largest such dp that fits.
  const Parallel& par = p.par;
  const int64_t seqs = par.global_batch / par.micro_batch;
  const int64_t tp_pp = par.tp * par.cp * par.pp;
  std::vector<int64_t> seen_racks;
  std::vector<SpareOption> all;
  for (int64_t dp = std::min<int64_t>(seqs, c.total_gpus() / tp_pp); dp >= 1; --dp) {
    if (seqs % dp != 0 || (dp * par.cp * par.tp) % par.ep != 0) continue;
    const int64_t n = dp * tp_pp;
    const int64_t used = (n + per_rack - 1) / per_rack;
    const bool seen = std::find(seen_racks.begin(), seen_racks.end(), used) != seen_racks.end();
    if (used > c.racks || (seen && dp != par.dp)) continue;
    seen_racks.push_back(used);
    SpareOption o;
    o.dp = dp;
    o.gpus = n;
    o.racks_used = used;
    o.spare_racks = c.racks - used;
    o.configured = dp == par.dp;
    const FailureRates fr = failure_rates(failure_inputs(p, n, used, r.restart_s));
    o.availability = fr.availability;
    o.mtbf_s = 3600.0 / fr.interruptions_per_h;
    o.checkpoint_interval_s = daly_interval_s(r.checkpoint_write_s, o.mtbf_s);
    if (l.checkpoint_async) o.checkpoint_interval_s = std::max(o.checkpoint_interval_s, r.checkpoint_full_write_s);
    o.checkpoint_goodput = checkpoint_goodput(o.checkpoint_interval_s, r.checkpoint_write_s, r.restart_s, o.mtbf_s);
    o.goodput = o.availability * o.checkpoint_goodput;
    o.compute_days = p.days * gpus / double(o.gpus);
    o.effective_days = o.compute_days / o.goodput;
    for (Shortage s : {Shortage::kWait, Shortage::kShrink}) {
      FailureInputs fi = failure_inputs(p, n, used, r.restart_s);
      fi.policy = s;
      const double days = o.compute_days / (failure_rates(fi).availability * o.checkpoint_goodput);
      (s == Shortage::kWait ? o.days_wait : o.days_shrink) = days;
    }
    all.push_back(o);
  }
  // Fewest spares first; keep the four leanest, and the configured option with its neighbours.
  std::stable_sort(all.begin(), all.end(),
                   [](const SpareOption& a, const SpareOption& b) { return a.spare_racks < b.spare_racks; });
  size_t k = 0;
  while (k < all.size() && !all[k].configured) ++k;
  for (size_t i = 0; i < all.size(); ++i)
    if (i < 4 || (k < all.size() && i + 2 >= k && i <= k + 3)) r.spares.push_back(all[i]);
  return r;
}

ChinchillaReport chinchilla(const Plan& p) {
  ChinchillaReport c;
  c.n_active = double(p.stats.active_params);
  c.tokens = p.in.tokens;
  c.compute = 6.0 * c.n_active * c.tokens;
  c.optimal = compute_optimal(p.in.law, c.compute);
  c.loss_at_plan = loss(p.in.law, c.n_active, c.tokens);
  c.overtrain_k = overtrain_factor(p.in.law, c.n_active, c.tokens);
  for (double k : {1.0, 2.0, 4.0, 8.0, 13.0, 16.0, 32.0}) c.table.push_back(overtrain(p.in.law, c.compute, k));
  return c;
}

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / kGiB); }


std::string duration(double s) {
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 172800) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

// The per-phase table of the terminal output.
// An MFU figure with its convention (format.h): the full-square figure too when it is over 5% higher.
std::string mfu_of(const StepTime& t) { return fmtx::mfu(t.mfu, t.mfu > 0 ? t.mfu_full_square / t.mfu : 1.0); }

void phase_table(const Plan& p, std::string& o) {
  auto line = [&o](const std::string& head, const std::string& body) { o += fmt::format("{:<12}{}\n", head, body); };
  const PhaseTotals& t = p.totals;
  line("Phases", fmt::format("{:<16} {:>7} {:>7} {:>13} {:>8} {:>12} {:>9} {:>8} {:>6} {:>9} {:>7}", "phase", "tokens",
                             "seq", "batch (seqs)", "tok/step", "tp pp dp", "steps", "step s", "MFU", "mem/GPU",
                             "days"));
  for (const PhasePlan& ph : p.phases) {
    const Parallel& q = ph.par;
    const std::string batch = ph.ramp_from > 0 ? fmt::format("{}->{}", ph.ramp_from, q.global_batch)
                                               : fmt::format("{}", q.global_batch);
    line("", fmt::format("{:<16} {:>7} {:>7} {:>13} {:>8} {:>12} {:>9} {:>8.3f} {:>5.1f}% {:>9} {:>7.2f}{}",
                         ph.name.substr(0, 16), fmtx::count(ph.tokens), q.seq_len, batch,
                         fmtx::count(double(q.tokens_per_step())), fmt::format("{} {} {}", q.tp, q.pp, q.dp),
                         ph.steps, ph.time.step_s, 100 * ph.mfu, gib(ph.mem.total()), ph.days,
                         ph.mem.fits() ? "" : "  DOES NOT FIT"));
  }
  line("", fmt::format("{:<16} {:>7} {:>40} {:>9} {:>8} {:>5.1f}% {:>9} {:>7.2f}", "total", fmtx::count(t.tokens), "",
                       t.steps, "", 100 * t.mfu_by_tokens, gib(t.memory_bytes), t.days));
  line("", fmt::format("MFU weighted by tokens (by GPU-time {:.1f}%); memory of the fullest phase ({}); the sections "
                       "above and below describe \"{}\" (the most tokens)",
                       100 * t.mfu_by_time, p.phases[t.fullest].name, p.phases[t.main].name));
  std::string full;  // the phases whose full-square MFU is over 5% above the causal-half one
  for (const PhasePlan& ph : p.phases)
    if (full_square_ratio(ph.stats) - 1 > kMfuConventionGap)
      full +=
          fmt::format("{}{} {:.1f}%", full.empty() ? "" : ", ", ph.name, 100 * ph.mfu * full_square_ratio(ph.stats));
  line("", "MFU counts causal-half attention FLOPs" +
               (full.empty() ? std::string(" (full square within 5% in every phase)") : "; full square: " + full));
}

}  // namespace

Result<Plan> make_plan(const PlanInputs& in) {
  if (!(in.tokens > 0)) return Status::errorf("--tokens: must be > 0, got {}", in.tokens);
  // Steps are counted in int64: a count past 1e18 (50,000 times the largest
  // published runs) is a typo, not a plan.
  if (!(in.tokens <= 1e18))
    return Status::errorf("--tokens: {:.3g} is more than the planner's bound of 1e18 tokens (is the count off by a "
                          "few zeros? 15e12 = 15T)",
                          in.tokens);
  Plan p;
  p.in = in;
  auto phases = plan_phases(in.model, in.model_seq_len, in.cluster, in.layout, in.tokens);
  if (!phases) return phases.status();
  p.phases = std::move(*phases);
  p.totals = phase_totals(p.phases);
  const PhasePlan& main = p.phases[p.totals.main];
  p.par = main.par;
  p.stats = main.stats;
  p.mem = main.mem;
  p.time = main.time;
  for (const PhasePlan& ph : p.phases) {
    // With phases every warning names its phase.
    const std::string who = p.phases.size() > 1 ? fmt::format("{}: ", ph.name) : "";
    for (const std::string& w : ph.par.warnings) p.warnings.push_back(who + w);
    if (ph.mem.fits()) continue;
    std::string why = fmt::format("{}does not fit: stage {} needs {} per GPU, the {} has {}", who, ph.mem.stage,
                                  gib(ph.mem.total()), in.cluster.device.type, gib(ph.mem.capacity));
    if (ph.mem.total() - ph.mem.fragmentation <= ph.mem.capacity)
      why += fmt::format(" (it fits without the allocator overhead of {}: {:g} of activations and buffers for "
                         "memory.allocator = \"{}\"; set memory.fragmentation to what your allocator shows)",
                         gib(ph.mem.fragmentation), allocator_overhead(ph.par.cfg), to_string(ph.par.cfg.allocator));
    p.warnings.push_back(why);
  }
  p.steps = p.totals.steps;
  p.days = p.totals.days;
  // The failure simulation walks the run interruption by interruption: a
  // budget of centuries (a typo such as 15e18 for 15e12) would take minutes
  // and gigabytes before saying anything useful.
  constexpr double kMaxPlanDays = 100 * 365.25;
  if (!(p.days > 0 && p.days <= kMaxPlanDays))
    return Status::errorf("--tokens: {:.3g} tokens take {:.3g} days of compute on this cluster and layout, more than "
                          "the planner's bound of 100 years (is the count off by a few zeros? 15e12 = 15T)",
                          in.tokens, p.days);
  p.gpu_hours = p.totals.gpu_hours;
  p.cost_usd = p.gpu_hours * in.cluster.gpu_hour_usd;
  p.rel = reliability(p);
  p.chin = chinchilla(p);
  if (in.model.n_experts > 0)
    p.warnings.push_back("param:data uses active parameters in a dense-model scaling law: a first-order view for MoE");
  SearchMode mode = in.search;
  if (mode == SearchMode::kAuto) mode = in.model.n_experts > 0 ? SearchMode::kExperts : SearchMode::kLayers;
  if (mode == SearchMode::kExperts && in.model.n_experts == 0) mode = SearchMode::kLayers;
  if (mode != SearchMode::kNone && in.cluster.device.kind == DeviceKind::kGpu)
    p.largest = largest_model_per_domain(in.model, p.par.seq_len, in.cluster, p.par.cfg,
                                         mode == SearchMode::kLayers ? FamilyAxis::kLayers : FamilyAxis::kExperts);
  if (in.sweep_layouts && in.cluster.device.kind == DeviceKind::kGpu) {
    p.layouts = sweep_layouts(in.model, p.stats, p.par.seq_len, in.cluster, p.par.cfg, p.par.gpus);
    if (p.layouts.size() > 16) p.layouts.resize(16);
  }
  return p;
}

namespace {

// The command-line contract (docs/planner.md): keys always present, at the top level.
void put_summary(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  j["memory_per_gpu_bytes"] = std::llround(p.totals.memory_bytes);  // the fullest phase
  j["step_time_s"] = p.time.step_s;                                  // the main phase
  j["mfu"] = p.totals.mfu_by_tokens;
  {  // the same FLOPs over the full attention square, token-weighted over the phases
    double full = 0;
    for (const PhasePlan& ph : p.phases) full += ph.tokens * ph.mfu * full_square_ratio(ph.stats);
    j["mfu_full_square"] = p.totals.tokens > 0 ? full / p.totals.tokens : 0.0;
    j["mfu_convention"] = "causal half: attention FLOPs over the keys each query attends to (model/flops.h)";
  }
  j["days"] = p.days;
  j["gpu_hours"] = p.gpu_hours;
  j["expected_interruptions"] = p.rel.expected_interruptions;
  j["checkpoint_interval_s"] = p.rel.checkpoint_interval_s;
  j["goodput"] = p.rel.goodput;

  j["fits"] = p.totals.fits;
  j["effective_days"] = p.rel.wall_days;
  j["tokens"] = p.in.tokens;
  j["steps"] = p.steps;
  j["tokens_per_s"] = p.time.tokens_per_s;
  j["hfu"] = p.time.hfu;
  if (p.in.cluster.gpu_hour_usd > 0) j["cost_usd"] = p.cost_usd;
  j["warnings"] = p.warnings;

}

// "model" and "inference": the model's sizes and its serving footprint.
void put_model(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  const ModelStats& s = p.stats;
  j["model"] = {{"source", p.in.model_source},
                {"total_params", s.total},
                {"active_params", s.active_params},
                {"active_matmul_params", s.active_matmul},
                {"expert_params", s.expert_params},
                {"layers", p.in.model.n_layers},
                {"moe_layers", s.moe_layers},
                {"seq_len", p.par.seq_len},
                {"train_flops_per_token", s.train_flops_per_token},
                {"attention", p.in.model.mla() ? "mla" : "gqa"},
                {"mtp_depth", p.in.model.mtp_depth},
                {"mtp_params", s.mtp_params}};
  if (p.in.model.mla())
    j["model"]["mla"] = {{"q_lora_rank", p.in.model.q_lora_rank},
                         {"kv_lora_rank", p.in.model.kv_lora_rank},
                         {"qk_nope_head_dim", p.in.model.qk_nope_head_dim},
                         {"qk_rope_head_dim", p.in.model.qk_rope_head_dim},
                         {"v_head_dim", p.in.model.v_head_dim}};
  j["inference"] = {{"kv_cache_bytes_per_token", s.kv_bytes_per_token},
                    {"kv_cache_bytes_per_sequence", s.kv_bytes_per_sequence},
                    {"recurrent_state_bytes_per_sequence", s.state_bytes_per_sequence},
                    {"context", s.seq_len},
                    {"prefill_flops_per_token", s.prefill_flops_per_token},
                    {"decode_flops_per_token", s.decode_flops_per_token},
                    {"active_params", s.active_params}};
}

// "cluster": the hardware planned on.
void put_cluster(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  const ClusterConfig& c = p.in.cluster;
  j["cluster"] = {{"source", c.source},
                  {"name", c.name},
                  {"gpu", c.device.type},
                  {"peak_tflops", c.device.peak_tflops},
                  {"hbm_gib", c.device.hbm_gib},
                  {"sms", c.device.sms},
                  {"gpus_per_domain", c.device.gpus_per_domain},
                  {"racks", c.racks},
                  {"spare_racks", c.spare_racks},
                  {"gpus_per_rack", c.gpus_per_rack},
                  {"usable_gpus", c.usable_gpus()}};
}

// "layout": the parallel layout (and the expert layout of a MoE model).
void put_layout(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  const Parallel& par = p.par;
  const ClusterConfig& c = p.in.cluster;
  j["layout"] = {{"source", par.cfg.source},
                 {"label", layout_label(par.cfg)},
                 {"gpus", par.gpus},
                 {"tp", par.tp},
                 {"cp", par.cp},
                 {"pp", par.pp},
                 {"pp_schedule", to_string(par.cfg.schedule)},
                 {"virtual_stages", par.v},
                 {"dp", par.dp},
                 {"zero_stage", par.cfg.zero_stage},
                 {"gradient_sync", gradient_sync_text(par.cfg)},
                 {"comm_sms", par.cfg.comm_sms},
                 {"compute_sm_share", compute_sm_share(par.cfg, c.device)},
                 {"recompute", to_string(par.cfg.recompute)},
                 {"micro_batch", par.micro_batch},
                 {"global_batch", par.global_batch},
                 {"microbatches", par.microbatches},
                 {"tokens_per_step", par.tokens_per_step()}};
  if (p.in.model.n_experts > 0) {  // expert fields only exist for MoE models
    j["layout"]["ep"] = par.ep;
    j["layout"]["expert_dp"] = par.edp;
    j["layout"]["ep_domains_per_token"] = ep_domains_per_token(p.in.model, group_spans(par, c.device.gpus_per_domain).ep);
    j["model"]["expert_groups"] = p.in.model.expert_groups;
    j["model"]["max_groups_per_token"] = p.in.model.max_groups_per_token;
  }
}

// "memory": bytes per GPU by item, activations by recompute policy and by op.
void put_memory(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  const Parallel& par = p.par;
  json mem;
  for (const MemoryItem& it : p.mem.items()) mem[it.key] = std::llround(it.bytes);
  mem["total"] = std::llround(p.mem.total());
  mem["capacity"] = std::llround(p.mem.capacity);
  mem["offloaded"] = std::llround(p.mem.offloaded);
  mem["offload_capacity"] = std::llround(p.mem.offload_capacity);
  mem["stage"] = p.mem.stage;
  mem["in_flight_microbatches"] = p.mem.in_flight;
  mem["activations_by_recompute"] = {{"none", std::llround(p.mem.activations_by_recompute[0])},
                                     {"selective", std::llround(p.mem.activations_by_recompute[1])},
                                     {"full", std::llround(p.mem.activations_by_recompute[2])}};
  json ops = json::object();
  for (const MemoryItem& it : p.mem.activation_ops) ops[it.key] = std::llround(it.bytes);
  mem["activations_by_op"] = ops;
  mem["allocator"] = to_string(par.cfg.allocator);
  mem["allocator_overhead"] = allocator_overhead(par.cfg);
  j["memory"] = mem;
}

// "step_time" by term, and where each term's figures come from.
void put_step_time(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  const StepTime& t = p.time;
  j["step_time"] = {{"compute", t.compute_s},          {"recompute", t.recompute_s},
                    {"tp_comm", t.tp_comm_s},           {"tp_exposed", t.tp_exposed_s},
                    {"ep_comm", t.ep_comm_s},           {"ep_exposed", t.ep_exposed_s},
                    {"cp_comm", t.cp_comm_s},           {"cp_exposed", t.cp_exposed_s},
                    {"dp_comm", t.dp_comm_s},           {"dp_exposed", t.dp_exposed_s},
                    {"pp_bubble", t.bubble_s},          {"pp_p2p_exposed", t.pp_p2p_exposed_s},
                    {"optimizer", t.optimizer_s},       {"stream", t.stream_s},
                    {"stream_exposed", t.stream_exposed_s}, {"total", t.step_s}};
  // Context parallelism: what a rank receives per step for its K/V exchange (cpu cluster: the trainer's rank 0,
  // exactly).
  if (p.par.cp > 1) j["cp_bytes_per_step"] = std::llround(t.cp_bytes);
  json sources = json::object();
  for (const TermSource& ts : step_time_sources(p.in.cluster, p.par.cfg)) sources[ts.term] = ts.source;
  j["step_time_sources"] = sources;
}

// "failures": reliability, checkpoint cadence, spares, and the simulated run.
void put_failures(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  const Reliability& r = p.rel;
  json spares = json::array();
  for (const SpareOption& o : r.spares)
    spares.push_back({{"spare_racks", o.spare_racks},
                      {"racks_used", o.racks_used},
                      {"gpus", o.gpus},
                      {"dp", o.dp},
                      {"availability", o.availability},
                      {"checkpoint_goodput", o.checkpoint_goodput},
                      {"goodput", o.goodput},
                      {"compute_days", o.compute_days},
                      {"effective_days", o.effective_days},
                      {"effective_days_wait", o.days_wait},
                      {"effective_days_shrink", o.days_shrink},
                      {"configured", o.configured}});
  j["failures"] = {{"job_mtbf_s", r.mtbf_s},
                   {"checkpoint_bytes", r.checkpoint_bytes},
                   {"checkpoint_write_s", r.checkpoint_write_s},
                   {"checkpoint_persist_s", r.checkpoint_full_write_s},
                   {"restart_s", r.restart_s},
                   {"young_interval_s", r.young_interval_s},
                   {"daly_interval_s", r.daly_interval_s},
                   {"checkpoint_goodput", r.checkpoint_goodput},
                   {"availability", r.rates.availability},
                   {"rack_usable", r.rates.unit_up},
                   {"node_taking_share", r.node_share},
                   {"interruptions_per_day", 24 * r.rates.interruptions_per_h},
                   {"node_losses_per_day", 24 * r.rates.node_losses_per_h},
                   {"unit_losses_per_day", 24 * r.rates.unit_losses_per_h},
                   {"absorbed_in_unit", r.rates.absorbed},
                   {"units_in_repair_mean", r.rates.units_out_mean},
                   {"spare_free_probability", r.rates.p_spare},
                   {"on_shortage", to_string(r.rates.policy)},
                   {"shortage_cost_h", r.rates.shortage_cost_h},
                   {"spares", spares},
                   {"simulated", {{"seed", p.in.sim_seed},
                                  {"finished", r.sim.finished},
                                  {"days", r.sim_days},
                                  {"interruptions", r.sim.interruptions.size()},
                                  {"units_lost", r.sim.units_lost},
                                  {"spares_used", r.sim.spares_used},
                                  {"planned_restarts", r.sim.planned_restarts},
                                  {"waiting_s", r.sim.waiting_s},
                                  {"shrunk_s", r.sim.shrunk_s},
                                  {"restarting_s", r.sim.restarting_s},
                                  {"lost_compute_s", r.sim.lost_s},
                                  {"checkpoint_s", r.sim.checkpoint_s}}}};
}

// "param_data": the scaling law's optimum and the over-training table.
void put_param_data(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  const ChinchillaReport& ch = p.chin;
  json ot = json::array();
  for (const Overtrain& o : ch.table)
    ot.push_back({{"k", o.k}, {"params", o.at.N}, {"tokens", o.at.D}, {"loss", o.at.loss},
                  {"loss_penalty", o.loss_penalty}, {"inference_saving", o.inference_saving}});
  j["param_data"] = {{"scaling_law", {{"name", p.in.law.name}, {"E", p.in.law.E}, {"A", p.in.law.A},
                                      {"B", p.in.law.B}, {"alpha", p.in.law.alpha}, {"beta", p.in.law.beta}}},
                     {"compute_flops", ch.compute},
                     {"optimal_params", ch.optimal.N},
                     {"optimal_tokens", ch.optimal.D},
                     {"optimal_tokens_per_param", ch.optimal.tokens_per_param()},
                     {"optimal_loss", ch.optimal.loss},
                     {"plan_loss", ch.loss_at_plan},
                     {"overtrain_factor", ch.overtrain_k},
                     {"overtrain", ot}};
}

// "largest_model_per_domain", when searched.
void put_largest_model(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  if (p.largest.found || !p.largest.binding.empty()) {
    const LargestModel& lm = p.largest;
    j["largest_model_per_domain"] = {{"axis", to_string(lm.axis)},
                                     {"gpus", lm.gpus},
                                     {"found", lm.found},
                                     {"total_params", lm.total_params},
                                     {"active_params", lm.active_params},
                                     {"n_layers", lm.model.n_layers},
                                     {"n_experts", lm.model.n_experts},
                                     {"layout", lm.best.label},
                                     {"mfu", lm.best.time.mfu},
                                     {"memory_per_gpu_bytes", lm.best.mem.total()},
                                     {"next_params", lm.next_params},
                                     {"binding", lm.binding}};
    const LargestFit& f = lm.fsdp;
    j["largest_model_per_domain"]["plain_fsdp"] = {{"found", f.found},
                                                   {"total_params", f.total_params},
                                                   {"active_params", f.active_params},
                                                   {"n_layers", f.model.n_layers},
                                                   {"n_experts", f.model.n_experts},
                                                   {"layout", f.best.label},
                                                   {"mfu", f.best.time.mfu},
                                                   {"memory_per_gpu_bytes", f.best.mem.total()},
                                                   {"next_params", f.next_params},
                                                   {"binding", f.binding}};
    const LargestFit& w = lm.streaming;
    j["largest_model_per_domain"]["weight_streaming"] = {{"found", w.found},
                                                         {"total_params", w.total_params},
                                                         {"active_params", w.active_params},
                                                         {"n_layers", w.model.n_layers},
                                                         {"n_experts", w.model.n_experts},
                                                         {"layout", w.best.label},
                                                         {"mfu", w.best.time.mfu},
                                                         {"memory_per_gpu_bytes", w.best.mem.total()},
                                                         {"offloaded_per_gpu_bytes", w.best.mem.offloaded},
                                                         {"next_params", w.next_params},
                                                         {"binding", w.binding}};
    const SearchAssumptions& a = lm.assumptions;
    json rc = json::array();
    for (Recompute x : a.recompute) rc.push_back(to_string(x));
    j["largest_model_per_domain"]["assumptions"] = {
        {"seq_len", a.seq_len},
        {"micro_batch", a.micro_batch},
        {"global_batch", fmt::format("dp x micro_batch x {} x pp", a.microbatches_per_stage)},
        {"recompute_tried", rc},
        {"params", a.params == Precision::kBf16 ? "bf16 + fp32 master" : "fp32"},
        {"grads", a.grads == Precision::kBf16 ? "bf16" : "fp32"},
        {"optimizer", a.optimizer == OptimizerKind::kAdamW ? "adamw" : "muon"},
        {"optimizer_state", a.moments == Precision::kBf16 ? "bf16" : "fp32"},
        {"state_bytes_per_param", a.state_bytes_per_param},
        {"capacity_bytes", a.capacity_bytes},
        {"allocator_overhead", a.allocator_overhead},
        {"layouts_best", a.layouts_best},
        {"layouts_plain_fsdp", a.layouts_fsdp}};
  }
}

// "phases", "totals" and the layouts swept.
void put_phases(const Plan& p, nlohmann::json& j) {
  using nlohmann::json;
  json phases = json::array();
  for (const PhasePlan& ph : p.phases) {
    const Parallel& q = ph.par;
    json e = {{"name", ph.name},
              {"tokens", ph.tokens},
              {"layout", layout_label(q.cfg)},
              {"seq_len", q.seq_len},
              {"micro_batch", q.micro_batch},
              {"global_batch", q.global_batch},
              {"tokens_per_step", q.tokens_per_step()},
              {"gpus", q.gpus},
              {"tp", q.tp},
              {"pp", q.pp},
              {"dp", q.dp},
              {"steps", ph.steps},
              {"step_time_s", ph.time.step_s},
              {"mfu", ph.mfu},
              {"mfu_full_square", ph.mfu * full_square_ratio(ph.stats)},
              {"memory_per_gpu_bytes", std::llround(ph.mem.total())},
              {"fits", ph.mem.fits()},
              {"days", ph.days},
              {"gpu_hours", ph.gpu_hours}};
    if (p.in.model.n_experts > 0) e["ep"] = q.ep;
    if (ph.ramp_from > 0) {
      e["ramp_from"] = ph.ramp_from;
      json levels = json::array();
      for (const RampLevel& r : ph.ramp)
        levels.push_back({{"global_batch", r.global_batch}, {"tokens", r.tokens}, {"steps", r.steps},
                          {"step_time_s", r.step_s}, {"mfu", r.mfu}});
      e["ramp"] = levels;
    }
    phases.push_back(e);
  }
  j["phases"] = phases;
  const PhaseTotals& tot = p.totals;
  j["totals"] = {{"tokens", tot.tokens},
                 {"steps", tot.steps},
                 {"days", tot.days},
                 {"gpu_hours", tot.gpu_hours},
                 {"mfu_token_weighted", tot.mfu_by_tokens},
                 {"mfu_time_weighted", tot.mfu_by_time},
                 {"memory_per_gpu_bytes", std::llround(tot.memory_bytes)},
                 {"fullest_phase", p.phases[tot.fullest].name},
                 {"main_phase", p.phases[tot.main].name},
                 {"fits", tot.fits}};
  json lays = json::array();
  for (const LayoutOption& o : p.layouts)
    lays.push_back({{"layout", o.label}, {"mfu", o.time.mfu}, {"step_time_s", o.time.step_s},
                    {"memory_per_gpu_bytes", o.mem.total()}});
  j["layouts"] = lays;
}

}  // namespace

nlohmann::json to_json(const Plan& p) {
  nlohmann::json j;
  for (auto put : {put_summary, put_model, put_cluster, put_layout, put_memory, put_step_time, put_failures,
                   put_param_data, put_largest_model, put_phases})
    put(p, j);
  return j;
}

namespace {

// One line of the table: a 12-column head, then the body.
void put_line(std::string& o, const std::string& head, const std::string& body) {
  o += fmt::format("{:<12}{}\n", head, body);
}

// The title, the model and the layout.
void text_model_and_layout(const Plan& p, std::string& o) {
  [[maybe_unused]] const ModelStats& s = p.stats;
  [[maybe_unused]] const ModelConfig& m = p.in.model;
  [[maybe_unused]] const ClusterConfig& c = p.in.cluster;
  [[maybe_unused]] const Parallel& par = p.par;
  auto line = [&o](const std::string& head, const std::string& body) { put_line(o, head, body); };
  o += fmt::format("moetrain plan: {} on {} ({} x {}), {} tokens\n\n", p.in.model_source,
                   c.name.empty() ? c.source : c.name, par.gpus, c.device.type, fmtx::count(p.in.tokens));
  std::string arch = fmt::format("{} params, {} active; {} layers, d_model {}", fmtx::count(double(s.total)),
                                 fmtx::count(double(s.active_params)), m.n_layers, m.d_model);
  if (m.n_experts > 0) arch += fmt::format(", {} experts top-{}", m.n_experts, m.top_k);
  line("Model", arch);
  if (m.max_groups_per_token > 0 && par.ep > 1)
    line("", fmt::format("group-limited routing: at most {} of {} expert groups per token, {:g} NVLink domains of the "
                         "EP group's {} (all-to-all crosses the scale-out network once per domain)",
                         m.max_groups_per_token, m.expert_groups,
                         ep_domains_per_token(m, group_spans(par, c.device.gpus_per_domain).ep),
                         (par.ep + c.device.gpus_per_domain - 1) / c.device.gpus_per_domain));
  if (m.mla())
    line("", fmt::format("MLA: {} heads, q latent {}, kv latent {} + RoPE key {} cached, q-k head {} + {}, v head {}",
                         m.n_heads, m.q_lora_rank, m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim,
                         m.qk_rope_head_dim, m.v_head_dim));
  if (m.mtp_depth > 0)
    line("", fmt::format("multi-token prediction: {} module(s), {} params (in the total), loss weight {:g}",
                         m.mtp_depth, fmtx::count(double(s.mtp_params)), m.mtp_loss_weight));
  line("", fmt::format("{} training FLOP/token at seq {}", fmtx::flops(s.train_flops_per_token), par.seq_len));
  line("Layout", fmt::format("{}: tp {}{} x pp {} x dp {}{}{}", layout_label(par.cfg), par.tp,
                             par.cp > 1 ? fmt::format(" x cp {}", par.cp) : "", par.pp, par.dp,
                             m.n_experts > 0 ? fmt::format(" (ep {}, expert dp {})", par.ep, par.edp) : "",
                             par.pp > 1 ? fmt::format(", {} schedule{}", to_string(par.cfg.schedule),
                                                      par.v > 1 ? fmt::format(" with {} chunks per stage", par.v) : "")
                                        : ""));
  line("", fmt::format("micro-batch {} x {} tokens, {} sequences/step ({} tokens), {} micro-batches", par.micro_batch,
                       par.seq_len, par.global_batch, fmtx::count(double(par.tokens_per_step())), par.microbatches));
  line("", gradient_sync_text(par.cfg));
  if (par.cfg.comm_sms > 0) line("", comm_sms_text(par.cfg, c.device));
  o += "\n";
}

// Memory per GPU by kind, the recompute options, the largest activation ops.
void text_memory(const Plan& p, std::string& o) {
  [[maybe_unused]] const ModelStats& s = p.stats;
  [[maybe_unused]] const ModelConfig& m = p.in.model;
  [[maybe_unused]] const ClusterConfig& c = p.in.cluster;
  [[maybe_unused]] const Parallel& par = p.par;
  auto line = [&o](const std::string& head, const std::string& body) { put_line(o, head, body); };
  bool first = true;
  for (const MemoryItem& it : p.mem.items()) {
    line(first ? "Memory/GPU" : "", fmt::format("{:<26}{:>10}", it.label, gib(it.bytes)));
    first = false;
  }
  line("", fmt::format("{:<26}{:>10}  of {} ({:.0f}%): {}{}", "total", gib(p.mem.total()), gib(p.mem.capacity),
                       100.0 * p.mem.total() / p.mem.capacity, p.mem.fits() ? "fits" : "DOES NOT FIT",
                       par.pp > 1 ? fmt::format(", stage {}", p.mem.stage) : ""));
  line("", fmt::format("activations without / selective / full recompute: {} / {} / {}",
                       gib(p.mem.activations_by_recompute[0]), gib(p.mem.activations_by_recompute[1]),
                       gib(p.mem.activations_by_recompute[2])));
  {  // the three largest activation ops, and the allocator behind the overhead line
    std::vector<MemoryItem> ops = p.mem.activation_ops;
    std::sort(ops.begin(), ops.end(), [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
    std::string top;
    for (size_t i = 0; i < std::min<size_t>(3, ops.size()); ++i)
      top += fmt::format("{}{} {}", i ? ", " : "", ops[i].key, gib(ops[i].bytes));
    if (!top.empty()) line("", "largest activation ops: " + top);
    line("", fmt::format("allocator overhead: {:g} of activations and buffers (memory.allocator = \"{}\")",
                         allocator_overhead(par.cfg), to_string(par.cfg.allocator)));
  }
  o += "\n";
}

// The step time by part, MFU, what the efficiencies come from, the run's length.
void text_step_and_run(const Plan& p, std::string& o) {
  [[maybe_unused]] const ModelStats& s = p.stats;
  [[maybe_unused]] const ModelConfig& m = p.in.model;
  [[maybe_unused]] const ClusterConfig& c = p.in.cluster;
  [[maybe_unused]] const Parallel& par = p.par;
  auto line = [&o](const std::string& head, const std::string& body) { put_line(o, head, body); };
  const StepTime& t = p.time;
  line("Step", fmt::format("{:.3f} s: compute {:.3f}, recompute {:.3f}, bubble {:.3f}, exposed comm TP {:.3f} "
                           "EP {:.3f} DP {:.3f} PP {:.3f}, optimizer {:.3f}",
                           t.step_s, t.compute_s, t.recompute_s, t.bubble_s, t.tp_exposed_s, t.ep_exposed_s,
                           t.dp_exposed_s, t.pp_p2p_exposed_s, t.optimizer_s));
  if (par.cp > 1)
    line("", fmt::format("context parallel: K/V exchange {:.3f} s per step, {:.3f} s exposed, {} per rank", t.cp_comm_s,
                         t.cp_exposed_s, fmtx::bytes(t.cp_bytes)));
  if (par.cfg.offload == Offload::kParams)
    line("", fmt::format("weight streaming from {}: {:.3f} s of transfers per step, {:.3f} s exposed (prefetch {} "
                         "layer{})", par.cfg.offload_tier == OffloadTier::kNvme ? "NVMe" : "host memory", t.stream_s,
                         t.stream_exposed_s, par.cfg.prefetch_layers, par.cfg.prefetch_layers == 1 ? "" : "s"));
  if (p.mem.offloaded > 0)
    line("", fmt::format("offloaded state: {} per GPU of the {} its node's {} gives each GPU{}", gib(p.mem.offloaded),
                         gib(p.mem.offload_capacity),
                         par.cfg.offload == Offload::kParams && par.cfg.offload_tier == OffloadTier::kNvme
                             ? "NVMe" : "host memory",
                         p.mem.offloaded > p.mem.offload_capacity ? ": DOES NOT FIT" : ""));
  line("", fmt::format("MFU {} (HFU {:.1f}%), {} tokens/s", fmtx::mfu(t.mfu, full_square_ratio(p.stats)), 100 * t.hfu,
                       fmtx::count(t.tokens_per_s)));
  line("", fmt::format("sources: GEMM efficiency {:.3f}{}, attention {:.2f}, HBM {:.2f}, links {:.2f}, overlap {:.2f} "
                       "(--json step_time_sources, docs/planner.md)",
                       c.eff.gemm, c.eff.gemm == EfficiencyModel{}.gemm ? " fitted" : "", c.eff.attention, c.eff.hbm,
                       c.eff.link, c.eff.overlap));
  line("Run", fmt::format("{} steps, {:.1f} days, {} GPU-hours{}", p.steps, p.days, fmtx::count(p.gpu_hours),
                          c.gpu_hour_usd > 0 ? fmt::format(", ${}", fmtx::count(p.cost_usd)) : ""));
  o += "\n";
}

// The phases, then failures, checkpoints, goodput and the spare-rack options.
void text_failures(const Plan& p, std::string& o) {
  [[maybe_unused]] const ModelStats& s = p.stats;
  [[maybe_unused]] const ModelConfig& m = p.in.model;
  [[maybe_unused]] const ClusterConfig& c = p.in.cluster;
  [[maybe_unused]] const Parallel& par = p.par;
  auto line = [&o](const std::string& head, const std::string& body) { put_line(o, head, body); };
  if (!p.in.layout.phases.empty()) {
    phase_table(p, o);
    o += "\n";
  }
  const Reliability& r = p.rel;
  line("Failures", fmt::format("job MTBF {}, {:.0f} interruptions expected", duration(r.mtbf_s),
                               r.expected_interruptions));
  line("", fmt::format("checkpoint {:.2f} TB: blocks {} (persisted in {}), restart {}",
                       r.checkpoint_bytes / 1e12, duration(r.checkpoint_write_s), duration(r.checkpoint_full_write_s),
                       duration(r.restart_s)));
  line("", fmt::format("interval {} ({}; Young {}, Daly {}): checkpoint goodput {:.1f}%",
                       duration(r.checkpoint_interval_s),
                       par.cfg.checkpoint_interval_minutes > 0 ? "layout" : "Daly", duration(r.young_interval_s),
                       duration(r.daly_interval_s), 100 * r.checkpoint_goodput));
  line("", fmt::format("{:.0f}% of interruptions take a node out ({:.2f}/day, {:.0f}% absorbed inside the rack); "
                       "{:.2f} racks in repair on average, a spare free {:.1f}% of the time, else {}",
                       100 * r.node_share, 24 * r.rates.node_losses_per_h, 100 * r.rates.absorbed,
                       r.rates.units_out_mean, 100 * r.rates.p_spare, to_string(r.rates.policy)));
  line("", fmt::format("availability {:.2f}%, goodput {:.1f}%, {:.1f} days end to end", 100 * r.rates.availability,
                       100 * r.goodput, r.wall_days));
  line("", fmt::format("one simulated run (seed {}): {:.1f} days end to end{}, {} interruptions, {} racks lost, {} "
                       "replaced by spares, {} waiting, {} shrunk",
                       p.in.sim_seed, r.sim_days, r.sim.finished ? "" : " (stopped: no end in sight)",
                       r.sim.interruptions.size(), r.sim.units_lost, r.sim.spares_used, duration(r.sim.waiting_s),
                       duration(r.sim.shrunk_s)));
  line("Spares", fmt::format("{:>6} {:>6} {:>7} {:>6} {:>12} {:>8} {:>9} {:>9} {:>9}", "spare", "used", "GPUs", "dp",
                             "availability", "goodput", "days", "if wait", "if shrink"));
  for (const SpareOption& sp : r.spares)
    line("", fmt::format("{:>6} {:>6} {:>7} {:>6} {:>11.2f}% {:>7.1f}% {:>9.1f} {:>9.1f} {:>9.1f}{}", sp.spare_racks,
                         sp.racks_used, sp.gpus, sp.dp, 100 * sp.availability, 100 * sp.goodput, sp.effective_days,
                         sp.days_wait, sp.days_shrink, sp.configured ? "  <-" : ""));
  o += "\n";
}

// Param:data against the compute-optimal split, and inference costs.
void text_param_data(const Plan& p, std::string& o) {
  [[maybe_unused]] const ModelStats& s = p.stats;
  [[maybe_unused]] const ModelConfig& m = p.in.model;
  [[maybe_unused]] const ClusterConfig& c = p.in.cluster;
  [[maybe_unused]] const Parallel& par = p.par;
  auto line = [&o](const std::string& head, const std::string& body) { put_line(o, head, body); };
  const ChinchillaReport& ch = p.chin;
  line("Param:data", fmt::format("C = 6 N D = {} FLOP ({}); optimal N {} D {} ({:.1f} tokens/param), loss {:.3f}",
                                 fmtx::flops(ch.compute), p.in.law.name, fmtx::count(ch.optimal.N), fmtx::count(ch.optimal.D),
                                 ch.optimal.tokens_per_param(), ch.optimal.loss));
  line("", fmt::format("this run: N {} D {} = {:.1f}x the optimal tokens/param, loss {:.3f} (+{:.3f})",
                       fmtx::count(ch.n_active), fmtx::count(ch.tokens), ch.overtrain_k, ch.loss_at_plan,
                       ch.loss_at_plan - ch.optimal.loss));
  for (const Overtrain& ov : ch.table)
    line("", fmt::format("k {:>4.0f}: N {:>7} D {:>7} loss +{:.4f}, inference FLOPs -{:.0f}%", ov.k, fmtx::count(ov.at.N),
                         fmtx::count(ov.at.D), ov.loss_penalty, 100 * ov.inference_saving));
  line("Inference", fmt::format("KV cache {}/token, {} per {}-token sequence; {} FLOP/token prefill, {} decode",
                                fmtx::bytes(s.kv_bytes_per_token), fmtx::bytes(s.kv_bytes_per_sequence), s.seq_len,
                                fmtx::flops(s.prefill_flops_per_token), fmtx::flops(s.decode_flops_per_token)));
  if (s.state_bytes_per_sequence > 0)
    line("", fmt::format("gated-delta layers: recurrent state {} per sequence (fp32, any length)",
                         fmtx::bytes(s.state_bytes_per_sequence)));
}

// The largest model per NVLink domain, and with plain FSDP or weight streaming.
void text_largest(const Plan& p, std::string& o) {
  [[maybe_unused]] const ModelStats& s = p.stats;
  [[maybe_unused]] const ModelConfig& m = p.in.model;
  [[maybe_unused]] const ClusterConfig& c = p.in.cluster;
  [[maybe_unused]] const Parallel& par = p.par;
  auto line = [&o](const std::string& head, const std::string& body) { put_line(o, head, body); };
  if (p.largest.found || !p.largest.binding.empty()) {
    const LargestModel& lm = p.largest;
    o += "\n";
    if (lm.found)
      line("Largest", fmt::format("per NVLink domain ({} GPUs), varying {}: {} params ({} layers{}), {}, MFU {}",
                                  lm.gpus, to_string(lm.axis), fmtx::count(double(lm.total_params)), lm.model.n_layers,
                                  lm.model.n_experts > 0 ? fmt::format(", {} experts", lm.model.n_experts) : "",
                                  lm.best.label, mfu_of(lm.best.time)));
    else
      line("Largest", fmt::format("per NVLink domain ({} GPUs): even the smallest member does not fit", lm.gpus));
    if (!lm.binding.empty())
      line("", fmt::format("next size {} binds on {}", fmtx::count(double(lm.next_params)), lm.binding));
    const LargestFit& f = lm.fsdp;
    if (f.found)
      line("", fmt::format("plain FSDP (ZeRO-3, no TP/PP/EP): {} params ({} layers{}), {}, MFU {}",
                           fmtx::count(double(f.total_params)), f.model.n_layers,
                           f.model.n_experts > 0 ? fmt::format(", {} experts", f.model.n_experts) : "", f.best.label,
                           mfu_of(f.best.time)));
    else
      line("", "plain FSDP (ZeRO-3, no TP/PP/EP): even the smallest member does not fit");
    const LargestFit& w = lm.streaming;
    if (w.found)
      line("",
           fmt::format("weight streaming from host memory: {} params ({} layers{}), {}, MFU {}, {} per GPU "
                       "in host memory{}",
                       fmtx::count(double(w.total_params)), w.model.n_layers,
                       w.model.n_experts > 0 ? fmt::format(", {} experts", w.model.n_experts) : "", w.best.label,
                       mfu_of(w.best.time), gib(w.best.mem.offloaded), w.hit_cap ? " (the search's upper end)" : ""));
    else
      line("", "weight streaming from host memory: even the smallest member does not fit");
    const SearchAssumptions& a = lm.assumptions;
    std::string rc;
    for (Recompute x : a.recompute) rc += (rc.empty() ? "" : " or ") + to_string(x);
    line("", fmt::format("assumes seq {}, micro-batch {}, {} micro-batches per stage, recompute {} (the best that "
                         "fits), {:g} bytes/param of weights, grads and {} state before sharding, {} per GPU with "
                         "allocator overhead {:g} (no other headroom)",
                         a.seq_len, a.micro_batch, a.microbatches_per_stage, rc, a.state_bytes_per_param,
                         a.optimizer == OptimizerKind::kAdamW ? "AdamW" : "Muon", gib(a.capacity_bytes),
                         a.allocator_overhead));
  }
}

// The best layouts of the sweep, and the warnings.
void text_layouts(const Plan& p, std::string& o) {
  [[maybe_unused]] const ModelStats& s = p.stats;
  [[maybe_unused]] const ModelConfig& m = p.in.model;
  [[maybe_unused]] const ClusterConfig& c = p.in.cluster;
  [[maybe_unused]] const Parallel& par = p.par;
  auto line = [&o](const std::string& head, const std::string& body) { put_line(o, head, body); };
  if (!p.layouts.empty()) {
    o += "\n";
    line("Layouts", fmt::format("{} fit on {} GPUs; best by MFU (causal half{}):", p.layouts.size(), par.gpus,
                                full_square_ratio(p.stats) - 1 > kMfuConventionGap
                                    ? fmt::format("; x{:.3f} for the full square", full_square_ratio(p.stats))
                                    : ""));
    for (size_t i = 0; i < std::min<size_t>(p.layouts.size(), 6); ++i)
      line("", fmt::format("{:<34} MFU {:5.1f}%  step {:8.3f} s  {:>10}", p.layouts[i].label,
                           100 * p.layouts[i].time.mfu, p.layouts[i].time.step_s, gib(p.layouts[i].mem.total())));
  }
  for (const std::string& w : p.warnings) o += "warning: " + w + "\n";
}
}  // namespace

std::string to_text(const Plan& p) {
  std::string o;
  text_model_and_layout(p, o);
  text_memory(p, o);
  text_step_and_run(p, o);
  text_failures(p, o);
  text_param_data(p, o);
  text_largest(p, o);
  text_layouts(p, o);
  return o;
}

}  // namespace mt::plan
