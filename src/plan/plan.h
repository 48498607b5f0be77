// plan.h — `moetrain plan` end to end: from a model config (the trainer's
// file), a cluster, a layout and a token budget to memory per GPU, step time
// and MFU, days and GPU-hours, failures and goodput (with the spare-rack
// trade), the param:data trade, inference cost, the largest model per NVLink
// domain and MFU across layouts. Pure computation; output as a terminal
// table, JSON and a self-contained HTML report.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "model/config.h"
#include "plan/cluster.h"
#include "plan/failure_sim.h"
#include "plan/layout.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "plan/perf.h"
#include "plan/phases.h"
#include "plan/reliability.h"
#include "plan/scaling_law.h"
#include "plan/search.h"

namespace mt::plan {

enum class SearchMode { kAuto, kLayers, kExperts, kNone };

struct PlanInputs {
  ModelConfig model;
  std::string model_source;
  int64_t model_seq_len = 0;    // the model file's train.seq_len
  ClusterConfig cluster;
  LayoutConfig layout;
  double tokens = 0;            // training token budget
  ScalingLaw law = besiroglu2024();
  SearchMode search = SearchMode::kAuto;
  bool sweep_layouts = true;
  uint64_t sim_seed = 1;        // the failure timeline's simulated run (failure_sim.h)
};

// One way to split the racks owned between the job and the spare pool. Only
// data-parallel degrees that divide the global batch (in micro-batches) and
// keep dp x tp a multiple of ep are offered.
struct SpareOption {
  int64_t spare_racks = 0, racks_used = 0, gpus = 0, dp = 0;
  double availability = 1;      // under the cluster's shortage policy
  double mtbf_s = 0, checkpoint_interval_s = 0, checkpoint_goodput = 1;
  double goodput = 1;           // availability x checkpoint goodput
  double compute_days = 0;      // at full speed (throughput proportional to GPUs)
  double effective_days = 0;    // under the cluster's shortage policy
  double days_wait = 0, days_shrink = 0;  // under each policy
  bool configured = false;      // the layout's own choice
};

struct Reliability {
  double checkpoint_bytes = 0;
  double checkpoint_write_s = 0;     // blocking time per checkpoint
  double checkpoint_full_write_s = 0;// time to persist one checkpoint
  double restart_s = 0;              // restart overhead + checkpoint load
  double mtbf_s = 0;                 // job MTBF
  double young_interval_s = 0, daly_interval_s = 0;
  double checkpoint_interval_s = 0;  // used: the layout's, or Daly's
  double checkpoint_goodput = 1;     // Daly's model at that interval
  double node_share = 0;             // share of interruptions that take a node out (failure causes)
  FailureRates rates;                // repairs, spares and the shortage policy
  double goodput = 1;                // checkpoint goodput x availability
  double expected_interruptions = 0; // over the expected wall time
  double wall_days = 0;              // effective days
  std::vector<SpareOption> spares;
  std::vector<std::pair<double, double>> goodput_curve;  // (interval s, goodput)
  // One simulated run of the job under this failure model (seed PlanInputs::sim_seed); its days end to end
  // estimate wall_days with the noise of one run.
  FailureSimResult sim;
  double sim_days = 0;
};

struct ChinchillaReport {
  double compute = 0;             // 6 N_active D
  double n_active = 0, tokens = 0;
  Allocation optimal;
  double loss_at_plan = 0;        // L(N_active, D)
  double overtrain_k = 0;         // where the plan sits
  std::vector<Overtrain> table;   // k = 1, 2, 4, 8, 13, 16, 32
};

struct Plan {
  PlanInputs in;
  // Every phase (one without [[phase]] tables) and the run's totals.
  std::vector<PhasePlan> phases;
  PhaseTotals totals;
  // The main phase (the most tokens; the whole run without phases) in detail.
  ModelStats stats;
  Parallel par;
  MemoryBreakdown mem;
  StepTime time;
  // The whole run: sums over the phases.
  int64_t steps = 0;
  double days = 0, gpu_hours = 0, cost_usd = 0;
  Reliability rel;
  ChinchillaReport chin;
  LargestModel largest;
  std::vector<LayoutOption> layouts;   // fitting layouts, best MFU first
  std::vector<std::string> warnings;
};

Result<Plan> make_plan(const PlanInputs& in);

nlohmann::json to_json(const Plan& p);
std::string to_text(const Plan& p);
std::string to_html(const Plan& p);   // plan_report.cpp

}  // namespace mt::plan
