// sft_data.h — supervised fine-tuning examples from JSONL, tokenized for
// data/sft_source.h. One example per line, in any of three shapes (TRL's
// dataset formats, and the project's task files):
//
//   {"prompt": "...", "completion": "..."}                 prompt-completion
//   {"messages": [{"role": "user", "content": "..."},     conversational
//                 {"role": "assistant", "content": "..."}, ...]}
//   {"id": ..., "family": ..., "prompt": "...", "answer": "..."}   a task item
//
// Loss is on the completion, on every assistant turn, on a task item's
// answer — each followed by the end-of-document id the source appends, so
// the model learns where an answer ends. A task item's answer is trained
// with the newline `tasks make --documents` ends it with, so a model
// fine-tuned on task items stops its answers as one pretrained on their
// documents does.
//
// Conversations are rendered with a plain-text template, since the
// tokenizer's control tokens are reserved for the pipeline:
//   "System: {content}\n" "User: {content}\n" "Assistant:" + " {content}\n"
// where "Assistant:" is prompt and " {content}\n" is trained; spans are
// tokenized one by one (a word never spans two), so what is trained is
// exactly the completion's tokens. Errors name FILE:LINE and the field.
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "data/sft_source.h"
#include "train/inference_model.h"
#include "train/run_config.h"

namespace mt {

Result<std::vector<SftExample>> read_sft_examples(const std::string& path, const TextCodec& codec);
// The same for a file's bytes already read (`path` names it in messages).
Result<std::vector<SftExample>> parse_sft_examples(const std::string& path, const std::string& text,
                                                   const TextCodec& codec);

// data.sft's examples (and data.sft_held_out's) tokenized with
// data.sft_tokenizer and packed into rows of train.seq_len, in the order of
// train.seed: the trainer's source for a fine-tuning run.
Result<std::unique_ptr<SftSource>> open_sft_source(const RunConfig& c);

}  // namespace mt
