// held_out.h — the held-out evaluation pass: `batches` batches of `batch`
// held-out sequences from every bucket with an eval split (or from the
// source's one eval split when it has no buckets), mean loss per bucket and
// their mean; buckets too small for the shape are left out (see
// check_held_out_fits). The trainer's periodic eval (train.eval_every) and
// `moetrain eval` both run this one function, so their figures agree.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "data/token_source.h"

namespace mt {

struct HeldOutLosses {
  double eval_loss = std::nan("");  // mean over the buckets evaluated (NaN: none could be)
  std::vector<std::pair<std::string, double>> buckets;  // mean loss per bucket, buckets without data left out
};

struct HeldOutShape {
  int64_t batch = 0, seq_len = 0, batches = 1;
  // This rank's slice of each batch: sequences [offset, offset + local) (one process: 0, batch).
  int64_t local = 0, offset = 0;
};

// Fills `tokens` (local sequences of seq_len + 1) per batch and calls
// `batch_loss` for the batch's global mean loss. `all_ranks(ok)` is the
// logical and over ranks of "this rank could fill its slice" (identity in
// one process). visit(bucket, tokens) sees every filled slice (may be null).
HeldOutLosses held_out_losses(const TokenSource& data, const HeldOutShape& s, int32_t* tokens,
                              const std::function<bool(bool)>& all_ranks, const std::function<double()>& batch_loss,
                              const std::function<void(int64_t, const int32_t*)>& visit = nullptr);

// The buckets (indices into data.eval_buckets()) whose held-out split holds
// batches x batch distinct sequences: those held_out_losses evaluates.
std::vector<int64_t> evaluated_buckets(const TokenSource& data, const HeldOutShape& s);

// A bucket whose held-out split holds fewer than batches x batch distinct
// sequences is left out of the pass: past its split the sequences would
// repeat and count twice. Returns a warning naming the buckets left out
// (empty when none), or an error when every bucket would be; `what` names
// the setting that chose shape.batches (a flag or a config key).
Result<std::string> check_held_out_fits(const TokenSource& data, const HeldOutShape& s, std::string_view what);

}  // namespace mt
