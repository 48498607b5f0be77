// sampling.h — next-token sampling from logits: temperature, then top-k, then
// top-p (nucleus), the order Hugging Face's generate() applies them. The
// random draw is Philox at (seed, stream = sequence index, counter = position),
// so a sequence's tokens depend only on the seed and its own text: the same
// whatever the batch, the thread count or how the prompt was chunked.
// Legend: V vocab.
#pragma once
#include <cstdint>
#include <vector>

namespace mt {

struct SamplingOptions {
  double temperature = 1.0;  // <= 0: greedy (argmax, ties to the lower id)
  int64_t top_k = 0;         // keep the k most likely tokens; 0 = all
  double top_p = 1.0;        // keep the smallest set whose probability reaches top_p; 1 = all
  uint64_t seed = 1234;
};

// Picks a token from logits (V). `scratch` is reused between calls.
int32_t sample_token(const float* logits, int64_t V, const SamplingOptions& o, uint64_t stream, uint64_t counter,
                     std::vector<std::pair<float, int32_t>>& scratch);

}  // namespace mt
