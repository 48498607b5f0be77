// generate.h — batched generation on a Decoder: prefill of every prompt in
// chunks of at most max_rows tokens (ragged, as one batch), then one token per
// unfinished sequence per step. Sampling is sampling.h's (stream = prompt
// index, counter = position), so each output depends only on its prompt,
// the model and the options. Times prefill and decode separately.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/decoder.h"
#include "model/sampling.h"

namespace mt {

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  int32_t stop_token = -1;      // generation of a sequence ends after it emits this id; -1 = none
  SamplingOptions sampling;
  // The random stream of each prompt (sampling.h); empty = its index. RL
  // gives every rollout its global index, so a rollout's tokens do not
  // depend on which rank or batch generated it.
  std::vector<uint64_t> streams;
  // Called after every decode step with the tokens generated so far (all
  // prompts) and the most there can be; none if empty.
  std::function<void(int64_t generated, int64_t most)> progress;
};

struct GenerateResult {
  std::vector<std::vector<int32_t>> tokens;  // generated ids per prompt (stop token included)
  int64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
};

// prompts: ids per prompt (each non-empty); the decoder's batch must hold
// them all and its max_len their length + max_new_tokens (checked).
GenerateResult generate(Decoder& dec, const std::vector<std::vector<int32_t>>& prompts, const GenerateOptions& o);

}  // namespace mt
