// context_loss.h — does a model use its context, measured two ways on the
// held-out windows of `moetrain eval --positions`:
//
// PositionLoss: the loss of every token by the tokens of context before it,
// in bins that double (1, 2-3, 4-7, ...). Cheap and per token, but each bin
// scores other tokens: in a few windows of code the content of the positions
// differs as much as the context does (a window's first tokens may all be a
// docstring), so two bins can differ by more than the context's effect.
//
// ContextLengthLoss: the *same* tokens scored with more and more context —
// the last `scored` tokens of each window, predicted from the last L tokens
// before them for L = T, T/2, ... down to 2 x scored — as long-context
// papers report perplexity against the evaluation context length (Press et
// al. 2021, ALiBi, section 4; Peng et al. 2023, YaRN, section 4.3). Only
// the context changes between two lengths, so the paired per-window
// differences give the gain of the longer context with a standard error a
// few windows already make small.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "model/transformer.h"

namespace mt {

struct PositionLoss {
  std::vector<double> sum;
  std::vector<int64_t> n;
  void add(const PositionLoss& o);
  // losses (B, T) of one forward; doc_start (B, T) with document masking (a
  // token's position counts from its document's start), else null.
  void add(const std::vector<float>& losses, int64_t B, int64_t T, const int32_t* doc_start);
  // [{from, to, tokens, loss}] per bin of positions (1-based: tokens of context).
  nlohmann::json bins() const;
};

// The per-window figures of one set of windows (a bucket's, or all of them).
struct ContextLengthLoss {
  int64_t scored = 0;                     // tokens scored per window
  std::vector<int64_t> lengths;           // context lengths, longest first
  std::vector<std::vector<double>> loss;  // [length][window]: mean loss of the window's scored tokens
  void start(int64_t scored_per_window, const std::vector<int64_t>& context_lengths);  // no windows yet
  void add(const ContextLengthLoss& o);   // another set's windows (same lengths)
  // {scored_per_window, windows, lengths: [{context, loss, se, gain, gain_se}]},
  // longest context first; gain = the loss at the next shorter length minus
  // this one (positive: the extra context helped), with the standard error
  // of the per-window paired differences.
  nlohmann::json table() const;
};

// Scores windows at the shorter lengths: one model per length, shared by
// every bucket's accumulator.
class ContextLengthScorer {
 public:
  // The lengths T, T/2, ... while >= min_len, each scoring the windows' last
  // min_len / 2 tokens. The models are the evaluation's: same config, batch,
  // attention kernel and document separator (-1: none).
  ContextLengthScorer(const ModelConfig& cfg, int64_t batch, int64_t seq_len, int64_t min_len, AttentionKernel kernel,
                      int32_t separator);
  // Whether (seq_len, min_len) give two lengths at least (else nothing to compare).
  static bool applies(int64_t seq_len, int64_t min_len);
  const std::vector<int64_t>& lengths() const { return lengths_; }
  // windows: `batch` rows of seq_len + 1 ids; full_losses: the token losses
  // of the caller's forward over them at seq_len (the longest length's
  // figures, not computed again).
  void score(const std::vector<float>& full_losses, const float* params, const float* router_bias,
             const int32_t* windows, ContextLengthLoss& into);

 private:
  int64_t B_, T_, scored_;
  std::vector<int64_t> lengths_;                      // longest first
  std::vector<std::unique_ptr<Transformer>> models_;  // models_[i] for lengths_[i + 1]
  std::vector<int32_t> rows_;
};

}  // namespace mt
