// eval_tasks.h — multiple-choice tasks from a local JSONL file, scored the way
// lm-evaluation-harness scores `multiple_choice` tasks:
//   one line = {"context": "...", "choices": ["...", ...], "answer": i}
//   (optional "id"); a choice is the literal continuation of the context.
// Each (context, choice) pair is tokenized as lm-eval's _encode_pair does
// (trailing whitespace of the context move to the continuation; the continuation
// ids are encode(context + choice) after the ids of encode(context)), the
// sequence is prefixed by the end-of-document id (lm-eval's add_bos_token
// with the exported tokenizer's bos), and scored by the sum of its
// continuation's log-probabilities. acc: argmax of that sum; acc_norm:
// argmax of the sum divided by the choice's length in characters (Unicode
// code points: lm-eval's len(choice); bytes for ASCII text).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/decoder.h"
#include "train/inference_model.h"

namespace mt {

struct McDoc {
  std::string context;
  std::vector<std::string> choices;
  int64_t answer = 0;
  int64_t line = 0;  // 1-based, in the task file
};

// Errors name FILE:LINE and the field that is missing or wrong.
Result<std::vector<McDoc>> read_mc_tasks(const std::string& path);
// The same for a file's bytes already read (`path` names it in messages).
Result<std::vector<McDoc>> parse_mc_tasks(const std::string& path, const std::string& text);

// lm-eval's standard error of an accuracy p over n documents (the sample
// standard error of the mean of n 0/1 scores): sqrt(p (1 - p) / (n - 1)).
double accuracy_stderr(double p, int64_t n);

// A task's name: its file name without the extension ("arc.jsonl" -> "arc").
std::string mc_task_name(const std::string& path);

struct McResult {
  std::string task;              // file stem
  int64_t docs = 0;
  double acc = 0, acc_norm = 0;  // fractions in [0, 1]
  double acc_stderr = 0, acc_norm_stderr = 0;  // sample standard error of the mean (lm-eval's)
  std::vector<std::vector<double>> logprobs;   // per doc, per choice
};

// Token sequences (bos, context, continuation) and continuation starts of
// every (doc, choice) pair, in doc-major order.
void encode_mc(const TextCodec& codec, const std::vector<McDoc>& docs, std::vector<std::vector<int32_t>>& seqs,
               std::vector<int64_t>& first);

// `progress(done, total)` over the (context, choice) pairs, if given.
McResult score_mc(Decoder& dec, const TextCodec& codec, const std::string& task, const std::vector<McDoc>& docs,
                  const std::function<void(int64_t done, int64_t total)>& progress = {});

nlohmann::json to_json(const McResult& r);

}  // namespace mt
