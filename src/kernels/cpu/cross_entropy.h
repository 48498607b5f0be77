// cross_entropy.h — softmax cross-entropy on one chunk of logits, fused with
// its gradient so the caller never holds B*T*V floats (the head is applied
// chunk by chunk: logits = h W^T, this kernel, then dh and dW from dlogits).
// logits (R, V) is overwritten with dlogits = (softmax - onehot) * grad_scale.
// targets < 0 are ignored (zero loss, zero gradient). losses (R) written.
#pragma once
#include <cstdint>

#include "kernels/cpu/operand.h"

namespace mt {
// log sum_v exp(row[v]), with max subtraction (vectorised).
float row_logsumexp(const float* row, int64_t V);

void cross_entropy_forward_backward(float* losses, float* logits, const int32_t* targets, int64_t R,
                                    int64_t V, float grad_scale);
// The same, with dlogits also written in operand form f (operand.h) into
// `dlogits`, each row rounded while it is in cache, for the head's backward
// products to read as they are (logits is left holding the fp32 values).
void cross_entropy_forward_backward(float* losses, float* logits, void* dlogits, OperandForm f, const int32_t* targets,
                                    int64_t R, int64_t V, float grad_scale);
// Forward only (evaluation): losses (R) written, logits left unchanged.
void cross_entropy_forward(float* losses, const float* logits, const int32_t* targets, int64_t R,
                           int64_t V);
}  // namespace mt
