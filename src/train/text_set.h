// text_set.h — held-out loss on a named text set that is not a bucket of the
// training data (RegMix's "target domain": a validation corpus the mixture
// should do well on). The set is a JSONL file of {"text": ...} records or a
// plain-text file (one document), read with the dataset build's ingest
// (normalised the same way), tokenized with the run's tokenizer, each
// document followed by the end-of-document id, and the token sequence cut into
// windows of seq_len + 1 tokens that overlap by one: every token after the
// first is predicted exactly once (the last window ends at the end of the sequence
// and counts only what the one before it did not). Windows are scored in
// batches of the training batch size with the training forward (as the
// held-out pass of buckets, so its figures compare), a short last batch
// filled with copies of the first window that are not counted.
// `moetrain eval --text-set FILE` reports it; a mixture search targets it
// with "text:NAME".
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt {

class TextCodec;

struct TextSet {
  std::string name;  // the file name without its extensions ("wiki.jsonl.gz" -> "wiki")
  std::string path;
  int64_t documents = 0;
  std::vector<int32_t> tokens;  // token ids, each document followed by the end-of-document id
};

// Reads and tokenizes `path`; errors name the file (and line, for a bad
// JSONL record). A set shorter than one window is refused: it cannot be
// scored at this sequence length.
Result<TextSet> read_text_set(const std::string& path, const TextCodec& codec, int64_t seq_len);

// The name a set file is known by: its file name up to the first dot.
std::string text_set_name(const std::string& path);

// Window w covers tokens[start, start + seq_len + 1) and counts its
// predictions from index first_counted on (0 but for the last window).
struct SetWindow {
  int64_t start = 0;
  int64_t first_counted = 0;
};
std::vector<SetWindow> set_windows(int64_t n_tokens, int64_t seq_len);

struct SetScore {
  double loss = 0;  // nats per predicted token
  int64_t tokens = 0, bytes = 0, windows = 0;
  double bits_per_byte() const;  // loss x tokens / (bytes x ln 2); NaN with no bytes
};

// Scores every window in batches of `batch`: `token_losses(tokens)` runs the
// forward on batch rows of seq_len + 1 tokens and returns the loss of every
// predicted token (batch x seq_len, row-major), as Transformer::token_losses.
// The bytes counted are those of the predicted tokens, decoded.
SetScore score_text_set(const TextSet& set, int64_t batch, int64_t seq_len, const TextCodec& codec,
                        const std::function<const std::vector<float>&(const int32_t* tokens)>& token_losses,
                        const std::function<void(int64_t done, int64_t total)>& progress = nullptr);

}  // namespace mt
