// plain_source.h — a TokenSource over one plain, unbucketed token sequence
// (data.path without data.dataset): text files through the byte tokenizer, a
// flat little-endian uint32 token file, or a deterministic synthetic
// sequence. (Named "plain", not "stream": in moetrain "stream" means weight
// streaming, [stream] and docs/streaming.md, only.) Sequence i starts at window w(i) of the
// training part, where w permutes window indices with a seeded bijection, so
// consecutive steps see unrelated text; after one pass, the next pass uses a
// new permutation (the data pipeline replaces this with exact mixtures).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/token_source.h"

namespace mt {

struct PlainSourceOptions {
  std::string path;                     // file or directory; empty = synthetic
  std::string format = "text";          // "text" (byte tokenizer) | "tokens" (flat little-endian uint32)
  std::vector<std::string> extensions;  // directory filter; empty = all files
  int64_t max_bytes = 64 << 20;         // cap on bytes read; 0 = no cap
  double eval_frac = 0.0;               // tail of the stream held out for evaluation
  // Set by the trainer from the model and train keys, not read from a file:
  int64_t vocab_size = 0;               // model vocab, for range checks
  uint64_t seed = 0;
  int64_t seq_len = 0;                  // window stride used by the permutation
};

class ConfigSchema;
// Declares path, format, extensions, max_bytes, eval_frac under `table`.
void declare_keys(ConfigSchema& s, PlainSourceOptions& o, const std::string& table);

class PlainSource final : public TokenSource {
 public:
  static Result<std::unique_ptr<PlainSource>> open(const PlainSourceOptions& opt);
  using TokenSource::sequence;
  // The last window's `ahead` ids wrap to the start of the training part.
  void sequence(int64_t index, int64_t seq_len, int64_t ahead, int32_t* out) const override;
  bool eval_sequence(int64_t index, int64_t seq_len, int32_t* out) const override;
  int64_t vocab_size() const override { return vocab_; }
  std::string describe() const override { return desc_; }
  int64_t train_tokens() const { return train_end_; }

 private:
  std::vector<int32_t> tokens_;
  int64_t train_end_ = 0;
  int64_t vocab_ = 0;
  uint64_t seed_ = 0;
  std::string desc_;
};

}  // namespace mt
