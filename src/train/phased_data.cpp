// phased_data.cpp — see phased_data.h.
#include "train/phased_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "data/dataset.h"
#include "data/plain_source.h"
#include "data/sft_source.h"
#include "train/sft_data.h"
#include "data/sampler.h"

namespace mt {
namespace {

std::string segment_label(const PhaseSchedule& s, const DataSegment& seg) {
  const PhaseSpan& a = s.phases()[size_t(seg.first_phase)];
  if (seg.phases == 1) return fmt::format("phase[{}] \"{}\"", seg.first_phase, a.name);
  const PhaseSpan& b = s.phases()[size_t(seg.first_phase + seg.phases - 1)];
  return fmt::format("phases[{}..{}] \"{}\" .. \"{}\"", seg.first_phase, seg.first_phase + seg.phases - 1, a.name,
                     b.name);
}

using Ledger = std::vector<std::pair<std::string, int64_t>>;

// Adds `l` into `into` by bucket name, keeping the order of first use.
void add_ledger(Ledger& into, const Ledger& l, int64_t sign = 1) {
  for (const auto& [name, tokens] : l) {
    auto it = std::find_if(into.begin(), into.end(), [&](const auto& e) { return e.first == name; });
    if (it == into.end())
      into.emplace_back(name, sign * tokens);
    else
      it->second += sign * tokens;
  }
}

}  // namespace

Result<std::vector<SegmentMixture>> plan_segments(const Dataset& ds, const PhaseSchedule& s) {
  std::vector<SegmentMixture> out;
  std::vector<int64_t> taken(ds.buckets().size(), 0);
  for (const DataSegment& seg : s.segments()) {
    SegmentMixture m;
    m.label = segment_label(s, seg);
    auto mx = load_mixture(seg.mixture);
    if (!mx) return Status::errorf("{}: {}", m.label, mx.status().message());
    m.mixture = std::move(*mx);
    if (!out.empty()) {
      const Mixture& first = out.front().mixture;
      if (m.mixture.seed != first.seed)
        return Status::errorf(
            "{}: {}: seed = {} differs from {}'s seed = {}: the phases read one pool of documents "
            "in one order per bucket",
            m.label, seg.mixture, m.mixture.seed, first.source, first.seed);
      if (m.mixture.scale_num * first.scale_den != first.scale_num * m.mixture.scale_den)
        return Status::errorf(
            "{}: {}: scale = {}/{} differs from {}'s {}/{}: every phase of a run is downsampled by "
            "one ratio",
            m.label, seg.mixture, m.mixture.scale_num, m.mixture.scale_den, first.source, first.scale_num,
            first.scale_den);
    }
    auto plan = plan_mixture(ds, m.mixture, seg.seq_len, taken);
    if (!plan) return Status::errorf("{}: {}", m.label, plan.status().message());
    m.plan = std::move(*plan);
    m.taken = taken;
    taken = m.plan.taken_after(taken);
    out.push_back(std::move(m));
  }
  return out;
}

Status check_segments(const std::vector<SegmentMixture>& plans, const PhaseSchedule& s) {
  std::string msg;
  size_t n = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    const SegmentMixture& m = plans[i];
    for (const std::string& v : m.plan.violations) {
      msg += fmt::format("\n  {} ({}): {}", m.label, m.mixture.source, v);
      ++n;
    }
    const int64_t reads = s.segments()[i].sequences;
    if (reads > m.plan.sequences) {
      msg += fmt::format(
          "\n  {} ({}): reads {} sequences ({} tokens) but total_tokens x scale = {} x {}/{} allows {} "
          "sequences of {} tokens; raise total_tokens or scale, or shorten the phase",
          m.label, m.mixture.source, reads, reads * m.plan.seq_len, m.mixture.total_tokens, m.plan.scale_num,
          m.plan.scale_den, m.plan.sequences, m.plan.seq_len);
      ++n;
    }
  }
  if (n == 0) return Status::ok();
  return Status::errorf(
      "the run's data plan is refused ({} problem{}; no document is read twice unless max_epochs "
      "allows it):{}",
      n, n == 1 ? "" : "s", msg);
}

Result<std::unique_ptr<PhasedData>> PhasedData::open(const RunConfig& c, PhaseSchedule s) {
  std::unique_ptr<PhasedData> d(new PhasedData(std::move(s)));
  const PhaseSchedule& sched = d->sched_;
  d->skip_.assign(sched.segments().size(), 0);
  if (!c.data.sft.empty()) {  // supervised examples, packed (one source; phases may not change data)
    auto src = open_sft_source(c);
    if (!src) return src.status();
    int64_t reads = 0;
    for (const DataSegment& seg : sched.segments()) reads += seg.sequences;
    // A reinforcement-learning run trains on rollouts of the items, not on their packed rows (train/rl_feed.h):
    // the rows serve the held-out loss only, and the prompts cycle through epochs.
    if (reads > (*src)->capacity() && !c.rl.enabled)
      return Status::errorf(
          "data.sft: {} rows of {} tokens ({} epoch{}) hold fewer than the {} sequences train.steps reads; lower "
          "train.steps or raise data.sft_epochs (examples are never read past their epochs)",
          (*src)->capacity(), c.train.seq_len + 1, c.data.sft_epochs, c.data.sft_epochs == 1 ? "" : "s", reads);
    d->src_.push_back(std::move(*src));
    return d;
  }
  if (c.data.dataset.empty()) {  // one plain stream (a phase cannot set a mixture without a dataset)
    PlainSourceOptions so = c.data.plain;
    so.vocab_size = c.model.vocab_size;
    so.seed = c.train.seed;
    so.seq_len = c.train.seq_len;
    auto src = PlainSource::open(so);
    if (!src) return src.status();
    d->src_.push_back(std::move(*src));
    return d;
  }
  auto opened = Dataset::open(c.data.dataset);
  if (!opened) return opened.status();
  std::shared_ptr<const Dataset> ds(std::move(*opened));
  if (ds->tokenizer().vocab_size() > c.model.vocab_size)
    return Status::errorf("model.vocab_size = {} is smaller than the vocabulary of {}'s tokenizer ({} pieces)",
                          c.model.vocab_size, c.data.dataset, ds->tokenizer().vocab_size());
  auto plans = plan_segments(*ds, sched);
  if (!plans) return plans.status();
  if (!sched.phased()) {  // one mixture: today's messages, word for word
    MT_RETURN_IF_ERROR(plans->front().plan.check(plans->front().mixture.source));
  } else {
    MT_RETURN_IF_ERROR(check_segments(*plans, sched));
  }
  for (size_t i = 0; i < plans->size(); ++i) {
    const SegmentMixture& m = (*plans)[i];
    auto src = MixtureSampler::open(ds, m.mixture, sched.segments()[i].seq_len, sched.segments()[i].sequences, m.taken);
    if (!src) return sched.phased() ? Status::errorf("{}: {}", m.label, src.status().message()) : src.status();
    d->src_.push_back(std::move(*src));
  }
  for (const auto& src : d->src_) {
    d->name_of_.emplace_back();
    for (const std::string& name : src->bucket_names()) {
      auto it = std::find(d->names_.begin(), d->names_.end(), name);
      d->name_of_.back().push_back(int64_t(it - d->names_.begin()));
      if (it == d->names_.end()) d->names_.push_back(name);
    }
  }
  return d;
}

int64_t PhasedData::bucket_of(int64_t step, int64_t i) const {
  if (names_.empty()) return -1;
  const size_t seg = size_t(sched_.phases()[sched_.phase_at(step)].segment);
  return name_of_[seg][size_t(src_[seg]->bucket_of(position(step) + i))];
}

int64_t PhasedData::position(int64_t step) const {
  const size_t seg = size_t(sched_.phases()[sched_.phase_at(step)].segment);
  return sched_.first_sequence(step) + skip_[seg];
}

void PhasedData::sequence(int64_t step, int64_t i, int64_t seq_len, int64_t ahead, int32_t* out) const {
  const size_t seg = size_t(sched_.phases()[sched_.phase_at(step)].segment);
  src_[seg]->sequence(position(step) + i, seq_len, ahead, out);
}

int64_t PhasedData::segment_end(size_t seg, int64_t steps) const {
  const DataSegment& g = sched_.segments()[seg];
  if (steps <= g.first_step) return 0;
  if (steps >= g.first_step + g.steps) return g.sequences + skip_[seg];
  return position(steps);
}

Ledger PhasedData::ledger(int64_t steps) const {
  Ledger out;
  for (size_t seg = 0; seg < src_.size(); ++seg)
    if (const int64_t end = segment_end(seg, steps); end > 0 || seg == 0) add_ledger(out, src_[seg]->ledger(end));
  return out;
}

Ledger PhasedData::phase_ledger(size_t p) const {
  const PhaseSpan& ph = sched_.phases()[p];
  const size_t seg = size_t(ph.segment);
  Ledger out = src_[seg]->ledger(segment_end(seg, ph.first_step + ph.steps));
  add_ledger(out, src_[seg]->ledger(segment_end(seg, ph.first_step)), -1);
  return out;
}

Ledger PhasedData::tokens_between(int64_t step, int64_t from, int64_t to) const {
  const size_t seg = size_t(sched_.phases()[sched_.phase_at(step)].segment);
  Ledger out = src_[seg]->ledger(to);
  add_ledger(out, src_[seg]->ledger(from), -1);
  return out;
}

Result<std::pair<int64_t, int64_t>> PhasedData::skip_for_rollback(int64_t spike, int64_t to, int64_t before) {
  const size_t seg = size_t(sched_.phases()[sched_.phase_at(spike)].segment);
  const bool same = sched_.phases()[sched_.phase_at(to)].segment == int64_t(seg);
  const int64_t from = same ? position(to) : 0;  // the checkpoint's skips are restored by now
  const int64_t begin = same ? sched_.first_sequence(to) : 0;
  const int64_t needed = sched_.segments()[seg].sequences + (before - begin);
  if (needed > src_[seg]->capacity())
    return Status::errorf(
        "skipping {} sequences, the run would need {} sequences of {}, more than its data plans ({}): "
        "give the mixture headroom (a larger scale or total_tokens) or use spike.policy = \"skip\"",
        before - from, needed, segment_label(sched_, sched_.segments()[seg]), src_[seg]->capacity());
  skip_[seg] = before - begin;
  return std::make_pair(from, before);
}

std::string PhasedData::describe() const {
  if (src_.size() == 1) return src_.front()->describe();
  std::string out;
  for (size_t i = 0; i < src_.size(); ++i)
    out += fmt::format("{}{}: {}", i ? "\n# data: " : "", segment_label(sched_, sched_.segments()[i]),
                       src_[i]->describe());
  return out;
}

}  // namespace mt
