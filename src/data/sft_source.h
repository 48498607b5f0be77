// sft_source.h — supervised fine-tuning examples packed into training rows:
// a TokenSource whose rows hold whole examples end to end, each a prompt
// (input only: its ids carry the no-loss bit, core/token_flags.h) and a
// completion ending in the end-of-document id (targets). The separator ends
// every example and opens every row (flagged), so each example follows a
// separator as pretraining documents and `eval` prompts do, and document
// masking keeps each example's attention to itself ("packed without
// attention across examples", as TRL's padding-free packing and
// Megatron-LM's SFT do); a row's tail that no example fills is padding:
// separators flagged no-loss.
//
// Order: epoch e visits the examples in a Philox permutation of (seed, e);
// rows fill greedily in that order (an example that does not fit in what is
// left of a row starts the next). An example longer than a row keeps its
// first seq_len tokens (truncated at the right, as TRL's max_length
// does) and is counted. Row i is a pure function of (examples, options, i),
// so a resumed run reads the rows the uninterrupted one would.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/token_source.h"

namespace mt {

// An example: spans in order, each read as input and, if `trained`, also
// target (a prompt then its completion; a conversation's turns). The source
// appends the separator, trained: the model learns to end.
struct SftSpan {
  std::vector<int32_t> ids;
  bool trained = false;
};
struct SftExample {
  std::vector<SftSpan> spans;
};

struct SftSourceOptions {
  int64_t seq_len = 0;  // rows hold seq_len + 1 tokens (inputs [0, seq_len), targets [1, seq_len])
  int64_t epochs = 1;
  uint64_t seed = 0;
  int32_t separator = -1;  // the end-of-document id (ends every example)
  int64_t vocab_size = 0;  // ids are checked against it
  std::string name;        // the file the examples came from, for describe()
};

struct SftPackStats {
  int64_t examples = 0, rows_per_epoch = 0, row_tokens = 0, truncated = 0;
  int64_t tokens = 0, loss_tokens = 0;  // per epoch, separators included
  double fill() const;                  // share of row tokens that are examples, not padding
};

class SftSource final : public TokenSource {
 public:
  // Errors: no examples, an id outside the vocabulary (naming the example),
  // an example with nothing to train on.
  static Result<std::unique_ptr<SftSource>> open(std::vector<SftExample> train, std::vector<SftExample> held_out,
                                                 const SftSourceOptions& opt);
  using TokenSource::sequence;
  // `ahead` ids past the row (MTP) are flagged padding.
  void sequence(int64_t index, int64_t seq_len, int64_t ahead, int32_t* out) const override;
  bool eval_sequence(int64_t index, int64_t seq_len, int32_t* out) const override;
  int64_t vocab_size() const override { return opt_.vocab_size; }
  int32_t document_separator() const override { return opt_.separator; }
  int64_t capacity() const override { return int64_t(rows_.size()); }
  std::string describe() const override;
  const SftPackStats& stats() const { return stats_; }

 private:
  struct Piece {
    int32_t example;  // index into the example list
    int32_t length;   // tokens of it in the row (all, or a truncated head)
  };
  using Row = std::vector<Piece>;
  static std::vector<int32_t> flatten(const SftExample& e, int32_t separator);
  static std::vector<Row> pack(const std::vector<std::vector<int32_t>>& ex, int64_t row_tokens, int64_t epochs,
                               uint64_t seed, int64_t& truncated);
  void write_row(const Row& row, const std::vector<std::vector<int32_t>>& ex, int64_t seq_len, int64_t ahead,
                 int32_t* out) const;

  SftSourceOptions opt_;
  std::vector<std::vector<int32_t>> train_, held_;  // flattened examples: flagged prompts, separator last
  std::vector<Row> rows_, eval_rows_;
  SftPackStats stats_;
};

}  // namespace mt
