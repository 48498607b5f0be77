// train_world_of_one_test.cpp — one process is a world of one: the trainer (which now
// always runs the FSDP x EP path through Comm, with a LocalComm, a 1 x 1 mesh
// and a one-rank shard plan) ends bit for bit where the plain single-device
// loop it replaced ends: flat buffers, Transformer::forward_backward over
// them, AdamW::step. Checked on the tiny-test and quickstart architectures.
#include <gtest/gtest.h>

#include "core/file_io.h"
#include "core/hash.h"
#include "core/threads.h"
#include "data/plain_source.h"
#include "model/transformer.h"
#include "model/weights.h"
#include "optim/adamw_optimizer.h"
#include "optim/lr_schedule.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace mt {
namespace {

// The single-process loop as it was before the trainer had one path.
std::string reference_hash(const RunConfig& cfg, int64_t steps) {
  const TrainConfig& tc = cfg.train;
  set_num_threads(int(tc.threads));
  Transformer model(cfg.model, tc.batch_size, tc.seq_len, tc.precision);
  const ParamLayout& L = model.layout();
  std::vector<float> params(L.total()), grads(L.total());
  init_params(params.data(), L, cfg.model, tc.seed);
  AdamW adamw(L, tc.optim);
  PlainSourceOptions so = cfg.data.plain;
  so.vocab_size = cfg.model.vocab_size;
  so.seed = tc.seed;
  so.seq_len = tc.seq_len;
  auto src = PlainSource::open(so);
  EXPECT_TRUE(src.is_ok()) << src.status().message();
  std::vector<int32_t> batch(tc.batch_size * (tc.seq_len + 1));
  for (int64_t step = 0; step < steps; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    for (int64_t micro = 0; micro < tc.grad_accum; ++micro) {
      const int64_t first = (step * tc.grad_accum + micro) * tc.batch_size;
      for (int64_t b = 0; b < tc.batch_size; ++b)
        src.value()->sequence(first + b, tc.seq_len, batch.data() + b * (tc.seq_len + 1));
      model.forward_backward(params.data(), grads.data(), batch.data(), 1.0f / float(tc.grad_accum), nullptr);
    }
    adamw.step(params.data(), grads.data(), learning_rate(tc.schedule, step, tc.steps), step + 1);
  }
  Hasher h;  // Trainer::state_hash's order: parameters, both moments, router biases (none)
  h.update(params.data(), params.size() * sizeof(float));
  h.update(adamw.m().data(), adamw.m().size() * sizeof(float));
  h.update(adamw.v().data(), adamw.v().size() * sizeof(float));
  return hex64(h.digest());
}

std::string trainer_hash(const RunConfig& cfg, int64_t steps) {
  TrainerOptions opt;
  opt.progress = false;
  opt.print_config = false;
  opt.peak_gflops = 1.0;
  auto t = Trainer::create(cfg, opt);
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  if (!t) return "";
  for (int64_t s = 0; s < steps; ++s) t.value()->train_step();
  return t.value()->state_hash();
}

RunConfig preset(const std::string& name, std::vector<std::string> sets) {
  // Synthetic data: the architecture is what matters.
  sets.insert(sets.end(), {"data.path=", "data.dataset=", "data.mixture="});
  sets.push_back("train.threads=2");
  auto cfg = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/" + name, sets);
  EXPECT_TRUE(cfg.is_ok()) << cfg.status().message();
  return cfg.value();
}

TEST(OnePath, WorldOfOneMatchesThePlainLoopBitForBit) {
  for (const RunConfig& cfg : {preset("tiny-test.toml", {}), preset("tiny-test.toml", {"train.grad_accum=2"}),
                               preset("quickstart.toml", {"train.batch_size=2", "train.seq_len=64"})}) {
    SCOPED_TRACE(cfg.source);
    const std::string want = reference_hash(cfg, 4);
    EXPECT_EQ(trainer_hash(cfg, 4), want);
    EXPECT_EQ(want.size(), 16u);
  }
}

}  // namespace
}  // namespace mt
