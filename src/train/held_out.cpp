// held_out.cpp — see held_out.h.
#include "train/held_out.h"

#include <fmt/format.h>

#include <algorithm>

namespace mt {

HeldOutLosses held_out_losses(const TokenSource& data, const HeldOutShape& s, int32_t* tokens,
                              const std::function<bool(bool)>& all_ranks, const std::function<double()>& batch_loss,
                              const std::function<void(int64_t, const int32_t*)>& visit) {
  const int64_t B = s.batch, T = s.seq_len;
  // Mean loss over `batches` batches whose sequences `fill` provides; NaN if it cannot.
  auto mean_loss = [&](int64_t bucket, auto&& fill) {
    double sum = 0.0;
    for (int64_t e = 0; e < s.batches; ++e) {
      bool ok = true;
      for (int64_t b = 0; b < s.local && ok; ++b) ok = fill(e * B + s.offset + b, tokens + b * (T + 1));
      if (!all_ranks(ok)) return std::nan("");
      if (visit) visit(bucket, tokens);
      sum += batch_loss();
    }
    return sum / double(s.batches);
  };
  HeldOutLosses h;
  const std::vector<std::string> names = data.eval_buckets();
  double total = 0.0;
  int64_t n = 0;
  for (const int64_t k : evaluated_buckets(data, s)) {
    const double l = mean_loss(k, [&](int64_t i, int32_t* out) { return data.bucket_eval_sequence(k, i, T, out); });
    if (!std::isfinite(l)) continue;
    h.buckets.emplace_back(names[size_t(k)], l);
    total += l;
    ++n;
  }
  if (names.empty()) {
    total = mean_loss(-1, [&](int64_t i, int32_t* out) { return data.eval_sequence(i, T, out); });
    n = 1;
  }
  h.eval_loss = n > 0 ? total / double(n) : std::nan("");
  return h;
}

std::vector<int64_t> evaluated_buckets(const TokenSource& data, const HeldOutShape& s) {
  std::vector<int64_t> held;
  const int64_t n = int64_t(data.eval_buckets().size());
  for (int64_t k = 0; k < n; ++k)
    if (data.bucket_eval_windows(k, s.seq_len) >= s.batches * s.batch) held.push_back(k);
  return held;
}

Result<std::string> check_held_out_fits(const TokenSource& data, const HeldOutShape& s, std::string_view what) {
  const std::vector<std::string> names = data.eval_buckets();
  const int64_t need = s.batches * s.batch;
  std::vector<std::string> left_out;
  int64_t most = 0;  // the largest split, in sequences
  std::string largest;
  const std::vector<int64_t> held = evaluated_buckets(data, s);
  if (held.size() == names.size()) return std::string();
  for (size_t k = 0; k < names.size(); ++k) {
    const int64_t windows = data.bucket_eval_windows(int64_t(k), s.seq_len);
    if (windows > most) most = windows, largest = names[k];
    if (!std::binary_search(held.begin(), held.end(), int64_t(k)))
      left_out.push_back(fmt::format("{} ({})", names[k], windows));
  }
  if (held.empty())
    return Status::errorf(
        "{}: {} batches of {} sequences ({} tokens) per bucket, but no bucket's held-out split holds that many: the "
        "largest, {}, holds {} sequences of {} tokens, at most {} batches (past a split the sequences would repeat)",
        what, s.batches, s.batch, need * s.seq_len, largest, most, s.seq_len, most / s.batch);
  std::string list;
  for (size_t i = 0; i < left_out.size() && i < 6; ++i) list += (i ? ", " : "") + left_out[i];
  if (left_out.size() > 6) list += fmt::format(" and {} more", left_out.size() - 6);
  return fmt::format(
      "{}: {} of {} buckets hold fewer than {} held-out sequences of {} tokens and are left out of the "
      "held-out loss: {}",
      what, left_out.size(), names.size(), need, s.seq_len, list);
}

}  // namespace mt
