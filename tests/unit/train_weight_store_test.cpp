// train_weight_store_test.cpp — train/weight_store.h: the tier is chosen once from
// [stream]; a disk store named by stream.store_dir is a per-run subdirectory
// held under a lock, so a second run on the same store is refused with a
// message naming the key (two runs sharing the files ended in SIGBUS,
// issue 44 item 3) while runs with other run directories share the parent;
// the store's files and directory go with it.
#include <gtest/gtest.h>

#include <filesystem>

#include "train/run_config.h"
#include "train/weight_store.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

RunConfig config(const std::vector<std::string>& sets) {
  auto cfg = load_run_config(std::string(MT_SOURCE_DIR) + "/configs/tiny-test.toml", sets);
  EXPECT_TRUE(cfg.is_ok()) << cfg.status().message();
  return cfg.value();
}

std::string fresh_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "weight_store_test_" + name;
  fs::remove_all(d);
  return d;
}

TEST(WeightStore, InPlaceHoldsZerosInMemoryAndReportsNoStreaming) {
  auto s = WeightStore::open(config({}), "", 0, 1, 100);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  WeightStore& w = *s.value();
  EXPECT_EQ(w.tier(), WeightTier::kInPlace);
  EXPECT_FALSE(w.streamed());
  EXPECT_TRUE(w.dir().empty());
  ASSERT_EQ(w.params().size(), 100);
  EXPECT_FALSE(w.params().mapped());
  for (float x : w.grads()) EXPECT_EQ(x, 0.0f);
  StepResult r;
  w.report(StreamStats{100, 100, 1.0, 0, 0, 0}, 5, 6, r);
  EXPECT_EQ(r.compute_memory_bytes, 0);  // the metrics line gets no "stream" section
}

TEST(WeightStore, HostStoreStreamsFromMemory) {
  auto s = WeightStore::open(config({"stream.enabled=true", "stream.store=\"host\""}), "", 0, 1, 10);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s.value()->tier(), WeightTier::kStreamedHost);
  StepResult r;
  s.value()->report(StreamStats{3, 5, 0.5, 0, 0, 0}, 7, 9, r);
  EXPECT_EQ(r.stream_bytes_in, 12);
  EXPECT_EQ(r.stream_bytes_out, 20);
  EXPECT_EQ(r.compute_memory_bytes, 7);
  EXPECT_EQ(r.store_bytes, 9);
}

TEST(WeightStore, NamedStoreDirIsPerRunLockedAndRemovedAfter) {
  const std::string store = fresh_dir("named");
  const RunConfig cfg = config({"stream.enabled=true", "stream.store=\"disk\"", "stream.store_dir=\"" + store + "\""});
  auto a = WeightStore::open(cfg, store + "/../runs/a", 0, 1, 1000);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  const std::string dir_a = a.value()->dir();
  EXPECT_EQ(fs::path(dir_a).parent_path(), fs::path(store));
  EXPECT_EQ(fs::path(dir_a).filename().string().rfind("a-", 0), 0u) << dir_a;
  EXPECT_TRUE(a.value()->params().mapped());
  EXPECT_TRUE(fs::exists(dir_a + "/params.f32"));
  a.value()->params()[999] = 3.0f;

  // Another run directory: its own subdirectory, no conflict.
  auto b = WeightStore::open(cfg, store + "/../runs/b", 0, 1, 1000);
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  EXPECT_NE(b.value()->dir(), dir_a);

  // The same run directory again (a second process on the same run): refused,
  // naming the key, and the first store's files are untouched.
  auto again = WeightStore::open(cfg, store + "/../runs/a", 0, 1, 1000);
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.status().message().find("stream.store_dir"), std::string::npos) << again.status().message();
  EXPECT_NE(again.status().message().find("in use by another run"), std::string::npos) << again.status().message();
  EXPECT_EQ(a.value()->params()[999], 3.0f);
  EXPECT_TRUE(fs::exists(dir_a + "/params.f32"));

  a.value().reset();
  EXPECT_FALSE(fs::exists(dir_a)) << "the store's scratch files were left behind";
  auto reopened = WeightStore::open(cfg, store + "/../runs/a", 0, 1, 1000);
  EXPECT_TRUE(reopened.is_ok()) << reopened.status().message();
}

TEST(WeightStore, RanksOfOneRunShareItsDirectoryInSubdirectories) {
  const std::string store = fresh_dir("ranks");
  const RunConfig cfg = config({"stream.enabled=true", "stream.store=\"disk\"", "stream.store_dir=\"" + store + "\""});
  auto r0 = WeightStore::open(cfg, store + "/../run", 0, 2, 10);
  auto r1 = WeightStore::open(cfg, store + "/../run", 1, 2, 10);
  ASSERT_TRUE(r0.is_ok()) << r0.status().message();
  ASSERT_TRUE(r1.is_ok()) << r1.status().message();
  EXPECT_EQ(fs::path(r0.value()->dir()).parent_path(), fs::path(r1.value()->dir()).parent_path());
  const fs::path run = fs::path(r0.value()->dir()).parent_path();
  r0.value().reset();
  EXPECT_TRUE(fs::exists(run));  // rank 1 still holds its part
  r1.value().reset();
  EXPECT_FALSE(fs::exists(run));
}

TEST(WeightStore, DefaultDiskStoreLivesInTheRunDirectory) {
  const std::string run = fresh_dir("default");
  auto s = WeightStore::open(config({"stream.enabled=true", "stream.store=\"disk\""}), run, 0, 1, 10);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s.value()->dir(), run + "/stream_store");
  auto second = WeightStore::open(config({"stream.enabled=true", "stream.store=\"disk\""}), run, 0, 1, 10);
  EXPECT_FALSE(second.is_ok());
}

}  // namespace
}  // namespace mt
