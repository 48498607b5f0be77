// gen_tasks.h — generative tasks from a local JSONL file, scored by exact
// match of a greedy continuation (lm-evaluation-harness' generate_until with
// the exact_match metric, without its stop strings):
//   one line = {"id": "...", "family": "passkey", "prompt": "...", "answer": "...",
//               "check": "exact" | "integer" | "list" | "text" (optional),
//               "env": "calculator" | "kv", "state", "goal" (agentic items, optional)}
//   plus the family's metadata (passkey: "depth", "tokens"; docs/long-context.md).
// The prompt is encoded after the end-of-document id (as training documents
// and multiple-choice contexts are); the model then greedily decodes as many
// tokens as the answer has in context (len(encode(prompt + answer)) -
// len(encode(prompt)), lm-eval's _encode_pair), and the decoded text is
// judged by the item's check (train/verifier.h: an optional "check" field,
// else the family's; "exact", byte for byte, for the passkey and any family
// the project does not define). Accuracy comes with lm-eval's standard
// error, and for items with depth / tokens metadata per depth, per prompt
// length and per (length, depth) cell.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/decoder.h"
#include "train/inference_model.h"
#include "train/verifier.h"

namespace mt {

struct GenItem {
  std::string id;               // unique within its file
  std::string family;           // "passkey", ...
  std::string prompt, answer;   // the answer is the literal continuation of the prompt
  std::string split;            // "train" or "held-out" when the file says; "" otherwise
  double depth = std::nan("");  // passkey: fraction of the filler before the needle, [0, 1]
  int64_t tokens = 0;           // passkey: the prompt length asked for (tokens); 0 = none
  int64_t prompt_tokens = 0;    // passkey: the prompt's length as generated, with its tokenizer; 0 = not said
  int64_t needle_token = -1;    // passkey: the needle's first token in the prompt, as generated; -1 = not said
  std::string check;            // the verifier's check (train/verifier.h); "" = the family's default
  // Agentic items (train/environment.h): the environment that answers the
  // model's tool calls ("" = none), its initial state and its goal.
  std::string env, state, goal;
  int64_t line = 0;             // 1-based, in the task file
};

// The check that judges an item's completions: its "check", else its family's.
CheckKind check_of(const GenItem& item);

// Errors name FILE:LINE and the field that is missing or wrong (an unknown
// field too: a misspelt "depht" must not silently lose the breakdown); ids
// must be unique (the message names both lines).
Result<std::vector<GenItem>> read_gen_tasks(const std::string& path);
// The same for a file's bytes already read (`path` names it in messages).
Result<std::vector<GenItem>> parse_gen_tasks(const std::string& path, const std::string& text);

// One JSON line of a task file (what `moetrain tasks make` writes), fields in
// the order the format lists them; metadata only where set.
std::string gen_item_line(const GenItem& item);

// Accuracy of a group of items, with lm-eval's sample standard error.
struct AccCell {
  int64_t docs = 0, hits = 0;
  double acc() const { return docs > 0 ? double(hits) / double(docs) : 0.0; }
  double acc_stderr() const;
};

struct GenResult {
  std::string task;    // file stem
  std::string family;  // the items' family, or "mixed"
  std::string check;   // the items' check (train/verifier.h), or "mixed"
  AccCell all;
  std::vector<std::string> outputs;                       // per item: the decoded continuation
  std::vector<char> correct;                              // per item: the check passed
  std::map<double, AccCell> by_depth;                     // items with a depth
  std::map<int64_t, AccCell> by_tokens;                   // items with a target length
  std::map<std::pair<int64_t, double>, AccCell> by_cell;  // (tokens, depth), items with both
};

// Exact match of `outputs` (one per item) and the breakdowns: the scoring
// without a model.
GenResult tally_gen(const std::string& task, const std::vector<GenItem>& items,
                    const std::vector<std::string>& outputs);

// An agentic item's (one with an environment) budget of new tokens in
// `eval --tasks`: its calls, the environment's answers and its final answer.
constexpr int64_t kDefaultEpisodeTokens = 64;

// Token ids of each prompt (end-of-document id first) and the answer's
// length in tokens in context (at least 1); an agentic item's is the
// episode's budget.
void encode_gen(const TextCodec& codec, const std::vector<GenItem>& items, std::vector<std::vector<int32_t>>& prompts,
                std::vector<int64_t>& answer_tokens, int64_t episode_tokens = kDefaultEpisodeTokens);

// The text `generated` adds after `prompt` (ids without the end-of-document
// id): decode(prompt + generated) past decode(prompt), so a SentencePiece
// word-start piece decodes to its space as it does inside a text.
std::string continuation_text(const TextCodec& codec, const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& generated);

// Greedy decoding of every item on `dec` (its batch and max_len must hold
// them: the longest prompt plus the most answer tokens), in groups of the
// decoder's batch; `progress(done, total)` over items after each group.
// Agentic items run as episodes (train/episodes.h): greedy, tool calls
// answered by their environment, up to episode_tokens new tokens or the
// end-of-document id, judged by judge_episode (answer and goal).
GenResult score_gen(Decoder& dec, const TextCodec& codec, const std::string& task, const std::vector<GenItem>& items,
                    const std::function<void(int64_t done, int64_t total)>& progress = {},
                    int64_t episode_tokens = kDefaultEpisodeTokens);

// {"task", "family", "metric": "exact_match", "docs", "acc", "acc_stderr",
//  "by_depth", "by_tokens", "by_tokens_depth" (lists of {"depth"/"tokens",
//  "docs", "acc", "acc_stderr"}), "items": [{"id", "output", "correct"}]}.
nlohmann::json to_json(const GenResult& r, const std::vector<GenItem>& items);

// The printed summary: one line per task, then (with breakdowns) a table of
// accuracy by depth (rows) and prompt length (columns), "all" on both edges.
std::string format_gen_result(const GenResult& r);

}  // namespace mt
