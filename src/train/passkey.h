// passkey.h — the passkey retrieval task (Mohtashami & Jaggi 2023, "Landmark
// Attention", section 4.2; the "needle in a haystack" of long-context
// evaluation): a random D-digit key is hidden at a chosen depth in filler
// text, and the model must repeat it when asked at the end.
//
//   prompt = filler (depth x F tokens) + needle + filler (the rest of F) + question
//   needle   = "The pass key is 48213. Remember it. 48213 is the pass key."
//   question = "What is the pass key? The pass key is"     answer = " 48213"
//
// parts joined by single spaces; F = L - the needle's and question's tokens,
// for the prompt length L asked for. The filler is whole sentences of real
// corpus text (data/filler_sentences.h), counted in tokens of the model's
// tokenizer as they join the prompt, so a prompt's length is L within half a
// sentence either way and the needle sits at depth x F within a sentence.
// `depth` is the fraction of the filler before the needle: 0 opens the
// prompt with the needle, 1 puts it right before the question.
//
// `repeat` = K > 0 makes an item's filler K sentences drawn for it, cycled
// (the original task's filler is five fixed sentences repeated): training
// documents then teach copying from context on most of their tokens, not on
// the key's few — what a small model needs to form the induction heads that
// retrieval runs on. Evaluation items keep non-repeating filler (0).
//
// Everything random is Philox (core/rng.h) at (seed, stream, counter): item
// i's key is drawn from stream 2i, its sentences from stream 2i+1 (the split
// in the stream's top bit), so the items are a pure function of the options,
// the filler pool and the tokenizer: the same arguments give the same bytes. Items cycle through the
// depths, and through the lengths every len(depths) items.
//
// Splits: a key is held-out or train by a fixed hash of the key alone (one
// key in five is held-out), never by the seed, so every train file and every
// held-out file made with any seeds share no key — and so no item. Train
// items become training documents (prompt + answer + "\n"), held-out items
// evaluation files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/filler_sentences.h"
#include "train/gen_tasks.h"
#include "train/inference_model.h"

namespace mt {

enum class TaskSplit { kTrain, kHeldOut };
const char* split_name(TaskSplit s);  // "train", "held-out"

struct PasskeyOptions {
  int64_t n = 100;  // items
  uint64_t seed = 1;
  std::vector<int64_t> tokens;                               // prompt lengths asked for, in tokens (at least one)
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};  // fractions of the filler before the needle
  int64_t digits = 5;                                        // the key's decimal digits (no leading zero), 2..9
  int64_t repeat = 0;                                        // > 0: the filler cycles through this many sentences
  TaskSplit split = TaskSplit::kHeldOut;
};

// Whether a key belongs to the held-out split (else to train).
bool passkey_is_held_out(int64_t key);

std::string passkey_needle(int64_t key);
inline constexpr const char* kPasskeyQuestion = "What is the pass key? The pass key is";

// The items, in order. Errors name the option at fault (a length too short
// for the needle and question, a depth outside [0, 1], ...).
Result<std::vector<GenItem>> make_passkey_items(const PasskeyOptions& o, const FillerSentences& filler,
                                                const TextCodec& codec);

// A training document: the prompt and its answer, ending in a newline.
inline std::string passkey_document(const GenItem& it) { return it.prompt + it.answer + "\n"; }

}  // namespace mt
