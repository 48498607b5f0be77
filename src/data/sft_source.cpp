// sft_source.cpp — packing supervised examples into rows (see sft_source.h).
#include "data/sft_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "core/rng.h"
#include "core/token_flags.h"

namespace mt {

namespace {

// Epoch e's order of n examples: sorted by a Philox key each (ties by index).
std::vector<int32_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<std::pair<uint64_t, int32_t>> keyed(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    keyed[size_t(i)] = {philox_u64(seed, 0x5f7400 + uint64_t(epoch), uint64_t(i)), int32_t(i)};
  std::sort(keyed.begin(), keyed.end());
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = keyed[size_t(i)].second;
  return order;
}

}  // namespace

double SftPackStats::fill() const {
  return rows_per_epoch > 0 ? double(tokens) / double(rows_per_epoch * row_tokens) : 0.0;
}

std::vector<int32_t> SftSource::flatten(const SftExample& e, int32_t separator) {
  std::vector<int32_t> out;
  for (const SftSpan& s : e.spans)
    for (int32_t id : s.ids) out.push_back(s.trained ? id : without_loss(id));
  out.push_back(separator);
  return out;
}

std::vector<SftSource::Row> SftSource::pack(const std::vector<std::vector<int32_t>>& ex, int64_t row_tokens,
                                            int64_t epochs, uint64_t seed, int64_t& truncated) {
  std::vector<Row> rows;
  truncated = 0;
  for (int64_t e = 0; e < epochs; ++e) {
    Row row;
    int64_t used = 0;
    for (int32_t i : epoch_order(int64_t(ex.size()), seed, e)) {
      const int64_t len = std::min<int64_t>(int64_t(ex[size_t(i)].size()), row_tokens);
      if (e == 0 && len < int64_t(ex[size_t(i)].size())) ++truncated;
      if (used + len > row_tokens) {
        rows.push_back(std::move(row));
        row = {};
        used = 0;
      }
      row.push_back({i, int32_t(len)});
      used += len;
    }
    if (!row.empty()) rows.push_back(std::move(row));  // an epoch's last row is not shared with the next's
  }
  return rows;
}

Result<std::unique_ptr<SftSource>> SftSource::open(std::vector<SftExample> train, std::vector<SftExample> held_out,
                                                   const SftSourceOptions& opt) {
  MT_CHECK(opt.seq_len > 0 && opt.separator >= 0 && opt.epochs >= 1, "sft source: bad options");
  if (train.empty()) return Status::errorf("{}: no training examples", opt.name);
  std::unique_ptr<SftSource> s(new SftSource());
  s->opt_ = opt;
  const auto check = [&](const std::vector<SftExample>& v, const char* which) -> Status {
    for (size_t i = 0; i < v.size(); ++i) {
      bool trains = false;
      for (const SftSpan& sp : v[i].spans) {
        trains |= sp.trained && !sp.ids.empty();
        for (int32_t id : sp.ids)
          if (id < 0 || id >= opt.vocab_size)
            return Status::errorf("{}: {} example {}: token id {} outside the vocabulary of {}", opt.name, which, i + 1,
                                  id, opt.vocab_size);
      }
      if (!trains)
        return Status::errorf("{}: {} example {}: nothing to train on (an empty completion)", opt.name, which, i + 1);
    }
    return Status::ok();
  };
  MT_RETURN_IF_ERROR(check(train, "training"));
  MT_RETURN_IF_ERROR(check(held_out, "held-out"));
  for (const SftExample& e : train) s->train_.push_back(flatten(e, opt.separator));
  for (const SftExample& e : held_out) s->held_.push_back(flatten(e, opt.separator));
  // A row opens with a separator (no loss), so every example follows one, as
  // every pretraining document and every `eval` prompt does.
  const int64_t row_tokens = opt.seq_len;
  s->rows_ = pack(s->train_, row_tokens, opt.epochs, opt.seed, s->stats_.truncated);
  int64_t ignored = 0;
  s->eval_rows_ = pack(s->held_, row_tokens, 1, opt.seed ^ 0xe7a1, ignored);
  SftPackStats& st = s->stats_;
  st.examples = int64_t(train.size());
  st.row_tokens = row_tokens;
  st.rows_per_epoch = int64_t(pack(s->train_, row_tokens, 1, opt.seed, ignored).size());  // epoch 0's rows
  for (const auto& e : s->train_) {
    const int64_t len = std::min<int64_t>(int64_t(e.size()), row_tokens);
    st.tokens += len;
    for (int64_t t = 0; t < len; ++t) st.loss_tokens += (e[size_t(t)] & kNoLossBit) ? 0 : 1;
  }
  return s;
}

void SftSource::write_row(const Row& row, const std::vector<std::vector<int32_t>>& ex, int64_t seq_len, int64_t ahead,
                          int32_t* out) const {
  const int64_t n = seq_len + 1 + ahead;
  out[0] = without_loss(opt_.separator);
  int64_t at = 1;
  for (const Piece& p : row) {
    const std::vector<int32_t>& e = ex[size_t(p.example)];
    std::copy(e.begin(), e.begin() + p.length, out + at);
    at += p.length;
  }
  std::fill(out + at, out + n, without_loss(opt_.separator));
}

void SftSource::sequence(int64_t index, int64_t seq_len, int64_t ahead, int32_t* out) const {
  MT_CHECK(seq_len == opt_.seq_len, "sft source: rows are packed for seq_len {}, asked for {}", opt_.seq_len, seq_len);
  MT_CHECK(index >= 0 && index < capacity(), "sft source: row {} of {}", index, capacity());
  write_row(rows_[size_t(index)], train_, seq_len, ahead, out);
}

bool SftSource::eval_sequence(int64_t index, int64_t seq_len, int32_t* out) const {
  if (eval_rows_.empty() || seq_len != opt_.seq_len) return false;
  write_row(eval_rows_[size_t(index % int64_t(eval_rows_.size()))], held_, seq_len, 0, out);
  return true;
}

std::string SftSource::describe() const {
  return fmt::format(
      "supervised examples {} ({} examples, {} epoch{}: {} rows of {} tokens, {:.1f}% filled, {:.1f}% of "
      "example tokens trained on{}{})",
      opt_.name, stats_.examples, opt_.epochs, opt_.epochs == 1 ? "" : "s", rows_.size(), opt_.seq_len + 1,
      100.0 * stats_.fill(), stats_.tokens > 0 ? 100.0 * double(stats_.loss_tokens) / double(stats_.tokens) : 0.0,
      stats_.truncated > 0 ? fmt::format(", {} truncated to a row", stats_.truncated) : "",
      held_.empty() ? "" : fmt::format("; {} held-out examples", held_.size()));
}

}  // namespace mt
