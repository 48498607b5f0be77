// sampler.h — the TokenSource over a dataset and a mixture plan.
//
// Sequence i is a pure function of (dataset, mixture, seed, i):
//  * Which bucket: one deterministic schedule over the full-scale run, in
//    which bucket b owns Q_b of N_full slots. It is the proportionate-fair
//    (pfair) earliest-deadline-first order of unit jobs with windows
//    [floor((k-1) N/Q_b), ceil(k N/Q_b)): after any n slots bucket b holds
//    within one slot of n * Q_b / N (Baruah et al., 1996). A run at scale s
//    uses the first floor(s * N_full) slots, so proxy data is a prefix of
//    hero data with the same proportions.
//  * Which tokens: bucket b's stream is its documents in a seeded
//    pseudo-random order (a Feistel bijection, never materialised), each
//    followed by the end-of-document token; a new order per epoch. The k-th
//    slot of bucket b reads stream tokens [k T, k T + T] (T = seq_len), so a
//    bucket's tokens are consumed front to back and never twice within an epoch.
// The schedule is evaluated lazily in blocks from periodic snapshots; any
// index can be asked for first (resume), and nothing depends on threads,
// world size or call order.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/dataset.h"
#include "data/mixture.h"
#include "data/token_source.h"

namespace mt {

class MixtureSampler final : public TokenSource {
 public:
  // max_sequences: how many the caller will read; more than the plan's run
  // length is an error (it would read past the mixture budget). The plan is
  // checked (no bucket past max_epochs). `taken` (per dataset bucket; empty
  // = none): tokens of each bucket's stream that earlier segments of a
  // phased run own at full scale; this one starts after them (mixture.h).
  static Result<std::unique_ptr<MixtureSampler>> open(std::shared_ptr<const Dataset> ds, const Mixture& mx,
                                                      int64_t seq_len, int64_t max_sequences,
                                                      const std::vector<int64_t>& taken = {});

  using TokenSource::sequence;
  // Reads the bucket's stream [k T, k T + T + ahead] (the schedule and the
  // ledger count T per sequence whatever `ahead` is).
  void sequence(int64_t index, int64_t seq_len, int64_t ahead, int32_t* out) const override;
  int64_t vocab_size() const override { return ds_->tokenizer().vocab_size(); }
  int32_t document_separator() const override { return eod_; }
  std::string describe() const override { return desc_; }
  int64_t capacity() const override { return plan_.sequences; }
  std::vector<std::pair<std::string, int64_t>> ledger(int64_t n_sequences) const override;
  std::vector<std::string> bucket_names() const override;
  int64_t bucket_of(int64_t index) const override { return slot(index).bucket; }
  std::vector<std::string> eval_buckets() const override;
  bool bucket_eval_sequence(int64_t bucket, int64_t index, int64_t seq_len, int32_t* out) const override;
  int64_t bucket_eval_windows(int64_t bucket, int64_t seq_len) const override;

  // Where sequence i comes from: its plan bucket and its slot in that bucket.
  struct Slot {
    int32_t bucket;   // index into plan().buckets
    int64_t k;        // this is the bucket's k-th sequence (0-based)
  };
  Slot slot(int64_t index) const;
  const MixturePlan& plan() const { return plan_; }
  const Dataset& dataset() const { return *ds_; }
  // Document id at position `rank` of bucket b's order in `epoch` (tests).
  int64_t doc_at(int32_t b, int64_t epoch, int64_t rank) const;

  static constexpr int64_t kBlock = 8192;  // schedule slots per cached block / snapshot

 private:
  struct Cursor {           // a position in a bucket's stream
    int64_t epoch = 0, rank = 0, offset = 0;  // offset within the document + separator
  };
  struct State {            // the schedule at the start of a block
    std::vector<int64_t> count;   // slots taken per bucket
    std::vector<Cursor> cursor;   // stream position of each bucket's next sequence
  };
  struct Entry {
    int32_t bucket;
    int64_t k;
    Cursor at;
  };
  struct Block {
    int64_t index = -1;
    std::vector<Entry> entries;
  };

  MixtureSampler() = default;
  // Runs the schedule over [n0, n0 + len) from state s (advanced in place),
  // recording entries if `out` is non-null.
  void simulate(int64_t n0, int64_t len, State& s, std::vector<Entry>* out) const;
  void advance(int32_t b, Cursor& c, int64_t tokens) const;
  const Entry& entry(int64_t index) const;  // caller holds mu_
  void ensure_snapshots(int64_t j) const;    // caller holds mu_

  std::shared_ptr<const Dataset> ds_;
  MixturePlan plan_;
  int64_t seq_len_ = 0;
  std::string desc_;
  std::vector<uint64_t> key_;           // per plan bucket: permutation key
  std::vector<const Bucket*> bucket_;   // per plan bucket
  int32_t eod_ = 0;

  mutable std::mutex mu_;
  mutable std::vector<State> snapshots_;  // snapshots_[j]: state at slot j * kBlock
  mutable std::list<Block> cache_;        // most recently used first
};

// What `moetrain train` opens for data.dataset + data.mixture: errors if the
// dataset or mixture is bad, the plan repeats data, the run needs more than
// the budget, or model_vocab (model.vocab_size) does not cover the tokenizer.
Result<std::unique_ptr<MixtureSampler>> open_mixture_source(const std::string& dataset_dir,
                                                            const std::string& mixture_path, int64_t seq_len,
                                                            int64_t max_sequences, int64_t model_vocab);

}  // namespace mt
