// token_source.h — the interface the trainer reads sequences through. The
// sequence at global index i is a pure function of (source, i): it does not
// depend on world size, threads or interruptions, so resuming needs only the
// step number. PlainSource (one plain token sequence) and MixtureSampler (bucketed
// dataset + mixture) implement it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mt {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // Writes seq_len + 1 + ahead token ids for training sequence `index` into
  // out. The `ahead` extra ids (multi-token prediction's targets, model/mtp.h)
  // continue the stream past the last target exactly as that target does: a
  // sequence still consumes seq_len tokens (the ledger's count), the first
  // 1 + ahead of the next one are read again, and the seq_len + 1 ids do not
  // depend on `ahead` (an MTP run sees the data of the run without it).
  virtual void sequence(int64_t index, int64_t seq_len, int64_t ahead, int32_t* out) const = 0;
  void sequence(int64_t index, int64_t seq_len, int32_t* out) const { sequence(index, seq_len, 0, out); }
  // Evaluation (held-out) sequence `index`; false if there is no eval split.
  virtual bool eval_sequence(int64_t index, int64_t seq_len, int32_t* out) const { return false; }
  virtual int64_t vocab_size() const = 0;
  // The id that ends every document in the stream (the token after it starts
  // the next document: document masking), or -1 without document structure.
  virtual int32_t document_separator() const { return -1; }
  // Training sequences it can give (an index past it is a bug); unbounded streams: INT64_MAX.
  virtual int64_t capacity() const { return INT64_MAX; }
  virtual std::string describe() const = 0;

  // Bucketed sources: tokens (seq_len per sequence) each bucket contributed
  // to training sequences [0, n_sequences), in a fixed bucket order. A pure
  // function of n, so it is right after a resume too. Empty otherwise.
  virtual std::vector<std::pair<std::string, int64_t>> ledger(int64_t n_sequences) const { return {}; }
  // Bucketed sources: the buckets of the ledger, in its order, and the one
  // training sequence `index` comes from (an index into them); -1 otherwise.
  virtual std::vector<std::string> bucket_names() const { return {}; }
  virtual int64_t bucket_of(int64_t index) const { return -1; }
  // Buckets with a held-out split, and their eval sequences (false if the
  // bucket's eval split is shorter than one sequence).
  virtual std::vector<std::string> eval_buckets() const { return {}; }
  virtual bool bucket_eval_sequence(int64_t bucket, int64_t index, int64_t seq_len, int32_t* out) const {
    return false;
  }
  // Distinct eval sequences of a bucket (an index of eval_buckets()): past
  // this many, bucket_eval_sequence wraps around and repeats them.
  virtual int64_t bucket_eval_windows(int64_t bucket, int64_t seq_len) const { return 0; }
};

}  // namespace mt
