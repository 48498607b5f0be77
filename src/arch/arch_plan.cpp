// arch_plan.cpp — see arch_plan.h.
#include "arch/arch_plan.h"

#include <fmt/format.h>

#include "model/flops.h"
#include "model/weights.h"
#include "plan/plan.h"
#include "train/run_config.h"

namespace mt {

Result<nlohmann::json> plan_candidate(const ArchSpec& spec, const ArchCandidate& c) {
  auto fail = [&](const Status& s) { return Status::errorf("candidate {}: hero plan: {}", c.name, s.message()); };
  auto model = load_run_config(spec.hero_model, c.hero);
  if (!model) return fail(model.status());
  auto cluster = plan::load_cluster(spec.cluster);
  if (!cluster) return fail(cluster.status());
  auto layout = plan::load_layout(spec.layout);
  if (!layout) return fail(layout.status());
  const ModelConfig& m = model->model;
  const int64_t seq_len = layout->seq_len > 0 ? layout->seq_len : model->train.seq_len;
  const double per_token = flops_per_token(m, seq_len);
  plan::PlanInputs in;
  in.model = m;
  in.model_source = spec.hero_model;
  in.model_seq_len = model->train.seq_len;
  in.cluster = *cluster;
  in.layout = *layout;
  in.tokens = spec.hero_flops / per_token;
  in.search = plan::SearchMode::kNone;
  in.sweep_layouts = false;
  auto p = plan::make_plan(in);
  if (!p) return fail(p.status());
  const plan::StepTime& t = p->time;
  nlohmann::json j;
  j["active_params"] = double(active_matmul_params(m));  // N as the ladder's results count it
  j["flops_per_token"] = per_token;
  j["tokens"] = in.tokens;
  j["seq_len"] = seq_len;
  j["step_time_s"] = t.step_s;
  j["mfu"] = p->totals.mfu_by_tokens;
  j["tokens_per_s"] = in.tokens / (p->days * 86400.0);
  j["days"] = p->days;
  j["gpus"] = p->par.gpus;
  j["ep"] = p->par.ep;
  j["ep_comm_share"] = t.ep_comm_s / t.step_s;        // the all-to-all's whole time over the step
  j["ep_exposed_share"] = t.ep_exposed_s / t.step_s;  // the part not hidden behind compute
  nlohmann::json full = plan::to_json(*p);
  j["step_time"] = full["step_time"];
  j["step_time_sources"] = full["step_time_sources"];
  j["memory_fits"] = p->totals.fits;
  j["warnings"] = p->warnings;
  const plan::ModelStats inf = plan::model_stats(m, spec.context);
  j["inference"] = {{"context", spec.context},
                    {"kv_cache_bytes_per_token", inf.kv_bytes_per_token},
                    {"kv_cache_bytes_per_sequence", inf.kv_bytes_per_sequence},
                    {"state_bytes_per_sequence", inf.state_bytes_per_sequence},
                    {"decode_flops_per_token", inf.decode_flops_per_token}};
  return j;
}

}  // namespace mt
