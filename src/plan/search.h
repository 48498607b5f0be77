// search.h — layout sweeps: every combination of TP, PP, EP, ZeRO stage and
// recomputation for a GPU count, with its memory and MFU (for "MFU vs
// layout"), and the largest model of an architecture family that fits one
// NVLink domain with the best layout, and what binds one size up.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "plan/cluster.h"
#include "plan/layout.h"
#include "plan/memory.h"
#include "plan/model_stats.h"
#include "plan/perf.h"

namespace mt::plan {

struct LayoutOption {
  std::string label;  // "tp8 pp2 ep4 zero1 full"
  Parallel par;
  MemoryBreakdown mem;
  StepTime time;
};

std::string layout_label(const LayoutConfig& l);

// Layouts over `gpus` GPUs derived from `base` (its batch, schedule, context parallelism, precision
// and overlap settings kept; TP, PP, EP, ZeRO stage and recomputation swept).
// Only layouts that fit memory, best MFU first.
std::vector<LayoutOption> sweep_layouts(const ModelConfig& m, const ModelStats& s, int64_t seq_len,
                                        const ClusterConfig& c, const LayoutConfig& base, int64_t gpus);

enum class FamilyAxis { kLayers, kExperts };
std::string to_string(FamilyAxis a);

// The largest member that fits, with one family of layouts.
struct LargestFit {
  bool found = false;
  ModelConfig model;              // the largest member that fits
  int64_t total_params = 0, active_params = 0;
  LayoutOption best;              // its best-MFU layout among those that fit
  // One size up: the layout needing the least memory, and the item that binds.
  int64_t next_params = 0;
  MemoryBreakdown next_mem;
  std::string next_label;
  std::string binding;            // e.g. "optimizer state (41% of 152 GiB; capacity 141 GiB)"
  bool hit_cap = false;           // no limit found below the search cap
};

// What both answers assume, stated with them (and checked against the layouts found by the tests).
struct SearchAssumptions {
  int64_t seq_len = 0;            // tokens per sequence
  int64_t micro_batch = 1;        // sequences per micro-batch (the layout's)
  int64_t microbatches_per_stage = 4;  // global batch = dp x micro_batch x this x pp (enough to fill a pipeline)
  std::vector<Recompute> recompute;    // recomputation choices tried; each answer takes the best that fits
  Precision params = Precision::kBf16; // weights (bf16: with an fp32 master copy)
  Precision grads = Precision::kFp32;
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  Precision moments = Precision::kFp32;  // optimizer moments
  double state_bytes_per_param = 0;    // weights + gradients + master + optimizer state, before sharding
  double capacity_bytes = 0;           // HBM per GPU: a layout fits when its fullest stage needs no more
  double allocator_overhead = 0;       // fraction of activations and buffers (layout.h), inside the capacity
  std::string layouts_best;            // the layouts searched for the best answer
  std::string layouts_fsdp;            // ... and for the plain-FSDP answer
};

struct LargestModel : LargestFit {   // the answer with the best layout found
  FamilyAxis axis = FamilyAxis::kLayers;
  int64_t gpus = 0;               // GPUs of one NVLink domain the job may count on
  LargestFit fsdp;                // the answer with plain FSDP: ZeRO-3 data parallelism only (tp = pp = ep = 1)
  // The answer with weight streaming from host memory (memory.offload = "params", every layout): bounded by
  // the host memory of the domain's nodes and by what stays on the GPU (activations, layer buffers).
  LargestFit streaming;
  SearchAssumptions assumptions;
};

// The family varies one knob of `base`: depth (n_layers, in multiples of the
// layer pattern) or the number of routed experts (multiples of 8).
LargestModel largest_model_per_domain(const ModelConfig& base, int64_t seq_len, const ClusterConfig& c,
                                      const LayoutConfig& base_layout, FamilyAxis axis);

}  // namespace mt::plan
