// attention_softmax.h — the causal/window/document band and the masked row
// softmax that both attention kernels (attention.h, attention_matmul.h) apply
// to a block of scores. Row r of a block is query i0 + r; column c is key j0 + c.
// Query i sees keys [key_begin(i), i]: the window's start or its document's
// first token, whichever is later. Both starts never decrease with i, so a
// block's band starts at its first row's begin and keys before it (earlier
// documents, keys out of the window) are never computed.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mt {

// First key query i sees (window <= 0: global causal).
inline int64_t attention_key_begin(int64_t i, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
}
// The same with document masking: doc_start is where query i's document begins.
inline int64_t attention_key_begin(int64_t i, int64_t window, int64_t doc_start) {
  return std::max(attention_key_begin(i, window), doc_start);
}

// Turns raw scores (rows x nk, leading dim nk) into probabilities. With
// lse == nullptr: computes the row max and sum (forward) and writes lse_out;
// otherwise uses the saved lse (backward, P = exp(scale * s - lse)). Entries
// outside a row's band become exactly 0. doc_start: the rows' document starts
// (row r's at doc_start[r]), or null without document masking. Serial.
void attention_softmax_rows(float* S, int64_t rows, int64_t nk, int64_t i0, int64_t j0, int64_t window,
                            const int32_t* doc_start, float scale, const float* lse, float* lse_out);

}  // namespace mt
