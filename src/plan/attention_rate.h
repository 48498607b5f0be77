// attention_rate.h — sustained fused-attention throughput as a function of the
// kernel and of the length of the attention problem one kernel call solves
// (its key span). Short problems leave the tensor cores idle between tiles
// (the causal mask's partial tiles, the softmax and the launch tail weigh
// more), so a 512-token call runs at about half the rate of a 16K one. The
// curves are the FlashAttention-3 paper's forward, causal, head-dim-128 bars
// on H100 (docs/reference-tables/attention.md); a device's `attention`
// efficiency is FlashAttention-2's long-sequence plateau on it, and the
// curve scales it. Used by plan/perf.cpp for every flash-attention kernel.
#pragma once
#include <string>

namespace mt::plan {

// The fused-attention kernel a layout runs (memory.attention_kernel).
enum class AttentionKernel { kFa2, kFa3 };

std::string to_string(AttentionKernel k);

// Whether a kernel call applies the causal mask (a diagonal block) or attends to every key (the
// off-diagonal blocks of ring attention); the unmasked call keeps its tensor cores busier.
enum class AttentionMask { kCausal, kFull };

// Throughput relative to FlashAttention-2's causal plateau (its rate at 16K keys) for a problem of `span`
// keys: interpolated linearly in log2(span) between the table's lengths (512 to 16K), held at the ends.
// FA2 causal: 0.57 at 512, 0.95 at 4K, 1 at 16K; unmasked 1.10 from 4K; FA3 about 1.8x FA2 (Hopper only).
double attention_rate_factor(AttentionKernel k, double span, AttentionMask mask = AttentionMask::kCausal);

// The mean rate factor of a causal layer's attention under ring context parallelism over `cp` ranks: with
// load-balanced chunks each of a rank's cp steps carries the same work, one diagonal step under the mask
// and cp - 1 unmasked ones, each a call over seq / cp keys; times add, so the rates combine harmonically.
double ring_attention_rate_factor(AttentionKernel k, double span, double cp);

// The key span of one kernel call: the sequence over context-parallel ranks (ring attention runs one
// call per K/V block of seq / cp keys), cut to the window on sliding-window layers and to the document
// on document-masked sequences (a variable-length kernel solves each document on its own).
double attention_span(double seq_len, double cp, double window, double document_tokens);

}  // namespace mt::plan
