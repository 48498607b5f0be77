// cluster.h — what the planner knows about the machines: accelerator figures
// (built-in presets from public specifications, shared/reference/hardware.md),
// topology (GPUs per node, NVLink domain and rack; racks owned and kept spare;
// the per-rack SLA), link bandwidths, failure and repair rates, checkpoint
// storage, and the efficiency model that turns peak figures into achieved ones.
// Loaded strictly from configs/clusters/*.toml (docs/planner.md has the schema).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "plan/reliability.h"

namespace mt {
class ConfigSchema;
}  // namespace mt

namespace mt::plan {

enum class DeviceKind { kGpu, kCpu };

// Turns peak figures into achieved ones. Defaults: `gemm` and `elementwise`
// are fitted to the Megatron-LM H100 table (plan/calibration.h); the rest are
// published microbenchmark-level figures (docs/planner.md). Device presets
// may carry their own; a cluster file may override each.
struct EfficiencyModel {
  double gemm = 0.607;             // large BF16 GEMMs: fraction of peak sustained in training (fitted)
  double gemm_k0 = 256.0;          // per-tile pipeline fill, in reduction steps: GEMM rate x K / (K + k0)
  double elementwise = 1.96;       // element-wise traffic relative to the minimal count (fitted)
  // Fused attention, fraction of peak: FlashAttention-2's long-sequence plateau (causal, head dim 128; 335
  // of 989 TFLOP/s on H100, FlashAttention-3 paper); shorter calls and FA3 scale it (attention_rate.h).
  double attention = 0.339;
  double hbm = 0.80;               // memory-bound kernels: fraction of HBM bandwidth
  double link = 0.80;              // collectives: fraction of nominal per-direction link bandwidth
  double overlap = 0.90;           // fraction of a compute window that can hide communication
  double kernel_latency_us = 4.0;  // fixed cost per kernel (launch gap, ramp-up and tail)
};

// Public specification of one accelerator type (dense, no sparsity).
struct DeviceSpec {
  std::string type;             // "H100", "GB200", "cpu", ...
  DeviceKind kind = DeviceKind::kGpu;
  double peak_tflops = 0;       // dense BF16 TFLOP/s per device
  double hbm_gib = 0;           // memory per device, GiB
  double hbm_tbps = 0;          // memory bandwidth, TB/s
  double nvlink_gbps = 0;       // NVLink per GPU, GB/s, both directions together (vendor convention)
  int64_t gpus_per_node = 8;
  int64_t gpus_per_domain = 8;  // GPUs in one NVLink domain
  EfficiencyModel eff;          // defaults for this device type
  double peak_fp8_tflops = 0;   // dense FP8 TFLOP/s per device; 0 = no FP8 tensor cores
  // Streaming multiprocessors per device (NVIDIA's architecture whitepapers and blogs, cluster.cpp); the
  // layout's parallel.comm_sms takes some of them from the compute kernels. 0 = not given (CPU).
  int64_t sms = 0;
};

// Built-in device types; `find_device` returns null for an unknown name.
const std::vector<DeviceSpec>& device_presets();
const DeviceSpec* find_device(const std::string& type);

// What `moetrain doctor --write-cluster` measured on a CPU for one matmul precision of the trainer
// (train.precision; the layout's precision.params): the cluster file's [cpu] section. 0 = not measured.
struct CpuRates {
  double peak_gflops = 0;  // fp32: the FMA peak; bf16: the unit bf16 products run on (machine_peak.h)
  double gemm_gflops = 0;  // the best 2048^3 product (moetrain bench's reference)
  // The model-shaped products (forward and both gradients of linear layers and of the grouped experts):
  // time = FLOPs / (gemm_gflops x gemm_efficiency x K / (K + gemm_k0)), both fitted to those products.
  double gemm_efficiency = 0;
  double gemm_k0 = 0;  // reduction steps
  // The attention kernel train.attention_kernel = auto runs at this precision: the planner's attention
  // FLOPs of forward + backward (3.5 x 4 H Dh keys per token) over the kernel's forward + backward time.
  double attention_gflops = 0;
  double delta_gflops = 0;  // the chunked gated-delta kernel, the same convention (0 = not measured)
  // The routed experts' grouped kernel (one-thread row tiles of small products): its measured time over what
  // the products' fitted rate predicts for the same products (0 = not measured: 1).
  double experts_factor = 0;
  bool measured() const { return gemm_gflops > 0; }
};

struct CpuFigures {
  int64_t threads = 0;  // threads the figures were measured on (the trainer's train.threads)
  CpuRates fp32, bf16;
  bool measured() const { return fp32.measured() || bf16.measured(); }
  const CpuRates& rates(bool bf16_step) const { return bf16_step ? bf16 : fp32; }
};

struct ClusterConfig {
  std::string source;           // file it came from
  std::string name;             // [cluster] name
  DeviceSpec device;            // [gpu] type, then per-key overrides
  // Topology.
  int64_t gpus_per_rack = 8;    // unit that is allocated, spared and covered by the SLA
  int64_t racks = 1;            // racks owned
  int64_t spare_racks = 0;      // racks held back (not in the job) to replace failed ones
  int64_t sla_min_gpus_up = 0;  // SLA: at least this many GPUs up per rack (0 = all)
  double scaleout_gbps = 50.0;  // per GPU, one direction, GB/s (400 Gb/s NIC = 50)
  double host_link_gbps = 55.0; // per GPU to host memory (PCIe 5 x16), GB/s
  // Offload tiers per node (memory.offload = "params"); defaults: a DGX H100 (2 TiB DDR5 on two
  // 8-channel sockets, 8 x 3.84 TB NVMe). NVMe's figure is the sustained write of the array, the slower
  // direction; the optimizer at the store runs at the host memory bandwidth.
  double host_memory_gib = 2048;  // host memory per node usable for offloaded state, GiB
  double host_memory_gbps = 500;  // host memory bandwidth per node (the CPU optimizer's), GB/s
  double nvme_tib = 30;           // NVMe capacity per node, TiB
  double nvme_gbps = 25;          // NVMe bandwidth per node, GB/s
  // Reliability.
  double gpu_mtbf_hours = 50000;  // mean time between job-interrupting failures, per GPU (all causes)
  double gpu_repair_hours = 72;   // a node taken out by a hardware failure is back after this long (repair or replacement)
  double rack_mtbf_hours = 0;     // whole-rack outages (power, cooling, NVLink switch); 0 = none
  double rack_repair_hours = 24;
  double restart_minutes = 10;    // detect, reschedule, initialise (checkpoint load is added)
  Shortage on_shortage = Shortage::kShrink;  // no spare free: wait for a repair, or drop data-parallel replicas
  // Relative weights of the root causes of interruptions, aligned with
  // failure_causes() (default: the Llama 3 counts); only their shares matter.
  std::vector<double> failure_cause_weights = default_cause_weights();
  static std::vector<double> default_cause_weights() {
    std::vector<double> w;
    for (const FailureCause& f : failure_causes()) w.push_back(f.llama3_count);
    return w;
  }
  double node_share() const { return node_taking_share(failure_cause_weights); }
  // Checkpoint storage, aggregate over the cluster.
  double storage_write_gbps = 500;
  double storage_read_gbps = 1000;
  // Cost.
  double gpu_hour_usd = 0;        // 0 = cost not shown
  EfficiencyModel eff;
  CpuFigures cpu;  // [cpu]: measured CPU rates (gpu.type = "cpu" only)

  int64_t total_gpus() const { return racks * gpus_per_rack; }
  // GPUs per rack the job may count on: the SLA minimum when one is set.
  int64_t usable_gpus_per_rack() const { return sla_min_gpus_up > 0 ? sla_min_gpus_up : gpus_per_rack; }
  int64_t job_racks() const { return racks - spare_racks; }
  int64_t usable_gpus() const { return job_racks() * usable_gpus_per_rack(); }
};

// Parses a cluster file. `[gpu] type` picks the preset whose figures are the
// defaults; any figure given in the file overrides it. Overrides are
// "section.key=value".
// Declares every key of a cluster file, bound to `c`.
void declare_keys(mt::ConfigSchema& s, ClusterConfig& c);

Result<ClusterConfig> parse_cluster(const std::string& text, const std::string& source,
                                    const std::vector<std::string>& overrides = {});
Result<ClusterConfig> load_cluster(const std::string& path, const std::vector<std::string>& overrides = {});

// One CPU in one rack: the cluster a single `moetrain train` process runs on
// (the planner's figures for it are the trainer's allocation).
ClusterConfig one_cpu_cluster(const std::string& source);

}  // namespace mt::plan
