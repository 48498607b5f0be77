// rl_feed.cpp — GRPO's rollouts, rewards and buffer (see rl_feed.h).
#include "train/rl_feed.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/file_io.h"
#include "core/file_system.h"
#include "core/hash.h"
#include "core/phase_timer.h"
#include "core/rng.h"
#include "core/threads.h"
#include "core/timer.h"
#include "kernels/cpu/distill_loss.h"
#include "model/decoder.h"
#include "model/generate.h"
#include "model/weights.h"
#include "train/episodes.h"
#include "train/rollouts.h"
#include "core/token_flags.h"
#include "train/verifier.h"

namespace mt {

namespace {

// Sampling streams of the held-out pass@k samples: apart from any rollout's.
constexpr uint64_t kEvalSeedSalt = 0x9e3779b97f4a7c15ull;
constexpr int64_t kDecodeChunk = 128;  // contexts per decoder (its KV cache rows)

// Items and their contexts (separator + prompt ids), each checked to leave
// rl.max_new_tokens of room in a row.
Status load_items(const std::string& path, const std::string& key, const TextCodec& codec, const RunConfig& cfg,
                  std::vector<GenItem>& items, std::vector<std::vector<int32_t>>& contexts) {
  auto read = read_gen_tasks(path);
  if (!read) return Status::errorf("{}: {}", key, read.status().message());
  items = std::move(*read);
  if (items.empty()) return Status::errorf("{}: {} holds no task item", key, path);
  const int64_t room = cfg.train.seq_len + 1 - cfg.rl.max_new_tokens;
  for (const GenItem& it : items) {
    std::vector<int32_t> ctx{codec.end_of_document()};
    for (int32_t id : codec.encode(it.prompt)) ctx.push_back(id);
    for (int32_t id : ctx)
      if (id < 0 || id >= cfg.model.vocab_size)
        return Status::errorf("{}:{}: the prompt's token {} is outside model.vocab_size {}", path, it.line, id,
                              cfg.model.vocab_size);
    if (int64_t(ctx.size()) > room)
      return Status::errorf(
          "{}:{}: the prompt is {} tokens (with the end-of-document id before it); a row of "
          "train.seq_len = {} leaves {} beside rl.max_new_tokens = {}",
          path, it.line, ctx.size(), cfg.train.seq_len, room, cfg.rl.max_new_tokens);
    contexts.push_back(std::move(ctx));
  }
  return Status::ok();
}

std::vector<const std::vector<int32_t>*> contexts_of(const std::vector<std::vector<int32_t>>& v) {
  std::vector<const std::vector<int32_t>*> out;
  for (const auto& x : v) out.push_back(&x);
  return out;
}

// Completions as checkpoints and the exchange hold them: rows of M floats,
// -1 past the end (ids < 2^24 and their flags are exact in a float).
void pack_completions(const std::vector<std::vector<int32_t>>& c, int64_t M, std::vector<float>& out) {
  out.assign(c.size() * size_t(M), -1.0f);
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = 0; j < c[i].size(); ++j) out[i * size_t(M) + j] = completion_id_to_float(c[i][j]);
}

std::vector<std::vector<int32_t>> unpack_completions(const std::vector<float>& packed, int64_t rows, int64_t M) {
  std::vector<std::vector<int32_t>> c(static_cast<size_t>(rows));
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t m = 0; m < M && packed[size_t(k * M + m)] != -1.0f; ++m)
      c[size_t(k)].push_back(completion_id_from_float(packed[size_t(k * M + m)]));
  return c;
}

}  // namespace

Result<std::unique_ptr<RlFeed>> RlFeed::open(const RunConfig& cfg, Comm& world, const MeshShape& shape,
                                             int64_t local_batch) {
  std::unique_ptr<RlFeed> f(new RlFeed(cfg, world));
  const RlConfig& rc = cfg.rl;
  auto codec = open_codec(cfg.data.sft_tokenizer);
  if (!codec) return Status::errorf("data.sft_tokenizer: {}", codec.status().message());
  f->codec_ = std::move(*codec);
  f->sep_ = f->codec_->end_of_document();
  f->rows_ = cfg.train.batch_size * cfg.train.grad_accum;
  f->G_ = rc.group_size;
  f->T_ = cfg.train.seq_len;
  f->stride_ = cfg.train.seq_len + 1 + cfg.model.mtp_depth;
  MT_RETURN_IF_ERROR(load_items(cfg.data.sft, "data.sft", *f->codec_, cfg, f->items_, f->contexts_));
  if (!cfg.data.sft_held_out.empty()) {
    MT_RETURN_IF_ERROR(
        load_items(cfg.data.sft_held_out, "data.sft_held_out", *f->codec_, cfg, f->held_out_, f->held_contexts_));
    if (rc.eval_items > 0 && int64_t(f->held_out_.size()) > rc.eval_items) {
      f->held_out_.resize(size_t(rc.eval_items));
      f->held_contexts_.resize(size_t(rc.eval_items));
    }
  }
  {
    ParamLayout L;
    build_layout(cfg.model, L);
    f->n_params_ = L.total();
    int64_t moe = 0;
    for (int64_t u = 0; u < cfg.model.n_units(); ++u) moe += cfg.model.is_moe(u) ? 1 : 0;
    f->n_bias_ = cfg.model.aux_free_bias ? moe * cfg.model.n_experts : 0;
  }
  if (rc.rollout_lag > 0 && samples_from_teacher(rc.objective))
    return Status::errorf(
        "rl.rollout_lag: {} learns from the teacher's samples, which never go stale; a lag needs the "
        "policy's own samples (rl.objective = \"grpo\" or \"reverse_kl\")",
        rl_objective_name(rc.objective));
  FrozenModelOptions fo;
  fo.layout = rc.frozen_layout;
  fo.shape = shape;
  fo.local_batch = local_batch;
  fo.seq_len = f->T_;
  fo.separator = f->sep_;
  if (rc.kl_beta > 0) {
    const std::string ref_dir = rc.reference.empty() ? cfg.train.init_from : rc.reference;
    const char* key = rc.reference.empty() ? "train.init_from" : "rl.reference";
    if (ref_dir.empty())
      return Status::errorf(
          "rl.reference: rl.kl_beta = {} needs a reference model (a checkpoint), and "
          "train.init_from is not set either",
          rc.kl_beta);
    fo.key = key;
    auto ref = FrozenModel::open(ref_dir, cfg, *f->codec_, world, fo);
    if (!ref) return ref.status();
    f->ref_ = std::move(*ref);
  }
  if (rc.objective != RlObjective::kGrpo) {
    fo.key = "rl.teacher";
    auto t = FrozenModel::open(rc.teacher, cfg, *f->codec_, world, fo);
    if (!t) return t.status();
    f->teacher_ = std::move(*t);
  }
  return f;
}

int64_t RlFeed::item_of(int64_t iteration, int64_t p) const {
  const int64_t n = int64_t(items_.size()), k = iteration * (rows_ / G_) + p;
  const int64_t epoch = k / n;
  if (epoch != order_epoch_) {  // the epoch's order, once: items sorted by a Philox key each (ties by index)
    std::vector<std::pair<uint64_t, int64_t>> keyed(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      keyed[size_t(i)] = {philox_u64(cfg_.train.seed, 0x710000 + uint64_t(epoch), uint64_t(i)), i};
    std::sort(keyed.begin(), keyed.end());
    order_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order_[size_t(i)] = keyed[size_t(i)].second;
    order_epoch_ = epoch;
  }
  return order_[size_t(k % n)];
}

// Rows of stride tokens as rows of T + 1 (the next-token forward's input) in ref_rows_.
const int32_t* RlFeed::compact_rows(const int32_t* rows, int64_t n, int64_t stride) {
  ref_rows_.resize(size_t(n * (T_ + 1)));
  for (int64_t b = 0; b < n; ++b)
    std::copy(rows + b * stride, rows + b * stride + T_ + 1, ref_rows_.begin() + b * (T_ + 1));
  return ref_rows_.data();
}

std::pair<int64_t, int64_t> RlFeed::share(int64_t n, int64_t r) const {
  const int64_t W = world_.size();
  return {n * r / W, n * (r + 1) / W};
}

std::vector<std::vector<int32_t>> RlFeed::sample(const ModelConfig& model, const float* params, const float* bias,
                                                 const std::vector<const GenItem*>& items,
                                                 const std::vector<const std::vector<int32_t>*>& contexts,
                                                 const std::vector<uint64_t>& streams, const SamplingOptions& so) {
  std::vector<std::vector<int32_t>> out;
  for (size_t c0 = 0; c0 < contexts.size(); c0 += size_t(kDecodeChunk)) {
    const size_t c1 = std::min(contexts.size(), c0 + size_t(kDecodeChunk));
    std::vector<std::vector<int32_t>> prompts;
    int64_t longest = 0;
    bool agentic = false;
    for (size_t c = c0; c < c1; ++c) {
      prompts.push_back(*contexts[c]);
      longest = std::max<int64_t>(longest, int64_t(contexts[c]->size()));
      agentic |= !items[c]->env.empty();
    }
    DecoderOptions dopt;
    dopt.batch = int64_t(prompts.size());
    dopt.max_len = longest + cfg_.rl.max_new_tokens;
    if (cfg_.train.document_mask) dopt.document_separator = sep_;  // as the trainer masks (but the BOS: decoder.h)
    Decoder dec(model, params, bias, dopt);
    const std::vector<uint64_t> chunk_streams(streams.begin() + std::ptrdiff_t(c0), streams.begin() + std::ptrdiff_t(c1));
    if (agentic) {
      std::vector<std::unique_ptr<Environment>> owned;
      std::vector<Environment*> envs;
      for (size_t c = c0; c < c1; ++c) {
        if (items[c]->env.empty()) {
          envs.push_back(nullptr);
          continue;
        }
        auto e = make_environment(items[c]->env, items[c]->state, items[c]->goal);
        MT_CHECK(e.is_ok(), "item {}: {}", items[c]->id, e.status().message());  // validated when read
        owned.push_back(std::move(*e));
        envs.push_back(owned.back().get());
      }
      EpisodeOptions eo;
      eo.max_new_tokens = cfg_.rl.max_new_tokens;
      eo.stop_token = sep_;
      eo.sampling = so;
      for (Episode& e : run_episodes(dec, *codec_, contexts_of(prompts), envs, chunk_streams, eo))
        out.push_back(std::move(e.tokens));
      continue;
    }
    GenerateOptions go;
    go.max_new_tokens = cfg_.rl.max_new_tokens;
    go.stop_token = sep_;
    go.sampling = so;
    go.streams = chunk_streams;
    GenerateResult g = generate(dec, prompts, go);
    for (auto& t : g.tokens) out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::vector<int32_t>> RlFeed::exchange(const std::vector<std::vector<int32_t>>& mine, int64_t n) {
  const int64_t W = world_.size(), M = cfg_.rl.max_new_tokens;
  std::vector<int64_t> counts(static_cast<size_t>(W)), displs(static_cast<size_t>(W));
  for (int64_t r = 0; r < W; ++r) {
    const auto [lo, hi] = share(n, r);
    counts[size_t(r)] = (hi - lo) * M;
    displs[size_t(r)] = lo * M;
  }
  std::vector<float> send, all(static_cast<size_t>(n * M), -1.0f);
  pack_completions(mine, M, send);
  world_.allgatherv(send.data(), counts[size_t(world_.rank())], all.data(), counts.data(), displs.data(), DType::kF32,
                    "all-gather (rollouts)");
  return unpack_completions(all, n, M);
}

struct RlFeed::Pending {
  int64_t iteration = -1;
  std::vector<int64_t> row_item;
  std::vector<float> params, bias;                      // the model they are sampled from (a copy)
  std::future<std::vector<std::vector<int32_t>>> mine;  // this rank's share, in flight
  std::vector<std::vector<int32_t>> all;                // every rank's, once settled
  bool settled = false;
  double seconds = 0;  // generation wall time (written by the generating thread before it returns)
};

RlFeed::RlFeed(const RunConfig& cfg, Comm& world) : cfg_(cfg), world_(world) {}

RlFeed::~RlFeed() {
  if (pending_ && pending_->mine.valid()) pending_->mine.wait();  // the thread reads this feed
}

std::vector<int64_t> RlFeed::rows_of(int64_t iteration) const {
  std::vector<int64_t> row_item(static_cast<size_t>(rows_));
  for (int64_t k = 0; k < rows_; ++k)
    row_item[size_t(k)] = k % G_ == 0 ? item_of(iteration, k / G_) : row_item[size_t(k - 1)];
  return row_item;
}

std::vector<std::vector<int32_t>> RlFeed::generate_share(int64_t iteration, const std::vector<int64_t>& row_item,
                                                         const ModelConfig& model, const float* params,
                                                         const float* bias) {
  const auto [lo, hi] = share(rows_, world_.rank());
  std::vector<const std::vector<int32_t>*> ctx;
  std::vector<const GenItem*> its;
  std::vector<uint64_t> streams;
  for (int64_t k = lo; k < hi; ++k) {
    ctx.push_back(&contexts_[size_t(row_item[size_t(k)])]);
    its.push_back(&items_[size_t(row_item[size_t(k)])]);
    streams.push_back(uint64_t(iteration) * uint64_t(rows_) + uint64_t(k));
  }
  SamplingOptions so;
  so.temperature = cfg_.rl.temperature;
  so.top_p = cfg_.rl.top_p;
  so.seed = cfg_.train.seed;
  return sample(model, params, bias, its, ctx, streams, so);
}

void RlFeed::launch(int64_t iteration, const float* params, const float* bias) {
  auto p = std::make_unique<Pending>();
  p->iteration = iteration;
  p->row_item = rows_of(iteration);  // here: item_of's cache is not the thread's to touch
  p->params.assign(params, params + n_params_);
  if (bias) p->bias.assign(bias, bias + n_bias_);
  Pending* raw = p.get();
  raw->mine = std::async(std::launch::async, [this, raw] {
    set_num_threads(int(cfg_.rl.rollout_threads));  // this thread's own OpenMP team
    PhaseTimer::off_on_this_thread();               // the step's phase breakdown is the training's
    const double t0 = now_seconds();
    auto out = generate_share(raw->iteration, raw->row_item, cfg_.model, raw->params.data(),
                              raw->bias.empty() ? nullptr : raw->bias.data());
    raw->seconds = now_seconds() - t0;
    return out;
  });
  pending_ = std::move(p);
}

void RlFeed::settle_pending() {
  if (!pending_ || pending_->settled) return;
  pending_->all = exchange(pending_->mine.get(), rows_);
  pending_->settled = true;
  pending_->params = {};
  pending_->bias = {};
}

void RlFeed::make_rollouts(int64_t step, const float* params, const float* bias) {
  const double t0 = now_seconds();
  const int64_t it = iteration_of(step);
  int64_t age = 0;
  double ahead = 0;
  if (pending_ && pending_->iteration == it) {  // generated one iteration ago (rl.rollout_lag = 1)
    settle_pending();
    row_item_ = std::move(pending_->row_item);
    completions_ = std::move(pending_->all);
    ahead = pending_->seconds;
    age = 1;
    pending_.reset();
  } else {
    row_item_ = rows_of(it);
    std::vector<std::vector<int32_t>> mine;
    // The off-policy baselines learn from the teacher's samples; every other objective from the model's own.
    if (samples_from_teacher(cfg_.rl.objective))
      teacher_->with_whole_model(
          [&](const float* p, const float* b) { mine = generate_share(it, row_item_, teacher_->model(), p, b); });
    else
      mine = generate_share(it, row_item_, cfg_.model, params, bias);
    completions_ = exchange(mine, rows_);
  }
  iteration_ = it;
  score();
  old_logp_.assign(size_t(rows_ * T_), 0.0f);
  if (ref_) ref_logp_.assign(size_t(rows_ * T_), 0.0f);
  recorded_.assign(size_t(rows_), 0);
  have_logp_ = false;
  log_rollouts(step);
  // The next iteration's rollouts start now, from the model as it is, while this one trains.
  if (cfg_.rl.rollout_lag > 0 && (it + 1) * cfg_.rl.passes < cfg_.train.steps) launch(it + 1, params, bias);
  stats_.seconds = now_seconds() - t0;
  stats_.age = age;
  stats_.ahead_seconds = ahead;
}

std::string RlFeed::completion_text(int64_t k) const {
  std::vector<int32_t> plain;
  for (int32_t t : completions_[size_t(k)]) plain.push_back(token_id(t));
  const bool ended = !plain.empty() && plain.back() == sep_;
  return codec_->decode(plain.data(), int64_t(plain.size()) - (ended ? 1 : 0));
}

RlFeed::Judgement RlFeed::judge(const GenItem& item, const std::vector<int32_t>& completion) const {
  Judgement j;
  std::vector<int32_t> plain;
  for (int32_t t : completion) plain.push_back(token_id(t));
  j.ended = !plain.empty() && plain.back() == sep_;
  const std::string text = codec_->decode(plain.data(), int64_t(plain.size()) - (j.ended ? 1 : 0));
  if (item.env.empty()) {
    const Verdict v = verify(check_of(item), item.answer, text);
    j.correct = v.correct;
    j.well_formed = v.well_formed;
    return j;
  }
  const EpisodeVerdict e = judge_episode(item, text);
  j.well_formed = e.answer.well_formed;
  j.calls = e.calls;
  j.correct = e.correct;
  return j;
}

Status RlFeed::open_rollout_log(const std::string& run_dir) {
  if (!cfg_.rl.write_rollouts || run_dir.empty() || world_.rank() != 0) return Status::ok();
  const std::string path = run_dir + "/rollouts.jsonl";
  run_name_ = std::filesystem::path(run_dir).filename().string();
  std::string kept;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    auto text = read_file(path, "rollout log");
    if (!text) return text.status();
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("iteration")) continue;  // a torn last line
      if (j["iteration"].get<int64_t>() <= iteration_) kept += line + "\n";
    }
  }
  auto log = AppendLog::open(path, kept, default_file_system());
  if (!log) return log.status();
  rollout_log_ = std::move(*log);
  return Status::ok();
}

void RlFeed::log_rollouts(int64_t step) {
  if (!rollout_log_) return;
  const bool teacher = samples_from_teacher(cfg_.rl.objective);
  std::string lines;
  for (int64_t k = 0; k < rows_; ++k) {
    const GenItem& item = items_[size_t(row_item_[size_t(k)])];
    const nlohmann::json j = {{"id", fmt::format("{}-i{}-r{}", run_name_, iteration_, k)},
                              {"text", item.prompt + completion_text(k)},
                              {"outcome", correct_[size_t(k)] ? "success" : "failure"},
                              {"topic", item.family},
                              {"family", item.family},
                              {"item", item.id},
                              {"reward", rewards_[size_t(k)]},
                              {"iteration", iteration_},
                              {"step", step + 1},
                              {"sampler", teacher ? "teacher" : "policy"},
                              {"objective", rl_objective_name(cfg_.rl.objective)},
                              {"run", run_name_}};
    // A sampled byte sequence need not be UTF-8: invalid bytes become U+FFFD, as `data build` repairs them.
    lines += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (Status s = rollout_log_->append(lines); !s)
    fmt::print(stderr, "\n# warning: {}\n", s.message());  // the rollouts train all the same
}

void RlFeed::score() {
  rewards_.assign(size_t(rows_), 0.0);
  correct_.assign(size_t(rows_), 0);
  RolloutStats s;
  s.rollouts = rows_;
  for (int64_t k = 0; k < rows_; ++k) {
    const GenItem& item = items_[size_t(row_item_[size_t(k)])];
    const std::vector<int32_t>& c = completions_[size_t(k)];
    const Judgement v = judge(item, c);
    rewards_[size_t(k)] = v.correct ? 1.0 : 0.0;
    correct_[size_t(k)] = v.correct ? 1 : 0;
    s.reward += rewards_[size_t(k)] / double(rows_);
    s.well_formed += (v.well_formed ? 1.0 : 0.0) / double(rows_);
    s.length += double(c.size()) / double(rows_);
    s.truncated += (v.ended ? 0.0 : 1.0) / double(rows_);
    s.tool_use += (v.calls > 0 ? 1.0 : 0.0) / double(rows_);
  }
  for (int64_t g0 = 0; g0 < rows_; g0 += G_) {
    double lo = 1.0, hi = 0.0;
    for (int64_t i = 0; i < G_; ++i) {
      lo = std::min(lo, rewards_[size_t(g0 + i)]);
      hi = std::max(hi, rewards_[size_t(g0 + i)]);
    }
    s.solved_groups += (hi > 0 ? 1.0 : 0.0) * double(G_) / double(rows_);
    s.zero_signal += (hi == lo ? 1.0 : 0.0) * double(G_) / double(rows_);
  }
  advantages_ = group_advantages(rewards_, G_, cfg_.rl.loss);
  stats_ = s;
}

void RlFeed::fill_row(int64_t index, int64_t T, int64_t stride, int32_t* tokens, float* weights,
                      float* advantages) const {
  MT_CHECK(T == T_ && index >= 0 && index < rows_, "rl row {} of {} (T {} vs {})", index, rows_, T, T_);
  const std::vector<int32_t>& ctx = contexts_[size_t(row_item_[size_t(index)])];
  const std::vector<int32_t>& c = completions_[size_t(index)];
  rollout_row(ctx, c, sep_, stride, tokens);
  // Only what the model wrote trains: an environment's tokens are inputs.
  int64_t written = 0;
  for (int32_t t : c) written += (t & kNoLossBit) == 0 ? 1 : 0;
  const float w = rollout_token_weight(cfg_.rl.loss, rows_, written, cfg_.rl.max_new_tokens);
  rollout_positions(int64_t(ctx.size()), int64_t(c.size()), w, advantages_[size_t(index)], T, weights, advantages);
  for (int64_t t = 0; t < T; ++t)
    if (target_of(tokens[t + 1]) < 0) weights[t] = advantages[t] = 0.0f;
}

bool RlFeed::reference_logp(const int32_t* rows, int64_t n, int64_t stride, float* out) {
  if (!ref_) return false;
  const std::vector<float>& ce = ref_->token_losses(compact_rows(rows, n, stride));
  for (int64_t i = 0; i < n * T_; ++i) out[i] = -ce[size_t(i)];
  return true;
}

void RlFeed::teacher_logp(const int32_t* rows, int64_t n, int64_t stride, float* out) {
  MT_CHECK(teacher_ != nullptr, "teacher forward without a teacher");
  teacher_->logits(compact_rows(rows, n, stride), out);
  log_softmax_rows(out, n * T_, cfg_.model.vocab_size);
}

std::string RlFeed::teacher_identity() const {
  return teacher_ ? fmt::format("{} (parameters xxh64 {})", teacher_->dir(), teacher_->params_hash()) : "";
}

void RlFeed::record(int64_t index, const PolicyTokenStats* stats, const float* ref_lp) {
  for (int64_t t = 0; t < T_; ++t) old_logp_[size_t(index * T_ + t)] = stats[t].logp;
  if (ref_lp && !ref_logp_.empty()) std::copy(ref_lp, ref_lp + T_, ref_logp_.begin() + index * T_);
  recorded_[size_t(index)] = 1;
}

void RlFeed::finish_first_pass() {
  // Each row was recorded by one rank; the sum over ranks (in rank order, of
  // that value and zeros) is the value itself, bit for bit.
  for (std::vector<float>* v : {&old_logp_, &ref_logp_}) {
    if (v->empty()) continue;
    std::vector<double> d(v->begin(), v->end());
    world_.allreduce_sum(d.data(), int64_t(d.size()), "all-reduce (rollout log-probabilities)");
    for (size_t i = 0; i < d.size(); ++i) (*v)[i] = float(d[i]);
  }
  have_logp_ = true;
}

RlEvalStats RlFeed::evaluate(const float* params, const float* bias) {
  const double t0 = now_seconds();
  RlEvalStats e;
  const int64_t n = int64_t(held_out_.size()), k = cfg_.rl.eval_k;
  e.items = n;
  if (n == 0) return e;
  const auto [lo, hi] = share(n, world_.rank());
  std::vector<const std::vector<int32_t>*> greedy_ctx, sample_ctx;
  std::vector<const GenItem*> greedy_items, sample_items;
  std::vector<uint64_t> greedy_streams, sample_streams;
  for (int64_t i = lo; i < hi; ++i) {
    greedy_ctx.push_back(&held_contexts_[size_t(i)]);
    greedy_items.push_back(&held_out_[size_t(i)]);
    greedy_streams.push_back(uint64_t(i));
    for (int64_t j = 0; j < k; ++j) {
      sample_ctx.push_back(&held_contexts_[size_t(i)]);
      sample_items.push_back(&held_out_[size_t(i)]);
      sample_streams.push_back(uint64_t(i * k + j));
    }
  }
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  SamplingOptions so;
  so.temperature = cfg_.rl.temperature;
  so.top_p = cfg_.rl.top_p;
  so.seed = cfg_.train.seed ^ kEvalSeedSalt;
  const auto g = sample(cfg_.model, params, bias, greedy_items, greedy_ctx, greedy_streams, greedy);
  const auto s = sample(cfg_.model, params, bias, sample_items, sample_ctx, sample_streams, so);
  auto correct = [&](int64_t item, const std::vector<int32_t>& c) { return judge(held_out_[size_t(item)], c).correct; };
  int64_t hits[4] = {0, 0, 0, 0};  // greedy, any of k, samples, greedy episodes with a tool call
  for (int64_t i = lo; i < hi; ++i) {
    hits[0] += correct(i, g[size_t(i - lo)]) ? 1 : 0;
    hits[3] += judge(held_out_[size_t(i)], g[size_t(i - lo)]).calls > 0 ? 1 : 0;
    int64_t c = 0;
    for (int64_t j = 0; j < k; ++j) c += correct(i, s[size_t((i - lo) * k + j)]) ? 1 : 0;
    hits[1] += c > 0 ? 1 : 0;
    hits[2] += c;
  }
  world_.allreduce_sum(hits, 4, "all-reduce (held-out pass@k)");
  e.pass1 = double(hits[0]) / double(n);
  e.pass_k = double(hits[1]) / double(n);
  e.sample_acc = double(hits[2]) / double(n * k);
  e.tool_use = double(hits[3]) / double(n);
  e.seconds = now_seconds() - t0;
  return e;
}

std::vector<TensorView> RlFeed::checkpoint_views() const {
  std::vector<TensorView> v;
  if (iteration_ < 0 || world_.rank() != 0) return v;
  const int64_t M = cfg_.rl.max_new_tokens;
  pack_completions(completions_, M, saved_completions_);
  v.push_back({"rl.completions", {rows_, M}, saved_completions_.data()});
  if (pending_ && pending_->settled) {  // generated ahead (rl.rollout_lag = 1; settle_pending ran)
    pack_completions(pending_->all, M, saved_next_);
    v.push_back({"rl.next_completions", {rows_, M}, saved_next_.data()});
  }
  if (have_logp_) {
    v.push_back({"rl.old_logp", {rows_, T_}, old_logp_.data()});
    if (!ref_logp_.empty()) v.push_back({"rl.ref_logp", {rows_, T_}, ref_logp_.data()});
  }
  return v;
}

nlohmann::json RlFeed::state() const {
  nlohmann::json j = {{"iteration", iteration_}, {"have_logp", have_logp_}};
  if (pending_ && pending_->settled) j["next_iteration"] = pending_->iteration;
  j["age"] = stats_.age;
  if (ref_) j["reference"] = {{"dir", ref_->dir()}, {"params_xxh64", ref_->params_hash()}};
  if (teacher_) j["teacher"] = {{"dir", teacher_->dir()}, {"params_xxh64", teacher_->params_hash()}};
  return j;
}

Status RlFeed::restore(const LoadedCheckpoint& ck) {
  if (!ck.state.contains("rl"))
    return Status::errorf("{}: no \"rl\" state in a reinforcement-learning run's checkpoint", ck.dir);
  const nlohmann::json& j = ck.state["rl"];
  if (ref_ && j.contains("reference")) {
    const std::string was = j["reference"].value("params_xxh64", ""), now = ref_->params_hash();
    if (was != now)
      return Status::errorf(
          "{}: the run's reference model changed: {} had parameters xxh64 {}, {} now has {} "
          "(rl.reference)",
          ck.dir, j["reference"].value("dir", ""), was, ref_->dir(), now);
  }
  if (teacher_ && j.contains("teacher")) {
    const std::string was = j["teacher"].value("params_xxh64", ""), now = teacher_->params_hash();
    if (was != now)
      return Status::errorf("{}: the run's teacher changed: {} had parameters xxh64 {}, {} now has {} (rl.teacher)",
                            ck.dir, j["teacher"].value("dir", ""), was, teacher_->dir(), now);
  }
  iteration_ = j.value("iteration", int64_t(-1));
  have_logp_ = j.value("have_logp", false);
  if (iteration_ < 0) return Status::ok();
  const int64_t M = cfg_.rl.max_new_tokens;
  std::vector<float> comp(size_t(rows_ * M));
  MT_RETURN_IF_ERROR(load_into(ck, "rl.completions", {rows_, M}, comp.data()));
  row_item_ = rows_of(iteration_);
  completions_ = unpack_completions(comp, rows_, M);
  pending_.reset();
  if (const int64_t next = j.value("next_iteration", int64_t(-1)); next >= 0) {
    MT_RETURN_IF_ERROR(load_into(ck, "rl.next_completions", {rows_, M}, comp.data()));
    pending_ = std::make_unique<Pending>();
    pending_->iteration = next;
    pending_->row_item = rows_of(next);
    pending_->all = unpack_completions(comp, rows_, M);
    pending_->settled = true;
  }
  score();
  stats_.age = j.value("age", int64_t(0));
  old_logp_.assign(size_t(rows_ * T_), 0.0f);
  if (ref_) ref_logp_.assign(size_t(rows_ * T_), 0.0f);
  recorded_.assign(size_t(rows_), 0);
  if (have_logp_) {
    MT_RETURN_IF_ERROR(load_into(ck, "rl.old_logp", {rows_, T_}, old_logp_.data()));
    if (ref_) MT_RETURN_IF_ERROR(load_into(ck, "rl.ref_logp", {rows_, T_}, ref_logp_.data()));
  }
  return Status::ok();
}

}  // namespace mt
