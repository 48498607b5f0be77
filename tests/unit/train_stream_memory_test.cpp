// train_stream_memory_test.cpp — weight streaming's memory claim measured from the
// heap, in process: with the disk store (parameters, gradients and AdamW
// moments in memory-mapped files), creating the trainer and taking steps
// grows the heap by the compute memory the trainer reports (activations and
// layer buffers) and little else, while the store is over 4x that; with the
// host store the heap holds the store too. The high-water mark is sampled
// after creation and after every step (the buffers are allocated once, so a
// step that allocated more would show).
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <iostream>

#include "core/threads.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace mt {
namespace {

double heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return double(m.uordblks + m.hblkhd);
}

RunConfig big_model(const std::string& store) {
  auto cfg = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml",
                             {"model.n_layers=20", "model.n_experts=16", "model.d_expert=128", "train.batch_size=2",
                              "train.seq_len=16", "train.threads=1", "train.steps=3", "stream.enabled=true",
                              "stream.store=\"" + store + "\"", "stream.store_dir=\"" + ::testing::TempDir() +
                                  "train_stream_memory_test\""});
  EXPECT_TRUE(cfg.is_ok()) << cfg.status().message();
  return cfg.value();
}

TrainerOptions quiet() {
  TrainerOptions opt;
  opt.progress = false;
  opt.print_config = false;
  opt.peak_gflops = 1.0;
  return opt;
}

TEST(StreamMemory, DiskStoreHeapIsTheComputeMemory) {
  const TrainerOptions opt = quiet();
  const double before = heap_in_use();
  auto t = Trainer::create(big_model("disk"), opt);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  double high = heap_in_use() - before;
  StepResult last;
  for (int s = 0; s < 3; ++s) {
    last = t.value()->train_step();
    high = std::max(high, heap_in_use() - before);
  }
  const double compute = double(last.compute_memory_bytes), store = double(last.store_bytes);
  std::cout << "[stream] heap high-water " << high / 1e6 << " MB, compute memory " << compute / 1e6
            << " MB, store " << store / 1e6 << " MB\n";
  ASSERT_GT(compute, 0.0);
  EXPECT_GE(store, 4.0 * compute);
  // The heap holds the compute memory plus bookkeeping (layout, shard plan, data source, optimizer pieces):
  // a few MB, far below the 131 MB store.
  EXPECT_GE(high, compute);
  EXPECT_LE(high, compute + 8e6) << "compute " << compute << ", store " << store;
  EXPECT_LT(high, store / 4);
}

TEST(StreamMemory, HostStoreHeapHoldsTheStoreToo) {
  const TrainerOptions opt = quiet();
  const double before = heap_in_use();
  auto t = Trainer::create(big_model("host"), opt);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  const StepResult r = t.value()->train_step();
  const double grown = heap_in_use() - before;
  EXPECT_GE(grown, double(r.compute_memory_bytes + r.store_bytes));
}

}  // namespace
}  // namespace mt
