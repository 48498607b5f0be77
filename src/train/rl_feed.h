// rl_feed.h — what a reinforcement-learning run trains on: GRPO's rollouts
// (Shao et al. 2024). The trainer owns one when rl.enabled and asks it for
// each step's rows instead of the data's. Every rl.passes steps form one
// iteration: the iteration's prompts (rows / rl.group_size task items of
// data.sft, in a Philox order per epoch) are rolled out rl.group_size times
// each by the current model, each completion is rewarded by its item's
// verifier (train/verifier.h: 1 if correct, else 0), rewards become group-
// relative advantages (train/rollouts.h), and the passes are optimizer steps
// on that batch, with PPO's ratio against the log-probabilities the first
// pass recorded.
//
// Deterministic and world-size independent where it can be: rollout k of
// iteration i is sampled on stream (i x rows + k) of train.seed, so it is the
// same on whichever rank or in whichever batch it is generated; the ranks
// split the rollouts, generate their share with the KV-cache decoder
// (dropless), and exchange them. The buffer (completions, the first pass's
// log-probabilities and the reference's) is saved in checkpoints, so a run
// resumed in the middle of an iteration trains on the same rollouts.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm.h"
#include "ckpt/checkpoint.h"
#include "core/status.h"
#include "model/sampling.h"
#include "model/transformer.h"
#include "dist/mesh.h"
#include "train/frozen_model.h"
#include "train/gen_tasks.h"
#include "train/inference_model.h"
#include "rundir/append_log.h"
#include "train/run_config.h"

namespace mt {

// One iteration's rollouts, as the metrics report them.
struct RolloutStats {
  int64_t rollouts = 0;
  double reward = 0;         // mean reward (= accuracy of the samples)
  double well_formed = 0;    // share whose answer line reads as the check's kind
  double length = 0;         // mean completion tokens
  double truncated = 0;      // share that ran out of rl.max_new_tokens
  double solved_groups = 0;  // share of prompts with at least one correct completion
  double zero_signal = 0;    // share of prompts whose completions all scored alike (no gradient)
  double tool_use = 0;       // share of rollouts with at least one tool call (agentic items)
  double seconds = 0;        // wall time the step spent on them (generation, exchange, verification)
  int64_t age = 0;           // iterations since the start of the model that sampled them (rl.rollout_lag)
  double ahead_seconds = 0;  // generation wall time in the background (age 1; overlapped with training)
};

// Held-out evaluation: greedy pass@1, and pass@k from rl.eval_k samples.
struct RlEvalStats {
  int64_t items = 0;
  double pass1 = 0, pass_k = 0, sample_acc = 0;  // sample_acc: mean accuracy of the k samples
  double tool_use = 0;                           // share of greedy episodes with a tool call
  double seconds = 0;
};

class RlFeed {
 public:
  // local_batch / batch_offset: this rank's rows of each micro-batch, as the trainer splits them.
  // shape: the policy's mesh, which a sharded reference or teacher follows (train/frozen_model.h).
  ~RlFeed();
  static Result<std::unique_ptr<RlFeed>> open(const RunConfig& cfg, Comm& world, const MeshShape& shape,
                                              int64_t local_batch);

  int64_t rows() const { return rows_; }  // rollouts per iteration (the global batch)
  int64_t iteration_of(int64_t step) const { return step / cfg_.rl.passes; }
  bool first_pass(int64_t step) const { return step % cfg_.rl.passes == 0; }
  // Whether the buffer holds step's iteration's rollouts (and, past its first pass, their log-probabilities).
  bool holds(int64_t step) const { return iteration_ == iteration_of(step) && (first_pass(step) || have_logp_); }
  // Collective: the rollouts of step's iteration from the model (its full
  // parameters, layout order, and router biases or null).
  void make_rollouts(int64_t step, const float* params, const float* bias);
  const RolloutStats& rollout_stats() const { return stats_; }
  // Collective (before a checkpoint, rl.rollout_lag = 1): waits for the
  // rollouts being generated ahead and gives every rank all of them.
  void settle_pending();

  // Row `index` of the global batch: its tokens (stride apart in the
  // trainer's batch), and its T positions' weights and advantages.
  void fill_row(int64_t index, int64_t T, int64_t stride, int32_t* tokens, float* weights, float* advantages) const;
  // The first pass's log-probabilities of row `index` (T floats; past the first pass) and the reference's.
  const float* old_logp(int64_t index) const { return old_logp_.data() + index * T_; }
  const float* ref_logp(int64_t index) const { return ref_logp_.empty() ? nullptr : ref_logp_.data() + index * T_; }
  // The reference's log-probabilities of `rows` (n rows of stride tokens)
  // into out (n x T), or false without a reference (rl.kl_beta = 0).
  bool reference_logp(const int32_t* rows, int64_t n, int64_t stride, float* out);
  // Distillation: the teacher's log-probabilities over the vocabulary at
  // every position of `rows` (n rows of stride tokens) into out (n x T x V).
  void teacher_logp(const int32_t* rows, int64_t n, int64_t stride, float* out);
  // First pass: what the policy gave row `index`'s positions, and the reference's.
  void record(int64_t index, const PolicyTokenStats* stats, const float* ref_lp);
  // Collective, after the first pass: every rank's recorded rows to all.
  void finish_first_pass();

  // rl.write_rollouts (rank 0): RUN_DIR/rollouts.jsonl, rewritten to the
  // iterations the buffer has generated (a resume drops the lines of an
  // iteration generated after the checkpoint; it is generated again, the same).
  Status open_rollout_log(const std::string& run_dir);

  // Collective: held-out pass@1 / pass@k of the model.
  RlEvalStats evaluate(const float* params, const float* bias);
  bool has_held_out() const { return !held_out_.empty(); }

  // The buffer in checkpoints: tensors (rank 0 writes them; every rank holds
  // them) and the iteration in the state JSON.
  std::vector<TensorView> checkpoint_views() const;
  nlohmann::json state() const;
  Status restore(const LoadedCheckpoint& ck);
  // "DIR (parameters xxh64 H)" of the teacher, or "" without one: the run records who taught it.
  std::string teacher_identity() const;
  // How the teacher and the reference are held across ranks ("" without one; train/frozen_model.h).
  std::string teacher_layout() const { return teacher_ ? teacher_->layout_description() : ""; }
  std::string reference_layout() const { return ref_ ? ref_->layout_description() : ""; }

 private:
  RlFeed(const RunConfig& cfg, Comm& world);
  // Context (separator + prompt ids) of the prompt slot `p` of iteration i.
  int64_t item_of(int64_t iteration, int64_t p) const;
  std::vector<int64_t> rows_of(int64_t iteration) const;  // the item of each rollout of an iteration
  // This rank's share of an iteration's rollouts (rows row_item), sampled from the model given.
  std::vector<std::vector<int32_t>> generate_share(int64_t iteration, const std::vector<int64_t>& row_item,
                                                   const ModelConfig& model, const float* params, const float* bias);
  // rl.rollout_lag = 1: starts generating iteration's rollouts from a copy of the model.
  void launch(int64_t iteration, const float* params, const float* bias);
  mutable int64_t order_epoch_ = -1;    // the epoch order_ holds
  mutable std::vector<int64_t> order_;  // item_of's permutation of the items for that epoch
  const int32_t* compact_rows(const int32_t* rows, int64_t n, int64_t stride);
  // Generates completions of contexts[i] on streams[i]; sampling options as given.
  // Items with an environment run as episodes (train/episodes.h): their
  // completions hold the environment's tokens, flagged no-loss.
  std::vector<std::vector<int32_t>> sample(const ModelConfig& model, const float* params, const float* bias,
                                           const std::vector<const GenItem*>& items,
                                           const std::vector<const std::vector<int32_t>*>& contexts,
                                           const std::vector<uint64_t>& streams, const SamplingOptions& so);
  // Rank r's share [lo, hi) of n things.
  std::pair<int64_t, int64_t> share(int64_t n, int64_t r) const;
  // Every rank's completions of its share (max_new_tokens wide) to all.
  std::vector<std::vector<int32_t>> exchange(const std::vector<std::vector<int32_t>>& mine, int64_t n);
  void score();  // rewards and advantages of the buffer's completions
  // An item's completion judged: its verifier on the final answer (after the
  // last tool result), and an environment's goal replayed over its calls.
  struct Judgement {
    bool correct = false, well_formed = false, ended = false;
    int64_t calls = 0;
  };
  Judgement judge(const GenItem& item, const std::vector<int32_t>& completion) const;
  void log_rollouts(int64_t step);               // the buffer's rollouts to the rollout log
  std::string completion_text(int64_t k) const;  // rollout k's completion, without its end-of-document id

  RunConfig cfg_;
  Comm& world_;
  std::unique_ptr<TextCodec> codec_;
  int32_t sep_ = -1;
  int64_t rows_ = 0, G_ = 0, T_ = 0, stride_ = 0;
  std::vector<GenItem> items_, held_out_;
  std::vector<std::vector<int32_t>> contexts_, held_contexts_;  // per item: separator + prompt ids
  // The buffer: iteration_'s completions, rewards, advantages, log-probabilities.
  int64_t iteration_ = -1;
  bool have_logp_ = false;
  std::vector<int64_t> row_item_;                  // (rows) the item of each rollout
  std::vector<std::vector<int32_t>> completions_;  // (rows)
  std::vector<double> rewards_;
  std::vector<float> advantages_, old_logp_, ref_logp_;  // (rows), (rows x T), (rows x T)
  std::vector<char> recorded_;                           // (rows): this rank recorded the row in the first pass
  int64_t n_params_ = 0, n_bias_ = 0;                    // the policy's flat parameters and router biases
  struct Pending;                                        // the next iteration's rollouts, generated ahead
  std::unique_ptr<Pending> pending_;
  RolloutStats stats_;
  // The frozen reference (rl.kl_beta > 0) and the teacher (distillation objectives).
  std::unique_ptr<FrozenModel> ref_, teacher_;
  std::vector<int32_t> ref_rows_;
  std::unique_ptr<AppendLog> rollout_log_;
  std::string run_name_;
  std::vector<char> correct_;  // (rows): the verifier's verdict of each rollout
  // Checkpoint tensors' staging (float copies).
  mutable std::vector<float> saved_completions_, saved_next_;
};

}  // namespace mt
