// cluster.cpp — device presets and strict loading of cluster files.
#include "plan/cluster.h"

#include <fmt/format.h>

#include <limits>

#include "plan/toml_schema.h"

namespace mt::plan {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

const std::vector<DeviceSpec>& device_presets() {
  // shared/reference/hardware.md (A100 from NVIDIA's A100 datasheet). The CPU
  // entry is the 2-core development VM of docs/performance.md (fp32 FMA peak);
  // a CPU cluster file should give its own measured `moetrain bench` peak.
  // Ampere sustains a larger share of its (lower) peak: GEMM and attention
  // efficiencies are scaled from public microbenchmarks (docs/planner.md), not calibrated.
  EfficiencyModel ampere;
  ampere.gemm = 0.70;
  ampere.attention = 0.50;
  const EfficiencyModel hopper;  // calibrated (plan/calibration.h); Blackwell keeps it until measured
  EfficiencyModel cpu;  // CPU trainer: oneDNN GEMMs (docs/performance.md), no fused attention
  cpu.gemm = 0.70;
  cpu.gemm_k0 = 0;
  cpu.attention = 0.10;
  cpu.elementwise = 1.0;
  cpu.kernel_latency_us = 20;
  static const std::vector<DeviceSpec> kPresets = {
      {"A100", DeviceKind::kGpu, 312.0, 80.0, 2.039, 600.0, 8, 8, ampere},
      {"H100", DeviceKind::kGpu, 989.0, 80.0, 3.35, 900.0, 8, 8, hopper},
      {"H200", DeviceKind::kGpu, 989.0, 141.0, 4.8, 900.0, 8, 8, hopper},
      {"H800", DeviceKind::kGpu, 989.0, 80.0, 3.35, 400.0, 8, 8, hopper},
      {"B200", DeviceKind::kGpu, 2250.0, 180.0, 8.0, 1800.0, 8, 8, hopper},
      {"GB200", DeviceKind::kGpu, 2500.0, 186.0, 8.0, 1800.0, 4, 72, hopper},
      {"GB300", DeviceKind::kGpu, 2500.0, 288.0, 8.0, 1800.0, 4, 72, hopper},
      {"cpu", DeviceKind::kCpu, 0.433, 16.0, 0.02, 0.0, 1, 1, cpu},
  };
  return kPresets;
}

const DeviceSpec* find_device(const std::string& type) {
  for (const DeviceSpec& d : device_presets())
    if (d.type == type) return &d;
  return nullptr;
}

Result<ClusterConfig> parse_cluster(const std::string& text, const std::string& source,
                                    const std::vector<std::string>& overrides) {
  ClusterConfig c;
  c.source = source;
  // The device type comes first: its preset supplies every default.
  auto peeked = TomlSchema::peek_string(text, source, "gpu", "type");
  if (!peeked) return peeked.status();
  std::string type = *peeked;
  for (const std::string& o : overrides)
    if (o.rfind("gpu.type=", 0) == 0) type = o.substr(9);
  std::string known;
  for (const DeviceSpec& d : device_presets()) known += fmt::format("{}\"{}\"", known.empty() ? "" : ", ", d.type);
  const size_t b = type.find_first_not_of("\" "), e = type.find_last_not_of("\" ");
  type = b == std::string::npos ? std::string() : type.substr(b, e - b + 1);
  // Without a (known) type the file is still parsed, so syntax errors and unknown keys are reported first.
  const DeviceSpec* preset = find_device(type);
  if (preset) {
    c.device = *preset;
    c.eff = preset->eff;
    c.gpus_per_rack = preset->gpus_per_domain;
  }
  TomlSchema s;
  s.add_string("cluster", "name", &c.name);
  std::string type_in_file;  // checked against the presets above, with the line it came from
  s.add_string("gpu", "type", &type_in_file, {}, Required::kYes);
  s.add_float("gpu", "peak_bf16_tflops", &c.device.peak_tflops, 0, kInf, Lower::kExclusive);
  s.add_float("gpu", "hbm_gib", &c.device.hbm_gib, 0, kInf, Lower::kExclusive);
  s.add_float("gpu", "hbm_tbps", &c.device.hbm_tbps, 0, kInf, Lower::kExclusive);
  s.add_float("gpu", "nvlink_gbps", &c.device.nvlink_gbps, 0, kInf);
  s.add_int("gpu", "gpus_per_node", &c.device.gpus_per_node, 1, 1 << 20);
  s.add_int("gpu", "gpus_per_domain", &c.device.gpus_per_domain, 1, 1 << 20);
  s.add_int("topology", "gpus_per_rack", &c.gpus_per_rack, 1, 1 << 20);
  s.add_int("topology", "racks", &c.racks, 1, 1 << 24, Required::kYes);
  s.add_int("topology", "spare_racks", &c.spare_racks, 0, 1 << 24);
  s.add_int("topology", "sla_min_gpus_up", &c.sla_min_gpus_up, 0, 1 << 20);
  s.add_float("topology", "scaleout_gbps", &c.scaleout_gbps, 0, kInf, Lower::kExclusive);
  s.add_float("topology", "host_link_gbps", &c.host_link_gbps, 0, kInf, Lower::kExclusive);
  s.add_float("reliability", "gpu_mtbf_hours", &c.gpu_mtbf_hours, 0, kInf, Lower::kExclusive);
  s.add_float("reliability", "gpu_repair_hours", &c.gpu_repair_hours, 0, kInf);
  s.add_float("reliability", "rack_mtbf_hours", &c.rack_mtbf_hours, 0, kInf);
  s.add_float("reliability", "rack_repair_hours", &c.rack_repair_hours, 0, kInf);
  s.add_float("reliability", "restart_minutes", &c.restart_minutes, 0, kInf);
  s.add_float("storage", "write_gbps", &c.storage_write_gbps, 0, kInf, Lower::kExclusive);
  s.add_float("storage", "read_gbps", &c.storage_read_gbps, 0, kInf, Lower::kExclusive);
  s.add_float("cost", "gpu_hour_usd", &c.gpu_hour_usd, 0, kInf);
  s.add_float("efficiency", "gemm", &c.eff.gemm, 0, 1, Lower::kExclusive);
  s.add_float("efficiency", "gemm_k0", &c.eff.gemm_k0, 0, 1e6);
  s.add_float("efficiency", "elementwise", &c.eff.elementwise, 0, 100, Lower::kExclusive);
  s.add_float("efficiency", "attention", &c.eff.attention, 0, 1, Lower::kExclusive);
  s.add_float("efficiency", "hbm", &c.eff.hbm, 0, 1, Lower::kExclusive);
  s.add_float("efficiency", "link", &c.eff.link, 0, 1, Lower::kExclusive);
  s.add_float("efficiency", "overlap", &c.eff.overlap, 0, 1);
  s.add_float("efficiency", "kernel_latency_us", &c.eff.kernel_latency_us, 0, kInf);
  MT_RETURN_IF_ERROR(s.parse(text, source));
  if (type.empty()) return Status::errorf("{}: missing required key 'gpu.type' (one of {})", source, known);
  if (!preset) {
    const std::string at = s.origin("gpu", "type");
    return Status::errorf("{}: gpu.type: unknown GPU \"{}\" (known: {})", at.empty() ? source : at, type, known);
  }
  for (const std::string& o : overrides) MT_RETURN_IF_ERROR(s.apply_override(o, source));
  MT_RETURN_IF_ERROR(s.check_required(source));
  if (!s.was_set("topology", "gpus_per_rack")) c.gpus_per_rack = c.device.gpus_per_domain;

  auto at = [&](const char* sec, const char* key) {
    std::string o = s.origin(sec, key);
    return o.empty() ? source : o;
  };
  const DeviceSpec& d = c.device;
  if (d.gpus_per_domain % d.gpus_per_node != 0 && d.gpus_per_node % d.gpus_per_domain != 0)
    return Status::errorf("{}: gpu.gpus_per_domain: {} and gpu.gpus_per_node {} must divide one another",
                          at("gpu", "gpus_per_domain"), d.gpus_per_domain, d.gpus_per_node);
  if (c.gpus_per_rack % d.gpus_per_domain != 0 && d.gpus_per_domain % c.gpus_per_rack != 0)
    return Status::errorf("{}: topology.gpus_per_rack: {} and gpu.gpus_per_domain {} must divide one another",
                          at("topology", "gpus_per_rack"), c.gpus_per_rack, d.gpus_per_domain);
  if (c.spare_racks >= c.racks)
    return Status::errorf("{}: topology.spare_racks: {} leaves no rack for the job (racks = {})",
                          at("topology", "spare_racks"), c.spare_racks, c.racks);
  if (c.sla_min_gpus_up > c.gpus_per_rack)
    return Status::errorf("{}: topology.sla_min_gpus_up: {} exceeds topology.gpus_per_rack = {}",
                          at("topology", "sla_min_gpus_up"), c.sla_min_gpus_up, c.gpus_per_rack);
  if (d.kind == DeviceKind::kGpu && d.nvlink_gbps <= 0 && d.gpus_per_domain > 1)
    return Status::errorf("{}: gpu.nvlink_gbps: must be > 0 when gpu.gpus_per_domain > 1",
                          at("gpu", "nvlink_gbps"));
  return c;
}

Result<ClusterConfig> load_cluster(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_text_file(path);
  if (!text) return text.status();
  return parse_cluster(*text, path, overrides);
}

}  // namespace mt::plan
