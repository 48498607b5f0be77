// cluster.cpp — device presets and strict loading of cluster files.
#include "plan/cluster.h"

#include <fmt/format.h>

#include <limits>
#include <optional>
#include <string>

#include "core/config_schema.h"
#include "core/file_io.h"

namespace mt::plan {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

const std::vector<DeviceSpec>& device_presets() {
  // shared/reference/hardware.md (A100 from NVIDIA's A100 datasheet). The CPU
  // entry is the 2-core development VM of docs/performance.md (fp32 FMA peak);
  // a CPU cluster file should give its own measured `moetrain bench` peak.
  // Ampere sustains a larger share of its (lower) peak. GEMM: Hopper's fraction times the mean ratio of the
  // fractions that reproduce the same MPT models on A100 and H100 in llm-foundry's tables (1.2824, 1.2874,
  // 1.4057; docs/reference-tables/generations.md, PlanCalibration.AmpereByTheMptPairs). Attention 0.50:
  // FlashAttention-2 reaches 50-73% of A100 peak (Dao 2023), not calibrated.
  EfficiencyModel ampere;
  ampere.gemm = 0.804;
  ampere.attention = 0.50;
  const EfficiencyModel hopper;  // calibrated (plan/calibration.h)
  // Blackwell: Hopper's GEMM fraction times the ratio of the fractions that reproduce the same Megatron-Bridge
  // workload (Llama 3 8B, FP8, 8 GPUs) on each generation: B200 0.6951 / 0.8732, GB200 0.6227 / 0.8732,
  // GB300 0.9077 / 0.8732 (docs/reference-tables/generations.md; PlanCalibration.EfficiencyByGeneration).
  EfficiencyModel b200 = hopper, gb200 = hopper, gb300 = hopper;
  b200.gemm = 0.483;
  gb200.gemm = 0.433;
  gb300.gemm = 0.631;
  EfficiencyModel cpu;  // CPU trainer: oneDNN GEMMs (docs/performance.md), no fused attention
  cpu.gemm = 0.70;
  cpu.gemm_k0 = 0;
  cpu.attention = 0.10;
  cpu.elementwise = 1.0;
  cpu.kernel_latency_us = 20;
  static const std::vector<DeviceSpec> kPresets = {
      // FP8: dense FP8 is twice dense BF16 on Hopper and Blackwell (NVIDIA datasheets); Ampere has none.
      // SMs: A100 108 (NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020); H100 SXM5 132 (NVIDIA H100
      // Tensor Core GPU Architecture whitepaper, 2022), the H200 and the H800 the same GH100 configuration
      // (DeepSeek-V3 report, sec. 3.2.2: "20 out of 132 SMs" of the H800); B200 and GB200's Blackwell GPU 148
      // (74 of each die's 80, as CUDA reports it; Chips and Cheese, "Nvidia's B200", 2025); Blackwell Ultra 160
      // (NVIDIA Technical Blog, "Inside NVIDIA Blackwell Ultra", 2025).
      {"A100", DeviceKind::kGpu, 312.0, 80.0, 2.039, 600.0, 8, 8, ampere, 0.0, 108},
      {"H100", DeviceKind::kGpu, 989.0, 80.0, 3.35, 900.0, 8, 8, hopper, 1979.0, 132},
      {"H200", DeviceKind::kGpu, 989.0, 141.0, 4.8, 900.0, 8, 8, hopper, 1979.0, 132},
      {"H800", DeviceKind::kGpu, 989.0, 80.0, 3.35, 400.0, 8, 8, hopper, 1979.0, 132},
      {"B200", DeviceKind::kGpu, 2250.0, 180.0, 8.0, 1800.0, 8, 8, b200, 4500.0, 148},
      {"GB200", DeviceKind::kGpu, 2500.0, 186.0, 8.0, 1800.0, 4, 72, gb200, 5000.0, 148},
      {"GB300", DeviceKind::kGpu, 2500.0, 288.0, 8.0, 1800.0, 4, 72, gb300, 5000.0, 160},
      {"cpu", DeviceKind::kCpu, 0.433, 16.0, 0.02, 0.0, 1, 1, cpu, 0.0, 0},
  };
  return kPresets;
}

const DeviceSpec* find_device(const std::string& type) {
  for (const DeviceSpec& d : device_presets())
    if (d.type == type) return &d;
  return nullptr;
}

ClusterConfig one_cpu_cluster(const std::string& source) {
  ClusterConfig c;
  c.source = source;
  c.device = *find_device("cpu");
  c.racks = 1;
  c.gpus_per_rack = 1;
  return c;
}

void declare_keys(ConfigSchema& s, ClusterConfig& c) {
  s.add("cluster.name", &c.name, "a label for reports");
  s.add("gpu.type", &c.device.type, "device preset: A100, H100, H200, H800, B200, GB200, GB300 or cpu; it supplies "
                                    "every [gpu] and [efficiency] default").required();
  s.add("gpu.peak_bf16_tflops", &c.device.peak_tflops, "dense BF16 peak per device").above(0).unit("TFLOP/s");
  s.add("gpu.peak_fp8_tflops", &c.device.peak_fp8_tflops, "dense FP8 peak per device (layouts with precision.gemm = "
        "\"fp8\")").min(0).unit("TFLOP/s").note("0 = no FP8");
  s.add("gpu.hbm_gib", &c.device.hbm_gib, "memory per device").above(0).unit("GiB");
  s.add("gpu.hbm_tbps", &c.device.hbm_tbps, "memory bandwidth per device").above(0).unit("TB/s");
  s.add("gpu.nvlink_gbps", &c.device.nvlink_gbps, "NVLink per GPU, both directions together").min(0).unit("GB/s");
  s.add("gpu.sms", &c.device.sms,
        "streaming multiprocessors per device (layouts with parallel.comm_sms take "
        "some from the compute kernels)")
      .range(0, 1 << 16)
      .note("0 = not given");
  s.add("gpu.gpus_per_node", &c.device.gpus_per_node, "GPUs per host").range(1, 1 << 20);
  s.add("gpu.gpus_per_domain", &c.device.gpus_per_domain, "GPUs in one NVLink domain").range(1, 1 << 20);
  s.add("topology.gpus_per_rack", &c.gpus_per_rack, "unit allocated, spared and covered by the SLA")
      .range(1, 1 << 20).note("default: gpu.gpus_per_domain");
  s.add("topology.racks", &c.racks, "racks owned").range(1, 1 << 24).required();
  s.add("topology.spare_racks", &c.spare_racks, "racks held back to replace failed ones").range(0, 1 << 24);
  s.add("topology.sla_min_gpus_up", &c.sla_min_gpus_up, "SLA: at least this many GPUs up per rack")
      .range(0, 1 << 20).note("0 = all");
  s.add("topology.scaleout_gbps", &c.scaleout_gbps, "scale-out link per GPU, one direction").above(0).unit("GB/s");
  s.add("topology.host_link_gbps", &c.host_link_gbps, "per GPU to host memory").above(0).unit("GB/s");
  s.add("topology.host_memory_gib", &c.host_memory_gib, "host memory per node for offloaded training state")
      .above(0).unit("GiB");
  s.add("topology.host_memory_gbps", &c.host_memory_gbps, "host memory bandwidth per node (optimizer at the store)")
      .above(0).unit("GB/s");
  s.add("topology.nvme_tib", &c.nvme_tib, "NVMe capacity per node (offload tier)").above(0).unit("TiB");
  s.add("topology.nvme_gbps", &c.nvme_gbps, "NVMe bandwidth per node, the slower direction").above(0).unit("GB/s");
  s.add("reliability.gpu_mtbf_hours", &c.gpu_mtbf_hours, "mean time between job-interrupting failures per GPU")
      .above(0).unit("h");
  s.add("reliability.gpu_repair_hours", &c.gpu_repair_hours,
        "a node taken out by a hardware failure is back after this long (repair or replacement)").min(0).unit("h");
  s.add("reliability.rack_mtbf_hours", &c.rack_mtbf_hours, "whole-rack outages").min(0).unit("h").note("0 = none");
  s.add("reliability.rack_repair_hours", &c.rack_repair_hours, "a failed rack is out this long").min(0).unit("h");
  s.add("reliability.restart_minutes", &c.restart_minutes, "detect, reschedule, initialise (checkpoint load is added)")
      .min(0).unit("min");
  s.add_enum("reliability.on_shortage", &c.on_shortage, {"wait", "shrink"},
             "a unit is lost and no spare is free: wait for a repair, or run on fewer data-parallel replicas");
  c.failure_cause_weights.resize(failure_causes().size(), 0.0);
  for (size_t i = 0; i < failure_causes().size(); ++i) {
    const FailureCause& f = failure_causes()[i];
    s.add("failure_causes." + f.key, &c.failure_cause_weights[i],
          fmt::format("relative weight of \"{}\" interruptions ({})", f.label,
                      f.takes_node ? "takes the node out" : "restart only"))
        .min(0).note(fmt::format("Llama 3: {:g} of 419", f.llama3_count));
  }
  s.add("storage.write_gbps", &c.storage_write_gbps, "checkpoint write bandwidth, whole cluster").above(0).unit("GB/s");
  s.add("storage.read_gbps", &c.storage_read_gbps, "checkpoint read bandwidth, whole cluster").above(0).unit("GB/s");
  s.add("cost.gpu_hour_usd", &c.gpu_hour_usd, "price of one GPU-hour").min(0).unit("USD").note("0 = cost not shown");
  s.add("efficiency.gemm", &c.eff.gemm, "large BF16 GEMMs: fraction of peak sustained").above(0).max(1);
  s.add("efficiency.gemm_k0", &c.eff.gemm_k0, "GEMM pipeline fill: rate x K / (K + k0)").range(0, 1e6);
  s.add("efficiency.elementwise", &c.eff.elementwise, "element-wise traffic relative to the minimal count")
      .above(0).max(100);
  s.add("efficiency.attention", &c.eff.attention, "fused attention, fraction of peak").above(0).max(1);
  s.add("efficiency.hbm", &c.eff.hbm, "memory-bound kernels: fraction of HBM bandwidth").above(0).max(1);
  s.add("efficiency.link", &c.eff.link, "collectives: fraction of nominal link bandwidth").above(0).max(1);
  s.add("efficiency.overlap", &c.eff.overlap, "fraction of a compute window that can hide communication").range(0, 1);
  s.add("efficiency.kernel_latency_us", &c.eff.kernel_latency_us, "fixed cost per kernel").min(0).unit("us");
  // [cpu]: what `moetrain doctor --write-cluster` measured (gpu.type = "cpu" only; docs/planner.md).
  s.add("cpu.threads", &c.cpu.threads, "threads the [cpu] figures were measured on")
      .range(0, 1 << 16)
      .note("0 = not given");
  for (auto [name, r] : {std::pair<const char*, CpuRates*>{"fp32", &c.cpu.fp32}, {"bf16", &c.cpu.bf16}}) {
    const std::string n = name;
    s.add("cpu.peak_" + n + "_gflops", &r->peak_gflops,
          n == "fp32" ? "measured fp32 FMA peak (MFU's denominator for fp32 steps)"
                      : "measured peak of the unit bf16 products run on (AMX, AVX512-BF16 or FMA)")
        .min(0)
        .unit("GFLOP/s")
        .note("0 = not measured");
    s.add("cpu.gemm_" + n + "_gflops", &r->gemm_gflops, "best 2048^3 " + n + " product")
        .min(0)
        .unit("GFLOP/s")
        .note("0 = not measured: the cpu preset's peak x efficiency model");
    s.add("cpu.gemm_" + n + "_efficiency", &r->gemm_efficiency,
          "model-shaped " + n + " products: rate = gemm x efficiency x K / (K + k0), fitted")
        .min(0)
        .max(4);
    s.add("cpu.gemm_" + n + "_k0", &r->gemm_k0, "reduction steps of the K / (K + k0) term, fitted").range(0, 1e5);
    s.add("cpu.attention_" + n + "_gflops", &r->attention_gflops,
          "attention kernel, forward + backward: 3.5 x 4 H Dh keys FLOPs per token over its time")
        .min(0)
        .unit("GFLOP/s");
    s.add("cpu.delta_" + n + "_gflops", &r->delta_gflops, "chunked gated-delta kernel, forward + backward, same count")
        .min(0)
        .unit("GFLOP/s")
        .note("0 = not measured: the attention rate");
    s.add("cpu.experts_" + n + "_factor", &r->experts_factor,
          "routed experts' grouped kernel: measured time over the fitted GEMM rate's prediction")
        .range(0, 100)
        .note("0 = not measured: 1");
  }
}

Result<ClusterConfig> parse_cluster(const std::string& text, const std::string& source,
                                    const std::vector<std::string>& overrides) {
  ClusterConfig c;
  c.source = source;
  // The device type comes first: its preset supplies every default.
  auto peeked = ConfigSchema::peek_string(text, source, overrides, "gpu.type");
  if (!peeked) return peeked.status();
  const std::string type = peeked->value_or("");
  std::string known;
  for (const DeviceSpec& d : device_presets()) known += fmt::format("{}\"{}\"", known.empty() ? "" : ", ", d.type);
  // Without a (known) type the file is still read, so syntax errors and unknown keys are reported first.
  const DeviceSpec* preset = find_device(type);
  if (preset) {
    c.device = *preset;
    c.eff = preset->eff;
    c.gpus_per_rack = preset->gpus_per_domain;
  }
  ConfigSchema s("cluster file");
  declare_keys(s, c);
  ConfigOrigins o;
  Status loaded = s.load(text, source, overrides, o);
  if (!loaded && !(type.empty() && loaded.message().find("gpu.type: required") != std::string::npos)) return loaded;
  if (type.empty()) return Status::errorf("{}: gpu.type: required key missing (one of {})", source, known);
  if (!preset) return o.error("gpu.type", fmt::format("unknown GPU \"{}\" (known: {})", type, known));
  if (!o.was_set("topology.gpus_per_rack")) c.gpus_per_rack = c.device.gpus_per_domain;

  const DeviceSpec& d = c.device;
  if (d.gpus_per_domain % d.gpus_per_node != 0 && d.gpus_per_node % d.gpus_per_domain != 0)
    return o.error("gpu.gpus_per_domain", fmt::format("{} and gpu.gpus_per_node {} must divide one another",
                                                      d.gpus_per_domain, d.gpus_per_node));
  if (c.gpus_per_rack % d.gpus_per_domain != 0 && d.gpus_per_domain % c.gpus_per_rack != 0)
    return o.error("topology.gpus_per_rack", fmt::format("{} and gpu.gpus_per_domain {} must divide one another",
                                                         c.gpus_per_rack, d.gpus_per_domain));
  if (c.spare_racks >= c.racks)
    return o.error("topology.spare_racks",
                   fmt::format("{} leaves no rack for the job (racks = {})", c.spare_racks, c.racks));
  if (c.sla_min_gpus_up > c.gpus_per_rack)
    return o.error("topology.sla_min_gpus_up",
                   fmt::format("{} exceeds topology.gpus_per_rack = {}", c.sla_min_gpus_up, c.gpus_per_rack));
  double weight = 0;
  for (double w : c.failure_cause_weights) weight += w;
  if (!(weight > 0)) return o.error("failure_causes", "the weights must not all be 0");
  if (d.kind != DeviceKind::kCpu)
    if (const std::optional<std::string> key = o.first_set_under("cpu."))
      return o.error(*key, fmt::format("measured CPU figures need gpu.type = \"cpu\", not \"{}\"", d.type));
  // A precision whose products were measured needs the rest of its figures: the planner would otherwise mix
  // measured GEMMs with the preset's guesses.
  for (auto [name, r] : {std::pair<const char*, const CpuRates*>{"fp32", &c.cpu.fp32}, {"bf16", &c.cpu.bf16}}) {
    if (!r->measured()) continue;
    for (auto [key, v] : {std::pair<std::string, double>{"peak", r->peak_gflops},
                          {"gemm", r->gemm_efficiency},
                          {"attention", r->attention_gflops}}) {
      const std::string k =
          key == "gemm" ? fmt::format("cpu.gemm_{}_efficiency", name) : fmt::format("cpu.{}_{}_gflops", key, name);
      if (!(v > 0))
        return o.error(k, fmt::format("must be > 0 when cpu.gemm_{}_gflops is given (measured {} figures come "
                                      "together; moetrain doctor --write-cluster writes them all)",
                                      name, name));
    }
  }
  if (d.kind == DeviceKind::kGpu && d.nvlink_gbps <= 0 && d.gpus_per_domain > 1)
    return o.error("gpu.nvlink_gbps", "must be > 0 when gpu.gpus_per_domain > 1");
  return c;
}

Result<ClusterConfig> load_cluster(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_file(path, "cluster file");
  if (!text) return text.status();
  return parse_cluster(*text, path, overrides);
}

}  // namespace mt::plan
