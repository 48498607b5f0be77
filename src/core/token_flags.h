// token_flags.h — a training row's ids may carry one flag beside the id: the
// no-loss bit, set on a token that is read as input like any other but is
// not a target (the loss skips predicting it). Supervised fine-tuning sets it
// on prompt tokens, post-training on tokens an environment wrote; pretraining
// data never has it. Ids stay below 2^30 (vocabularies are far smaller), so
// the bit cannot collide with an id, and a row stays one int32 buffer
// through every data path (sources, the trainer's batch, context-parallel
// slices) instead of growing a parallel mask.
#pragma once
#include <cstdint>

namespace mt {

inline constexpr int32_t kNoLossBit = int32_t(1) << 30;

// The id a (possibly flagged) token stands for.
inline int32_t token_id(int32_t t) { return t & ~kNoLossBit; }
// The token as a target: -1 (ignored by the loss) when flagged.
inline int32_t target_of(int32_t t) { return (t & kNoLossBit) != 0 ? -1 : t; }
inline int32_t without_loss(int32_t id) { return id | kNoLossBit; }

}  // namespace mt
