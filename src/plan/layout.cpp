// layout.cpp — strict loading of layout files and their resolution against a
// model and a cluster (every error names the key to change).
#include "plan/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "plan/toml_schema.h"

namespace mt::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<std::string> kSchedules = {"gpipe", "1f1b", "interleaved", "zero-bubble", "dualpipe"};
const std::vector<std::string> kRecompute = {"none", "selective", "full"};

template <typename E>
E index_of(const std::vector<std::string>& names, const std::string& s) {
  return static_cast<E>(std::find(names.begin(), names.end(), s) - names.begin());
}

}  // namespace

std::string to_string(PipeSchedule s) { return kSchedules[size_t(s)]; }
std::string to_string(Recompute r) { return kRecompute[size_t(r)]; }

Result<LayoutConfig> parse_layout(const std::string& text, const std::string& source,
                                  const std::vector<std::string>& overrides) {
  LayoutConfig l;
  l.source = source;
  std::string schedule = "1f1b", recompute = "none", offload = "none", params = "bf16", grads = "fp32",
              optimizer = "adamw";
  const int64_t big = int64_t(1) << 40;
  TomlSchema s;
  s.add_string("layout", "name", &l.name);
  s.add_int("parallel", "tp", &l.tp, 1, 1 << 16);
  s.add_int("parallel", "pp", &l.pp, 1, 1 << 16);
  s.add_string("parallel", "pp_schedule", &schedule, kSchedules);
  s.add_int("parallel", "virtual_stages", &l.virtual_stages, 1, 1 << 16);
  s.add_int("parallel", "ep", &l.ep, 1, 1 << 20);
  s.add_int("parallel", "dp", &l.dp, 0, big);
  s.add_int("parallel", "zero_stage", &l.zero_stage, 0, 3);
  s.add_int("parallel", "gpus", &l.gpus, 0, big);
  s.add_int("batch", "micro_batch", &l.micro_batch, 1, big);
  s.add_int("batch", "global_batch", &l.global_batch, 1, big, Required::kYes);
  s.add_int("batch", "seq_len", &l.seq_len, 0, big);
  s.add_string("memory", "recompute", &recompute, kRecompute);
  s.add_string("memory", "offload", &offload, {"none", "optimizer"});
  s.add_bool("memory", "flash_attention", &l.flash_attention);
  s.add_float("memory", "fragmentation", &l.fragmentation, 0, 1);
  s.add_string("precision", "params", &params, {"bf16", "fp32"});
  s.add_string("precision", "grads", &grads, {"bf16", "fp32"});
  s.add_string("precision", "optimizer", &optimizer, {"adamw", "muon"});
  s.add_bool("comm", "tp_overlap", &l.tp_overlap);
  s.add_bool("comm", "dp_overlap", &l.dp_overlap);
  s.add_float("comm", "ep_overlap", &l.ep_overlap, 0, 1);
  s.add_float("moe", "expert_imbalance", &l.expert_imbalance, 1, 1000);
  s.add_float("checkpoint", "interval_minutes", &l.checkpoint_interval_minutes, 0, kInf);
  s.add_bool("checkpoint", "async", &l.checkpoint_async);
  MT_RETURN_IF_ERROR(s.parse(text, source));
  for (const std::string& o : overrides) MT_RETURN_IF_ERROR(s.apply_override(o, source));
  MT_RETURN_IF_ERROR(s.check_required(source));
  l.schedule = index_of<PipeSchedule>(kSchedules, schedule);
  l.recompute = index_of<Recompute>(kRecompute, recompute);
  l.offload = offload == "optimizer" ? Offload::kOptimizer : Offload::kNone;
  l.params = params == "fp32" ? Precision::kFp32 : Precision::kBf16;
  l.grads = grads == "bf16" ? Precision::kBf16 : Precision::kFp32;
  l.optimizer = optimizer == "muon" ? OptimizerKind::kMuon : OptimizerKind::kAdamW;
  if (l.virtual_stages > 1 && l.schedule != PipeSchedule::kInterleaved)
    return Status::errorf("{}: parallel.virtual_stages: {} needs parallel.pp_schedule = \"interleaved\"",
                          s.origin("parallel", "virtual_stages"), l.virtual_stages);
  return l;
}

Result<LayoutConfig> load_layout(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_text_file(path);
  if (!text) return text.status();
  return parse_layout(*text, path, overrides);
}

Result<Parallel> resolve(const LayoutConfig& l, const ModelConfig& m, int64_t model_seq_len,
                         const ClusterConfig& c) {
  Parallel p;
  p.cfg = l;
  const std::string& src = l.source;
  auto bad = [&](const char* key, const std::string& why) {
    return Status::errorf("{}: {}: {}", src, key, why);
  };
  p.seq_len = l.seq_len > 0 ? l.seq_len : model_seq_len;
  if (p.seq_len < 2) return bad("batch.seq_len", fmt::format("must be >= 2, got {}", p.seq_len));
  MT_RETURN_IF_ERROR(m.validate("model", p.seq_len));

  const int64_t usable = c.usable_gpus();
  p.gpus = l.gpus > 0 ? l.gpus : usable;
  if (p.gpus > c.total_gpus())
    return bad("parallel.gpus", fmt::format("{} GPUs requested but the cluster has {}", p.gpus, c.total_gpus()));
  if (l.gpus > usable)
    p.warnings.push_back(fmt::format("the job uses {} GPUs, more than the {} that spare racks and the SLA leave usable",
                                     l.gpus, usable));
  p.tp = l.tp;
  p.pp = l.pp;
  p.ep = l.ep;
  p.v = l.virtual_stages;
  const int64_t tp_pp = p.tp * p.pp;
  if (p.gpus % tp_pp != 0)
    return bad("parallel.tp x parallel.pp", fmt::format("tp x pp = {} x {} = {} does not divide the {} GPUs of the job", p.tp,
                                          p.pp, tp_pp, p.gpus));
  p.dp = p.gpus / tp_pp;
  if (l.dp > 0 && l.dp != p.dp)
    return bad("parallel.dp", fmt::format("tp x pp x dp = {} x {} x {} = {} does not match the {} GPUs of the job",
                                          p.tp, p.pp, l.dp, tp_pp * l.dp, p.gpus));
  if (c.device.kind == DeviceKind::kCpu) {
    if (p.tp != 1 || p.pp != 1 || p.ep != 1 || p.gpus != 1)
      return bad("parallel", "the CPU trainer runs one process: tp, pp, ep and the GPU count must be 1 "
                             "(set parallel.gpus = 1)");
    if (l.params != Precision::kFp32)
      return bad("precision.params", "the CPU trainer keeps fp32 parameters: set precision.params = \"fp32\"");
  }
  if (m.n_heads % p.tp != 0)
    return bad("parallel.tp", fmt::format("{} must divide model.n_heads = {}", p.tp, m.n_heads));
  for (int64_t hkv : {m.n_kv_heads, m.n_kv_heads_local > 0 ? m.n_kv_heads_local : m.n_kv_heads})
    if (hkv % p.tp != 0 && p.tp % hkv != 0)
      return bad("parallel.tp", fmt::format("{} and the {} KV heads must divide one another", p.tp, hkv));
  if (p.tp > c.device.gpus_per_domain)
    p.warnings.push_back(fmt::format("tp = {} spans more than one NVLink domain ({} GPUs): TP traffic crosses the "
                                     "scale-out network", p.tp, c.device.gpus_per_domain));
  if (p.pp * p.v > m.n_layers)
    return bad("parallel.pp", fmt::format("pp x virtual_stages = {} exceeds model.n_layers = {}", p.pp * p.v,
                                          m.n_layers));
  if (l.schedule == PipeSchedule::kDualPipe && p.pp % 2 != 0)
    return bad("parallel.pp_schedule", fmt::format("dualpipe needs an even pp, got {}", p.pp));
  p.layers_per_stage = (m.n_layers + p.pp - 1) / p.pp;
  if (p.ep > 1) {
    if (m.n_experts == 0) return bad("parallel.ep", "expert parallelism needs an MoE model (model.n_experts > 0)");
    if (m.n_experts % p.ep != 0)
      return bad("parallel.ep", fmt::format("{} must divide model.n_experts = {}", p.ep, m.n_experts));
    if ((p.dp * p.tp) % p.ep != 0)
      return bad("parallel.ep", fmt::format("{} must divide dp x tp = {} x {} = {}", p.ep, p.dp, p.tp, p.dp * p.tp));
  }
  p.edp = (p.dp * p.tp) / p.ep;
  p.micro_batch = l.micro_batch;
  p.global_batch = l.global_batch;
  if (p.global_batch % (p.dp * p.micro_batch) != 0)
    return bad("batch.global_batch",
               fmt::format("{} sequences must be a multiple of dp x micro_batch = {} x {} = {}", p.global_batch, p.dp,
                           p.micro_batch, p.dp * p.micro_batch));
  p.microbatches = p.global_batch / (p.dp * p.micro_batch);
  if (p.pp > 1 && p.microbatches < p.pp)
    p.warnings.push_back(fmt::format("{} micro-batches per step for {} pipeline stages: most of the step is bubble",
                                     p.microbatches, p.pp));
  if (m.n_experts > 0) {
    const int64_t g = m.group_size(p.seq_len);
    if ((p.micro_batch * p.seq_len) % g != 0)
      return bad("batch.micro_batch", fmt::format("micro_batch x seq_len = {} must be a multiple of the routing group "
                                                  "of {} tokens", p.micro_batch * p.seq_len, g));
  }
  return p;
}

}  // namespace mt::plan
