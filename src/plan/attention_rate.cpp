// attention_rate.cpp — see attention_rate.h. The table: Shah et al. 2024,
// "FlashAttention-3: Fast and Accurate Attention with Asynchrony and
// Low-precision" (arXiv 2407.08608), Figure 5, attention forward speed, causal
// mask and without, head dim 128, H100 80GB SXM5, BF16, TFLOP/s; reproduced
// with its source in docs/reference-tables/attention.md.
#include "plan/attention_rate.h"

#include <algorithm>
#include <cmath>

namespace mt::plan {
namespace {

constexpr double kLog2Len[] = {9, 10, 11, 12, 13, 14};     // 512 ... 16K
constexpr double kFa2[] = {191, 260, 298, 319, 333, 335};  // causal
constexpr double kFa3[] = {292, 423, 521, 579, 602, 616};
constexpr double kFa2Full[] = {309, 350, 362, 368, 370, 370};  // no mask (the same figure's other panel)
constexpr double kFa3Full[] = {467, 565, 625, 638, 646, 648};
constexpr int kPoints = 6;

double interpolate(const double* tflops, double span) {
  const double x = std::clamp(std::log2(std::max(span, 1.0)), kLog2Len[0], kLog2Len[kPoints - 1]);
  int i = 0;
  while (i + 2 < kPoints && x > kLog2Len[i + 1]) ++i;
  const double f = (x - kLog2Len[i]) / (kLog2Len[i + 1] - kLog2Len[i]);
  return tflops[i] + f * (tflops[i + 1] - tflops[i]);
}

}  // namespace

std::string to_string(AttentionKernel k) { return k == AttentionKernel::kFa3 ? "fa3" : "fa2"; }

double attention_rate_factor(AttentionKernel k, double span, AttentionMask mask) {
  const bool fa3 = k == AttentionKernel::kFa3, causal = mask == AttentionMask::kCausal;
  const double* t = fa3 ? (causal ? kFa3 : kFa3Full) : (causal ? kFa2 : kFa2Full);
  return interpolate(t, span) / kFa2[kPoints - 1];
}

double ring_attention_rate_factor(AttentionKernel k, double span, double cp) {
  if (cp <= 1) return attention_rate_factor(k, span);
  const double causal = attention_rate_factor(k, span), full = attention_rate_factor(k, span, AttentionMask::kFull);
  return cp / (1.0 / causal + (cp - 1) / full);
}

double attention_span(double seq_len, double cp, double window, double document_tokens) {
  double span = seq_len / std::max(cp, 1.0);
  if (window > 0) span = std::min(span, window);
  if (document_tokens > 0) span = std::min(span, document_tokens);
  return span;
}

}  // namespace mt::plan
