// episodes.h — multi-turn generation with tool calls (agentic episodes): the
// KV-cache decoder samples each sequence one token at a time; when a
// sequence's text ends with a complete call ("<tool>REQUEST</tool>",
// train/environment.h) its environment answers, the answer
// ("<result>ANSWER</result>", tokenized) is appended to the sequence and fed
// to the decoder, and sampling continues after it. An episode ends at the
// stop token, at max_new_tokens (model and environment tokens together), or
// at a call past max_calls (the sequence stops there). The environment's
// tokens carry the no-loss bit (core/token_flags.h): the policy never trains
// on what it did not write.
//
// Deterministic like generate(): sequence i samples on streams[i] with the
// counter at its position, so an episode depends only on its context, its
// environment, the model and the options.
#pragma once
#include <cstdint>
#include <vector>

#include "model/decoder.h"
#include "model/sampling.h"
#include "train/environment.h"
#include "train/gen_tasks.h"
#include "train/inference_model.h"
#include "train/verifier.h"

namespace mt {

struct EpisodeOptions {
  int64_t max_new_tokens = 64;
  int32_t stop_token = -1;
  int64_t max_calls = 4;
  SamplingOptions sampling;
};

struct Episode {
  std::vector<int32_t> tokens;  // the model's ids, and the environment's flagged no-loss
  int64_t calls = 0;            // calls the environment answered
};

// contexts[i] (non-empty) with envs[i] (null: plain generation) on streams[i];
// the decoder's batch must hold them all and its max_len the longest context
// + max_new_tokens (checked).
std::vector<Episode> run_episodes(Decoder& dec, const TextCodec& codec,
                                  const std::vector<const std::vector<int32_t>*>& contexts,
                                  const std::vector<Environment*>& envs, const std::vector<uint64_t>& streams,
                                  const EpisodeOptions& o);

// An episode's completion text (without the stop token) judged: the item's
// check on the final answer (after the last tool result), and the
// environment's goal replayed over the calls the text made; correct needs
// both. What RL rewards and `eval --tasks` scores.
struct EpisodeVerdict {
  Verdict answer;
  bool correct = false;
  int64_t calls = 0;
};
EpisodeVerdict judge_episode(const GenItem& item, std::string_view text);

}  // namespace mt
