// metrics_line.cpp — see metrics_line.h.
#include "train/metrics_line.h"

#include <cmath>
#include <string>

namespace mt {

nlohmann::json metrics_line(const StepResult& r, double tokens_per_s, double mfu, double unix_time,
                            const std::vector<std::string>& bucket_names) {
  nlohmann::json j;
  j["step"] = r.step;
  j["time"] = unix_time;
  j["loss"] = r.loss;
  j["aux_loss"] = r.aux_loss;
  j["z_loss"] = r.z_loss;
  if (r.mtp_weight > 0 || r.mtp_loss > 0) {  // multi-token prediction runs only
    j["mtp_loss"] = r.mtp_loss;
    j["mtp_weight"] = r.mtp_weight;
  }
  j["lr"] = r.lr;
  j["grad_norm"] = r.grad_norm;
  j["tokens_per_s"] = tokens_per_s;
  j["mfu"] = mfu;
  j["dropped_frac"] = r.assignments ? double(r.dropped) / double(r.assignments) : 0.0;
  if (r.keys_global > 0 && r.tokens > 0)  // document masking: the keys a query saw, on average, by layer kind
    j["keys_per_token"] = {{"global", double(r.keys_global) / double(r.tokens)},
                           {"local", double(r.keys_local) / double(r.tokens)}};
  j["step_time_s"] = r.seconds;
  j["tokens"] = r.tokens;
  if (!r.phase.empty()) j["phase"] = r.phase;
  if (r.rl.on) {
    const RlStepFigures& f = r.rl;
    j["rl"] = {{"iteration", f.iteration},
               {"pass", f.pass},
               {"reward", f.reward},
               {"well_formed", f.well_formed},
               {"response_len", f.length},
               {"truncated", f.truncated},
               {"solved_groups", f.solved_groups},
               {"zero_signal", f.zero_signal},
               {"rollout_s", f.rollout_s},
               {"rollout_age", f.rollout_age},
               {"rollout_ahead_s", f.rollout_ahead_s},
               {"entropy", f.entropy},
               {"kl", f.kl},
               {"clip_frac", f.clip_frac},
               {"policy_tokens", f.policy_tokens},
               {"tool_use", f.tool_use}};
    if (!std::isnan(f.pass1))
      j["rl"]["eval"] = {{"pass1", f.pass1},           {"pass_k", f.pass_k},    {"k", f.eval_k},
                         {"sample_acc", f.sample_acc}, {"tool_use", f.eval_tool_use}, {"items", f.eval_items},
                         {"seconds", f.eval_s}};
  }
  nlohmann::json load = nlohmann::json::array();
  for (const auto& layer : r.expert_load) {
    int64_t total = 0;
    for (int64_t c : layer) total += c;
    nlohmann::json row = nlohmann::json::array();
    for (int64_t c : layer) row.push_back(total ? double(c) / double(total) : 0.0);
    load.push_back(row);
  }
  j["expert_load"] = load;
  // This rank's (rank 0's) collectives during the step: bytes received per
  // kind (docs/distributed.md gives the closed forms) and the time blocked in
  // them (exposed communication); compute_s is the rest of the step.
  nlohmann::json comm = nlohmann::json::object();
  comm["world_size"] = r.world_size;
  for (size_t k = 0; k < r.comm.bytes.size(); ++k)
    comm[std::string(comm_kind_name(CommKind(k))) + "_bytes"] = r.comm.bytes[k];
  comm["wait_s"] = r.comm.wait_seconds;
  comm["compute_s"] = r.seconds - r.comm.wait_seconds;
  j["comm"] = comm;
  if (r.compute_memory_bytes > 0)  // weight streaming (docs/streaming.md)
    j["stream"] = {{"bytes_in", r.stream_bytes_in},
                   {"bytes_out", r.stream_bytes_out},
                   {"stall_s", r.stream_stall_s},
                   {"compute_memory_bytes", r.compute_memory_bytes},
                   {"store_bytes", r.store_bytes}};
  if (r.sparse_dense_bytes > 0)
    j["stream"]["sparse"] = {{"dense_bytes", r.sparse_dense_bytes}, {"wire_bytes", r.sparse_wire_bytes}};
  if (!r.bucket_tokens.empty()) {
    nlohmann::json bt = nlohmann::json::object();
    for (const auto& [name, tokens] : r.bucket_tokens) bt[name] = tokens;
    j["bucket_tokens"] = bt;
  }
  // Capacity drops by bucket (a run with a capacity): sums to the step's dropped assignments.
  if (!r.bucket_dropped.empty() && r.bucket_dropped.size() == bucket_names.size() && r.assignments > 0) {
    nlohmann::json bd = nlohmann::json::object();
    for (size_t b = 0; b < bucket_names.size(); ++b) bd[bucket_names[b]] = r.bucket_dropped[b];
    j["bucket_dropped"] = bd;
    j["dropped"] = r.dropped;
    if (r.bucket_dropped_total.size() == bucket_names.size()) {
      nlohmann::json total = nlohmann::json::object();
      for (size_t b = 0; b < bucket_names.size(); ++b) total[bucket_names[b]] = r.bucket_dropped_total[b];
      j["bucket_dropped_total"] = total;
    }
  }
  if (!r.spike.empty()) j["spike"] = {{"why", r.spike}, {"loss_z", r.loss_z}, {"norm_z", r.norm_z}, {"applied", false}};
  if (!r.skipped_bucket_tokens.empty()) {
    nlohmann::json sk = nlohmann::json::object();
    for (const auto& [name, tokens] : r.skipped_bucket_tokens) sk[name] = tokens;
    j["skipped_bucket_tokens"] = sk;
  }
  if (std::isfinite(r.eval_loss)) j["eval_loss"] = r.eval_loss;
  if (!r.bucket_eval_loss.empty()) {
    nlohmann::json be = nlohmann::json::object();
    for (const auto& [name, loss] : r.bucket_eval_loss) be[name] = loss;
    j["bucket_eval_loss"] = be;
  }
  return j;
}

}  // namespace mt
