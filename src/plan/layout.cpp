// layout.cpp — strict loading of layout files and their resolution against a
// model and a cluster (every error names the key to change).
#include "plan/layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "core/config_schema.h"
#include "core/file_io.h"
#include "plan/activations.h"

namespace mt::plan {
namespace {

const std::vector<std::string> kSchedules = {"gpipe", "1f1b", "interleaved", "zero-bubble", "dualpipe"};
const std::vector<std::string> kRecompute = {"none", "selective", "full"};
const std::vector<std::string> kAllocators = {"caching", "expandable", "arena"};


}  // namespace

std::string to_string(PipeSchedule s) { return kSchedules[size_t(s)]; }
std::string to_string(Recompute r) { return kRecompute[size_t(r)]; }
std::string to_string(Allocator a) { return kAllocators[size_t(a)]; }

double allocator_overhead(const LayoutConfig& l) {
  if (l.fragmentation >= 0) return l.fragmentation;
  switch (l.allocator) {
    case Allocator::kCaching: return 0.15;
    case Allocator::kExpandable: return 0.02;
    case Allocator::kArena: return 0.0;
  }
  return 0.0;
}

bool gradients_sharded(const LayoutSettings& l) {
  return l.zero_stage >= 3 || (l.zero_stage == 2 && l.zero2_grads == Zero2Grads::kSharded);
}

std::string gradient_sync_text(const LayoutSettings& l) {
  if (l.zero_stage >= 3) return "gradients sharded, reduce-scattered every micro-batch (ZeRO-3)";
  if (l.zero_stage == 2)
    return l.zero2_grads == Zero2Grads::kSharded
               ? "gradients sharded, reduce-scattered every micro-batch (ZeRO-2)"
               : "full gradient buffer, reduce-scattered once per step (ZeRO-2, zero2_gradients = \"full\")";
  return l.zero_stage == 1 ? "full gradient buffer, reduce-scattered once per step (ZeRO-1)"
                           : "full gradient buffer, all-reduced once per step (no ZeRO)";
}

double compute_sm_share(const LayoutSettings& l, const DeviceSpec& d) {
  if (l.comm_sms <= 0 || d.sms <= 0) return 1.0;
  return double(d.sms - l.comm_sms) / double(d.sms);
}

std::string comm_sms_text(const LayoutSettings& l, const DeviceSpec& d) {
  if (l.comm_sms <= 0) return "";
  return fmt::format(
      "{} of the {}'s {} SMs reserved for communication kernels (parallel.comm_sms): compute runs at "
      "{}/{} of the device's rates",
      l.comm_sms, d.type, d.sms, d.sms - l.comm_sms, d.sms);
}

namespace {

// kFile: the layout's own keys; kPhase: the same keys inside a [[phase]], where none is required (a key the
// phase does not set keeps the layout's value).
enum class KeyRole { kFile, kPhase };

void declare_setting_keys(ConfigSchema& s, LayoutSettings& l, KeyRole role) {
  const int64_t big = int64_t(1) << 40;
  s.add("layout.name", &l.name, "a label for reports");
  s.add("parallel.tp", &l.tp, "tensor parallel (Megatron, with sequence parallelism)").range(1, 1 << 16);
  s.add("parallel.pp", &l.pp, "pipeline stages").range(1, 1 << 16);
  s.add("parallel.cp", &l.cp,
        "context parallel (ring attention, Megatron-Core / Llama 3): each sequence in 2 x cp load-balanced chunks")
      .range(1, 1 << 16);
  s.add_enum("parallel.pp_schedule", &l.schedule, kSchedules, "pipeline schedule");
  s.add("parallel.virtual_stages", &l.virtual_stages, "interleaved schedule: model chunks per stage").range(1, 1 << 16);
  s.add("parallel.first_stage_layers", &l.first_stage_layers,
        "transformer layers on the first pipeline stage (0 = the embedding only)").range(-1, 1 << 20)
      .note("-1 = even split");
  s.add("parallel.last_stage_layers", &l.last_stage_layers,
        "transformer layers on the last pipeline stage (0 = the head only)").range(-1, 1 << 20)
      .note("-1 = even split");
  s.add("parallel.ep", &l.ep, "expert parallel (carved out of dp x cp x tp; experts not TP-split)").range(1, 1 << 20);
  s.add("parallel.dp", &l.dp, "data parallel").range(0, big).note("0 = every GPU not used by tp x cp x pp");
  s.add("parallel.zero_stage", &l.zero_stage, "0 none, 1 optimizer, 2 + gradients, 3 + parameters (FSDP)").range(0, 3);
  s.add("parallel.reshard_after_forward", &l.reshard_after_forward,
        "ZeRO-3: free gathered weights after forward and gather again for backward (false: keep the stage's "
        "weights gathered from forward to backward)");
  s.add_enum("parallel.zero2_gradients", &l.zero2_grads, {"sharded", "full"},
             "ZeRO-2: sharded gradients reduce-scattered every micro-batch, or a full buffer reduced once per step")
      .note("ZeRO-2 only");
  s.add("parallel.gpus", &l.gpus, "GPUs in the job").range(0, big).note("0 = all usable GPUs of the cluster");
  s.add("parallel.comm_sms", &l.comm_sms,
        "streaming multiprocessors held by communication kernels overlapping computation (DualPipe with "
        "DeepEP-style dispatch/combine): compute kernels run at (gpu.sms - comm_sms) / gpu.sms of the device's rates")
      .range(0, 1 << 16)
      .note("0 = none reserved; must be below gpu.sms");
  s.add("batch.micro_batch", &l.micro_batch, "sequences per micro-batch per pipeline").range(1, big);
  ConfigKey& global_batch = s.add("batch.global_batch", &l.global_batch, "sequences per optimizer step").range(1, big);
  if (role == KeyRole::kFile) global_batch.required();
  s.add("batch.seq_len", &l.seq_len, "tokens per sequence").range(0, big).note("0 = the model file's train.seq_len");
  s.add("batch.document_tokens", &l.document_tokens,
        "mean tokens per document in sequences packed with several, document-masked: attention FLOPs and time count "
        "only the keys within a token's document")
      .range(0, big)
      .note("0 = a sequence is one document (no packing, or train.document_mask = false)");
  s.add_enum("memory.recompute", &l.recompute, kRecompute, "activation recomputation");
  s.add_enum("memory.offload", &l.offload, {"none", "optimizer", "params"},
             "optimizer: master weights and moments in host memory; params: all training state in the offload "
             "tier, each layer's weights streamed in ahead of use and its gradients out (ZeRO-Infinity, weight "
             "streaming)");
  s.add_enum("memory.offload_tier", &l.offload_tier, {"host", "nvme"},
             "where memory.offload = \"params\" keeps the state: host memory, or NVMe through host memory");
  s.add("memory.prefetch_layers", &l.prefetch_layers,
        "memory.offload = \"params\": layers fetched ahead of the one computing (each holds a buffer)")
      .range(0, 64);
  s.add("memory.flash_attention", &l.flash_attention, "false: attention probabilities are materialised");
  s.add_enum("memory.attention_kernel", &l.attention_kernel, {"fa2", "fa3"},
             "flash-attention kernel: FlashAttention-2, or FlashAttention-3 (Hopper only); its rate depends on the "
             "key span of each call (docs/planner.md)");
  s.add("memory.recompute_modules", &l.recompute_modules,
        "modules recomputed in backward besides memory.recompute: norm, core_attn, swiglu, experts, "
        "shared_experts, qkv, expert_output");
  s.add("memory.fp8_activations", &l.fp8_activations,
        "inputs of FP8 linear layers cached in FP8 with per-128 scales (DeepSeek-V3); needs precision.gemm = \"fp8\"");
  s.add_enum("memory.allocator", &l.allocator, kAllocators,
             "device allocator: caching (PyTorch default), expandable (expandable_segments), arena (static)");
  s.add("memory.fragmentation", &l.fragmentation, "allocator overhead, fraction of activations and buffers")
      .range(-1, 1).note("-1 = the allocator's figure (caching 0.15, expandable 0.02, arena 0)");
  s.add_enum("precision.params", &l.params, {"bf16", "fp32"}, "bf16 = bf16 weights, fp32 master copy in the optimizer");
  s.add_enum("precision.grads", &l.grads, {"bf16", "fp32"}, "gradient accumulation and reduction dtype");
  s.add_enum("precision.optimizer_state", &l.moments, {"bf16", "fp32"},
             "optimizer moments (AdamW m and v, Muon momentum): bf16 halves their memory and update traffic");
  s.add_enum("precision.gemm", &l.gemm, {"bf16", "fp8"},
             "linear-layer GEMMs: fp8 runs them at gpu.peak_fp8_tflops (router, LM head and attention stay bf16)");
  s.add_enum("precision.optimizer", &l.optimizer, {"adamw", "muon"}, "optimizer (its state size)");
  s.add("comm.tp_overlap", &l.tp_overlap, "TP collectives overlapped with GEMMs");
  s.add("comm.dp_overlap", &l.dp_overlap, "gradient reduce / parameter gather overlapped with compute");
  s.add("comm.ep_overlap", &l.ep_overlap, "fraction of all-to-all time hidden (DualPipe-style ~1)").range(0, 1);
  s.add("moe.expert_imbalance", &l.expert_imbalance, "dropless: busiest rank's expert rows / mean").range(1, 1000);
  s.add("checkpoint.interval_minutes", &l.checkpoint_interval_minutes, "checkpoint interval")
      .min(0).unit("min").note("0 = Daly's optimum");
  s.add("checkpoint.async", &l.checkpoint_async, "training blocks only for the device-to-host copy");
}

// Checks across keys of one layout (the file's, or a phase's under `prefix` "phase[i].").
Status check_settings(const LayoutSettings& l, const ConfigOrigins& o, const std::string& prefix) {
  for (const std::string& m : l.recompute_modules) {
    const auto& names = recompute_module_names();
    if (std::find(names.begin(), names.end(), m) == names.end())
      return o.error(prefix + "memory.recompute_modules",
                     fmt::format("unknown module \"{}\"; expected one of {}", m, fmt::join(names, ", ")));
  }
  if (l.fp8_activations && l.gemm != GemmPrecision::kFp8)
    return o.error(prefix + "memory.fp8_activations", "needs precision.gemm = \"fp8\" (FP8 GEMMs consume the FP8 copies)");
  if (l.virtual_stages > 1 && l.schedule != PipeSchedule::kInterleaved)
    return o.error(prefix + "parallel.virtual_stages",
                   fmt::format("{} needs parallel.pp_schedule = \"interleaved\"", l.virtual_stages));
  return Status::ok();
}

// ---- Training phases ([[phase]]) ----
// Each phase element declares its own keys and every layout key. `inherit` (when not null) is copied into
// a phase as it is created, before its keys are read, so what it does not set keeps the layout's values.
void declare_phases(ConfigSchema& s, LayoutConfig& l, const LayoutSettings* inherit) {
  s.add_table_array<LayoutPhase>(
      "phase", &l.phases,
      [inherit](ConfigSchema& e, LayoutPhase& ph) {
        if (inherit) ph.layout = *inherit;
        e.add("name", &ph.name, "a label for reports (\"\" = phase N)");
        e.add("tokens", &ph.tokens, "tokens of this phase, in order").min(0).unit("tokens")
            .note("0 = what the other phases leave of --tokens (one phase at most)");
        e.add("ramp_from", &ph.ramp_from,
              "global batch (sequences) at the phase start, ramped linearly in tokens to the phase's "
              "batch.global_batch (each step rounded to a multiple of dp x micro_batch)")
            .range(0, int64_t(1) << 40).note("0 = constant batch");
        declare_setting_keys(e, ph.layout, KeyRole::kPhase);
      },
      "one [[phase]] table per training phase, in order: its tokens, an optional batch ramp, and any layout key "
      "(e.g. batch.seq_len = 131072); keys it does not set keep the layout's values");
}

}  // namespace

void declare_keys(ConfigSchema& s, LayoutConfig& l) {
  declare_setting_keys(s, l, KeyRole::kFile);
  declare_phases(s, l, nullptr);
}

LayoutConfig phase_layout(const LayoutPhase& ph) {
  LayoutConfig l;
  static_cast<LayoutSettings&>(l) = ph.layout;
  return l;
}

Result<LayoutConfig> parse_layout(const std::string& text, const std::string& source,
                                  const std::vector<std::string>& overrides) {
  // Pass 1: the layout's own keys (phases are read too, against defaults, only to check them).
  LayoutConfig base;
  base.source = source;
  {
    ConfigSchema s("layout file");
    declare_keys(s, base);
    ConfigOrigins o;
    MT_RETURN_IF_ERROR(s.load(text, source, overrides, o));
    MT_RETURN_IF_ERROR(check_settings(base, o, ""));
  }
  if (base.phases.empty()) return base;
  // Pass 2: every phase starts as the layout of pass 1 and then reads its own keys.
  const LayoutSettings inherit = base;
  LayoutConfig l;
  l.source = source;
  ConfigSchema s("layout file");
  declare_setting_keys(s, l, KeyRole::kFile);
  declare_phases(s, l, &inherit);
  ConfigOrigins o;
  MT_RETURN_IF_ERROR(s.load(text, source, overrides, o));
  for (size_t i = 0; i < l.phases.size(); ++i) {
    const LayoutPhase& ph = l.phases[i];
    const std::string prefix = fmt::format("phase[{}].", i);
    MT_RETURN_IF_ERROR(check_settings(ph.layout, o, prefix));
    if (ph.ramp_from > 0 && ph.ramp_from >= ph.layout.global_batch)
      return o.error(prefix + "ramp_from", fmt::format("{} sequences must be below the phase's batch.global_batch = {} "
                                                       "(a ramp grows the batch)", ph.ramp_from,
                                                       ph.layout.global_batch));
  }
  if (std::count_if(l.phases.begin(), l.phases.end(), [](const LayoutPhase& ph) { return ph.tokens == 0; }) > 1)
    return o.error("phase", "at most one phase may leave tokens = 0 (the rest of the budget)");
  return l;
}

Result<LayoutConfig> load_layout(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_file(path, "layout file");
  if (!text) return text.status();
  return parse_layout(*text, path, overrides);
}

std::pair<int64_t, int64_t> stage_layers(const Parallel& p, int64_t n_layers, int64_t stage) {
  const int64_t f = p.first_stage_layers, l = p.last_stage_layers, pp = p.pp;
  const bool fix_first = f >= 0 && pp > 1, fix_last = l >= 0 && pp > 1;
  if (fix_first && stage == 0) return {0, f};
  if (fix_last && stage == pp - 1) return {n_layers - l, l};
  const int64_t lo = fix_first ? 1 : 0, k = pp - lo - (fix_last ? 1 : 0);
  const int64_t rest = n_layers - (fix_first ? f : 0) - (fix_last ? l : 0);
  if (k <= 0) return {fix_first ? f : 0, 0};
  const int64_t j = stage - lo, base = rest / k, rem = rest % k;
  return {(fix_first ? f : 0) + j * base + std::min(j, rem), base + (j < rem ? 1 : 0)};
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
  MT_RETURN_IF_ERROR(m.validate(ConfigOrigins("model"), p.seq_len));

  const int64_t usable = c.usable_gpus();
  p.gpus = l.gpus > 0 ? l.gpus : usable;
  if (p.gpus > c.total_gpus())
    return bad("parallel.gpus", fmt::format("{} GPUs requested but the cluster has {}", p.gpus, c.total_gpus()));
  if (l.gpus > usable)
    p.warnings.push_back(fmt::format("the job uses {} GPUs, more than the {} that spare racks and the SLA leave usable",
                                     l.gpus, usable));
  p.tp = l.tp;
  p.cp = l.cp;
  p.pp = l.pp;
  p.ep = l.ep;
  p.v = l.virtual_stages;
  const int64_t tp_pp = p.tp * p.cp * p.pp;
  const std::string cp_x = p.cp > 1 ? fmt::format(" x cp {}", p.cp) : "";
  if (p.gpus % tp_pp != 0)
    return bad(p.cp > 1 ? "parallel.tp x parallel.cp x parallel.pp" : "parallel.tp x parallel.pp",
               fmt::format("tp x pp{} = {} x {} = {} does not divide the {} GPUs of the job", cp_x, p.tp, p.pp, tp_pp,
                           p.gpus));
  p.dp = p.gpus / tp_pp;
  if (l.dp > 0 && l.dp != p.dp)
    return bad("parallel.dp", fmt::format("tp x pp{} x dp = {} x {} x {} = {} does not match the {} GPUs of the job",
                                          cp_x, p.tp, p.pp, l.dp, tp_pp * l.dp, p.gpus));
  if (p.cp > 1) {
    // Megatron-Core's load balancing: 2 cp chunks, rank i holding chunks i and 2cp - 1 - i.
    if (p.seq_len % (2 * p.cp) != 0)
      return bad("parallel.cp", fmt::format("the sequence of {} tokens must split into 2 x cp = {} equal chunks",
                                            p.seq_len, 2 * p.cp));
    const int64_t chunk = p.seq_len / (2 * p.cp);
    if (m.layer_pattern.find('L') != std::string::npos && m.window > 1 && m.window < p.seq_len && m.window - 1 > chunk)
      return bad("parallel.cp", fmt::format("model.window = {} needs {} rows before each chunk, more than a chunk "
                                            "of {} holds (a halo comes from the one chunk before)",
                                            m.window, m.window - 1, chunk));
    if (!l.flash_attention)
      return bad("parallel.cp", "ring attention runs a flash-attention kernel per chunk: set memory.flash_attention = true");
  }
  if (c.device.kind == DeviceKind::kCpu) {
    if (p.tp != 1 || p.pp != 1 || p.ep != 1 || p.gpus != p.cp)
      return bad("parallel",
                 "the CPU trainer is planned as one process, or as parallel.cp processes sharing "
                 "each sequence (dist.cp): tp, pp and ep must be 1 and parallel.gpus = parallel.cp");
    // precision.params = "bf16" is the trainer's train.precision = "bf16": fp32 master weights
    // plus a bf16 shadow for the GEMMs (plan/memory.cpp, cpu_memory).
    if (m.max_groups_per_token > 0)
      return bad("model.max_groups_per_token", "the CPU trainer does not implement group-limited routing yet");
    if (l.offload == Offload::kParams)
      return bad("memory.offload", "\"params\" (weight streaming) is modelled for GPU clusters only");
    // A cluster file with measured figures (moetrain doctor --write-cluster) must have them for the step's
    // precision: mixing measured and preset rates would say neither.
    const bool bf16 = l.params == Precision::kBf16;
    if (c.cpu.measured() && !c.cpu.rates(bf16).measured())
      return bad("precision.params",
                 fmt::format("\"{}\": the cluster file {} has no measured {} figures "
                             "(cpu.gemm_{}_gflops)",
                             bf16 ? "bf16" : "fp32", c.source, bf16 ? "bf16" : "fp32", bf16 ? "bf16" : "fp32"));
  }
  if (l.comm_sms < 0) return bad("parallel.comm_sms", fmt::format("must be >= 0, got {}", l.comm_sms));
  if (l.comm_sms > 0 && c.device.sms <= 0)
    return bad("parallel.comm_sms",
               fmt::format("{} SMs reserved, but the {} has no SM count (gpu.sms = 0)", l.comm_sms, c.device.type));
  if (l.comm_sms > 0 && l.comm_sms >= c.device.sms)
    return bad("parallel.comm_sms", fmt::format("{} must be below the {}'s {} SMs (gpu.sms): compute needs some",
                                                l.comm_sms, c.device.type, c.device.sms));
  if (l.gemm == GemmPrecision::kFp8 && !(c.device.peak_fp8_tflops > 0))
    return bad("precision.gemm", fmt::format("fp8 needs FP8 tensor cores: the {} has gpu.peak_fp8_tflops = 0",
                                             c.device.type));
  if (l.attention_kernel == AttentionKernel::kFa3 && c.device.type != "H100" && c.device.type != "H200" &&
      c.device.type != "H800")
    return bad("memory.attention_kernel",
               fmt::format("fa3 runs on Hopper (H100, H200, H800) only, not on the {}", c.device.type));
  if (m.n_heads % p.tp != 0)
    return bad("parallel.tp", fmt::format("{} must divide model.n_heads = {}", p.tp, m.n_heads));
  for (int64_t hkv : {m.n_kv_heads, m.n_kv_heads_local > 0 ? m.n_kv_heads_local : m.n_kv_heads})
    if (!m.mla() && hkv % p.tp != 0 && p.tp % hkv != 0)
      return bad("parallel.tp", fmt::format("{} and the {} KV heads must divide one another", p.tp, hkv));
  if (p.cp > 1 && p.tp * p.cp > c.device.gpus_per_domain)
    p.warnings.push_back(fmt::format("tp x cp = {} spans more than one NVLink domain ({} GPUs): the K/V ring crosses "
                                     "the scale-out network", p.tp * p.cp, c.device.gpus_per_domain));
  if (p.tp > c.device.gpus_per_domain)
    p.warnings.push_back(fmt::format("tp = {} spans more than one NVLink domain ({} GPUs): TP traffic crosses the "
                                     "scale-out network", p.tp, c.device.gpus_per_domain));
  p.first_stage_layers = l.first_stage_layers;
  p.last_stage_layers = l.last_stage_layers;
  const bool uneven = l.first_stage_layers >= 0 || l.last_stage_layers >= 0;
  if (uneven) {
    const char* key = l.first_stage_layers >= 0 ? "parallel.first_stage_layers" : "parallel.last_stage_layers";
    if (p.pp < 2) return bad(key, "needs parallel.pp >= 2");
    const int64_t fixed = std::max<int64_t>(l.first_stage_layers, 0) + std::max<int64_t>(l.last_stage_layers, 0);
    const int64_t free_stages = p.pp - (l.first_stage_layers >= 0) - (l.last_stage_layers >= 0);
    if (fixed > m.n_layers || (free_stages == 0 && fixed != m.n_layers))
      return bad(key, fmt::format("the first and last stages hold {} layers, leaving {} for {} other stages of a "
                                  "{}-layer model", fixed, m.n_layers - fixed, free_stages, m.n_layers));
    // Every stage that holds layers needs at least one per model chunk, except that with an interleaved
    // schedule the embedding's chunk (the first of stage 0) and the head's chunk (the last of the last stage)
    // may hold none: Llama 3 405B ran 126 layers as 16 stages x 8 chunks this way (Dubey et al. 2024,
    // section 3.3.2). Without interleaving the embedding- or head-only stage holds no layer at all.
    for (int64_t st = 0; st < p.pp; ++st) {
      const int64_t n = stage_layers(p, m.n_layers, st).second;
      if (n == 0 && st != 0 && st != p.pp - 1)
        return bad("parallel.pp", fmt::format("stage {} holds no layer: {} layers do not fill {} stages", st,
                                              m.n_layers, p.pp));
      const int64_t empty_chunks = (st == 0 && l.first_stage_layers >= 0) + (st == p.pp - 1 && l.last_stage_layers >= 0);
      if (n > 0 && n < p.v - empty_chunks)
        return bad("parallel.virtual_stages", fmt::format("stage {} holds {} layers, fewer than the {} model chunks "
                                                          "that need one", st, n, p.v - empty_chunks));
    }
  } else if (p.pp * p.v > m.n_layers) {
    return bad("parallel.pp", fmt::format("pp x virtual_stages = {} exceeds model.n_layers = {} (stages holding only "
                                          "the embedding or the head: parallel.first_stage_layers / "
                                          "last_stage_layers = 0)", p.pp * p.v, m.n_layers));
  }
  if (l.schedule == PipeSchedule::kDualPipe && p.pp % 2 != 0)
    return bad("parallel.pp_schedule", fmt::format("dualpipe needs an even pp, got {}", p.pp));
  p.layers_per_stage = 0;
  for (int64_t st = 0; st < p.pp; ++st)
    p.layers_per_stage = std::max(p.layers_per_stage, stage_layers(p, m.n_layers, st).second);
  if (p.ep > 1) {
    if (m.n_experts == 0) return bad("parallel.ep", "expert parallelism needs an MoE model (model.n_experts > 0)");
    if (m.n_experts % p.ep != 0)
      return bad("parallel.ep", fmt::format("{} must divide model.n_experts = {}", p.ep, m.n_experts));
    if ((p.dp * p.cp * p.tp) % p.ep != 0)
      return bad("parallel.ep", p.cp > 1 ? fmt::format("{} must divide dp x cp x tp = {} x {} x {} = {}", p.ep, p.dp,
                                                       p.cp, p.tp, p.dp * p.cp * p.tp)
                                         : fmt::format("{} must divide dp x tp = {} x {} = {}", p.ep, p.dp, p.tp,
                                                       p.dp * p.tp));
  }
  p.edp = (p.dp * p.cp * p.tp) / p.ep;
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
