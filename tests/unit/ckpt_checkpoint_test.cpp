// ckpt_checkpoint_test.cpp — round trips are bit-exact; corruption (flipped byte,
// truncation, bad manifest) is detected and skipped; an injected failure at
// any point of a write leaves the previous checkpoint as the latest.
#include "ckpt/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "support/faulty_file_system.h"

namespace mt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FaultyFileSystem;

using Tensors = std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>;

// Deterministic values plus the floats that catch sloppy copies: -0, NaN
// with a payload, infinity, a denormal.
Tensors make_tensors(uint32_t seed) {
  Tensors t;
  auto fill = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) {
      seed = seed * 1664525u + 1013904223u;
      v[i] = static_cast<float>(static_cast<int32_t>(seed)) * 1e-9f;
    }
    t[name] = {std::move(shape), std::move(v)};
  };
  fill("embed", {5, 3});
  fill("layers.0.w", {4, 4});
  fill("norm", {7});
  fill("scalar", {});
  fill("empty", {0, 3});
  std::vector<float>& w = t["layers.0.w"].second;
  uint32_t nan_bits = 0x7fc01234u;
  std::memcpy(&w[0], &nan_bits, 4);
  w[1] = -0.0f;
  w[2] = std::numeric_limits<float>::infinity();
  w[3] = std::numeric_limits<float>::denorm_min();
  return t;
}

std::vector<TensorView> views(const Tensors& t) {
  std::vector<TensorView> v;
  for (const auto& [name, st] : t) v.push_back({name, st.first, st.second.data()});
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expect_matches(const LoadedCheckpoint& c, const Tensors& want) {
  ASSERT_EQ(c.tensors.size(), want.size());
  for (const auto& [name, st] : want) {
    auto it = c.tensors.find(name);
    ASSERT_NE(it, c.tensors.end()) << name;
    EXPECT_EQ(it->second.shape, st.first) << name;
    EXPECT_TRUE(same_bits(it->second.data, st.second)) << name;
  }
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mt_ckpt_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    root_ = tmp_ + "/ckpts";
  }
  void TearDown() override { fs::remove_all(tmp_); }

  std::string dir(int64_t step) const { return root_ + "/" + checkpoint_dir_name(step); }

  void write(int64_t step, const Tensors& t, int64_t keep_last = 0) {
    Status s = write_checkpoint(root_, step, views(t), kConfig, json{{"step", step}}, keep_last);
    ASSERT_TRUE(s) << s.message();
  }

  // Byte range of tensor `name` inside its file, from the manifest.
  std::pair<int64_t, int64_t> byte_range(int64_t step, const std::string& name) {
    json m = read_json(dir(step) + "/manifest.json");
    for (const json& t : m["tensors"]) {
      if (t["name"] == name) return {t["pieces"][0]["byte_range"][0], t["pieces"][0]["byte_range"][1]};
    }
    ADD_FAILURE() << "no tensor " << name;
    return {0, 0};
  }

  void flip_byte(const std::string& path, int64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(offset);
    char c;
    f.read(&c, 1);
    c ^= 0x10;
    f.seekp(offset);
    f.write(&c, 1);
  }

  std::string latest() {
    auto r = find_latest_checkpoint(root_);
    return r ? *r : "error: " + r.status().message();
  }

  static constexpr const char* kConfig = "[model]\nd_model = 64\n[train]\nlr = 3e-4\n";
  std::string tmp_, root_;
};

TEST_F(CheckpointTest, RoundTripIsBitExact) {
  const Tensors t = make_tensors(1);
  const json state = {{"rng", {{"seed", 1234}, {"counter", 987654321012345ull}}},
                      {"data", {{"position", 4096}, {"epoch", 0}}},
                      {"loss", 2.718281828459045}};
  ASSERT_TRUE(write_checkpoint(root_, 7, views(t), kConfig, state, 0));
  EXPECT_EQ(latest(), dir(7));

  auto c = read_checkpoint(dir(7));
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(c->step, 7);
  EXPECT_EQ(c->config_toml, kConfig);
  EXPECT_EQ(c->state, state);
  expect_matches(*c, t);
  EXPECT_EQ(c->tensor_hash, compute_tensor_hash(views(t)));
  EXPECT_EQ(c->tensor_hash, compute_tensor_hash(*c));

  // The manifest lists the file with its real size, and nothing is left staged.
  json m = read_json(dir(7) + "/manifest.json");
  EXPECT_EQ(m["format_version"], 1);
  EXPECT_EQ(m["files"][0]["name"], "rank_00000.safetensors");
  EXPECT_EQ(m["files"][0]["bytes"].get<int64_t>(),
            static_cast<int64_t>(fs::file_size(dir(7) + "/rank_00000.safetensors")));
  for (const auto& e : fs::directory_iterator(root_)) {
    EXPECT_EQ(e.path().filename().string(), "step_00000007");
  }

  auto info = inspect_checkpoint(dir(7));
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_EQ((*info)["step"], 7);
  EXPECT_EQ((*info)["tensor_hash"], c->tensor_hash);
  ASSERT_EQ((*info)["tensors"].size(), t.size());
  EXPECT_EQ((*info)["tensors"][0]["name"], "embed");
  EXPECT_EQ((*info)["tensors"][0]["shape"], json({5, 3}));
}

// The tensor file is plain safetensors: readable without our reader.
TEST_F(CheckpointTest, TensorFileIsSafetensors) {
  const Tensors t = make_tensors(2);
  write(1, t);
  std::ifstream in(dir(1) + "/rank_00000.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  json h = json::parse(bytes.substr(8, n));
  EXPECT_EQ(h["__metadata__"]["format"], "moetrain");
  for (const auto& [name, st] : t) {
    const json& e = h.at(name);
    EXPECT_EQ(e["dtype"], "F32");
    EXPECT_EQ(e["shape"].get<std::vector<int64_t>>(), st.first);
    const int64_t b = e["data_offsets"][0], end = e["data_offsets"][1];
    ASSERT_EQ(end - b, static_cast<int64_t>(st.second.size() * 4)) << name;
    EXPECT_EQ(std::memcmp(bytes.data() + 8 + n + b, st.second.data(), end - b), 0) << name;
  }
}

TEST_F(CheckpointTest, KeepLastDeletesOldest) {
  for (int64_t s = 1; s <= 5; ++s) write(s, make_tensors(s), 2);
  EXPECT_FALSE(fs::exists(dir(1)));
  EXPECT_FALSE(fs::exists(dir(2)));
  EXPECT_FALSE(fs::exists(dir(3)));
  EXPECT_TRUE(fs::exists(dir(4)));
  EXPECT_TRUE(fs::exists(dir(5)));
  // An older step written later is never the one deleted.
  write(3, make_tensors(3), 2);
  EXPECT_TRUE(fs::exists(dir(3)));
  EXPECT_TRUE(fs::exists(dir(4)));
  EXPECT_TRUE(fs::exists(dir(5)));
  write(6, make_tensors(6), 2);
  EXPECT_FALSE(fs::exists(dir(3)));
  EXPECT_FALSE(fs::exists(dir(4)));
  EXPECT_EQ(latest(), dir(6));
  size_t entries = std::distance(fs::directory_iterator(root_), fs::directory_iterator());
  EXPECT_EQ(entries, 2u);  // step_5, step_6; no leftover .tmp-delete dirs
}

TEST_F(CheckpointTest, FlippedByteIsDetectedAndSkipped) {
  const Tensors t1 = make_tensors(1);
  write(1, t1);
  write(2, make_tensors(2));
  const auto [b, e] = byte_range(2, "layers.0.w");
  flip_byte(dir(2) + "/rank_00000.safetensors", b + 21);

  auto c = read_checkpoint(dir(2));
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find("rank_00000.safetensors"), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find("'layers.0.w'"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("checksum"), std::string::npos) << c.status().message();
  EXPECT_FALSE(verify_checkpoint(dir(2)));
  EXPECT_FALSE(inspect_checkpoint(dir(2)));

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(latest(), dir(1));
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find(dir(2)), std::string::npos) << warning;
  EXPECT_NE(warning.find("layers.0.w"), std::string::npos) << warning;

  auto c1 = read_checkpoint(latest());
  ASSERT_TRUE(c1) << c1.status().message();
  expect_matches(*c1, t1);
}

TEST_F(CheckpointTest, FlippedHeaderByteIsDetected) {
  write(1, make_tensors(1));
  write(2, make_tensors(2));
  flip_byte(dir(2) + "/rank_00000.safetensors", 12);  // inside the JSON header
  auto c = read_checkpoint(dir(2));
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find("rank_00000.safetensors"), std::string::npos)
      << c.status().message();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(latest(), dir(1));
  ::testing::internal::GetCapturedStderr();
}

TEST_F(CheckpointTest, TruncatedFileIsDetectedAndSkipped) {
  const Tensors t1 = make_tensors(1);
  write(1, t1);
  write(2, make_tensors(2));
  const std::string file = dir(2) + "/rank_00000.safetensors";
  const auto [b, e] = byte_range(2, "scalar");  // last in name order, so last in the file
  fs::resize_file(file, e - 2);

  auto c = read_checkpoint(dir(2));
  ASSERT_FALSE(c);
  const std::string msg = c.status().message();
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'scalar'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'norm'"), std::string::npos) << msg;  // still complete

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(latest(), dir(1));
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("truncated"), std::string::npos);
  auto c1 = read_checkpoint(dir(1));
  ASSERT_TRUE(c1);
  expect_matches(*c1, t1);
}

TEST_F(CheckpointTest, CorruptedManifestIsSkipped) {
  write(1, make_tensors(1));
  write(2, make_tensors(2));
  write(3, make_tensors(3));
  // Step 3: cut mid-JSON. Step 2: still valid JSON, but one value edited.
  const std::string m3 = dir(3) + "/manifest.json";
  fs::resize_file(m3, fs::file_size(m3) / 2);
  json m2 = read_json(dir(2) + "/manifest.json");
  m2["state"]["step"] = 99;
  std::ofstream(dir(2) + "/manifest.json") << m2.dump(2);

  auto c3 = read_checkpoint(dir(3));
  ASSERT_FALSE(c3);
  EXPECT_NE(c3.status().message().find(m3), std::string::npos) << c3.status().message();
  auto c2 = read_checkpoint(dir(2));
  ASSERT_FALSE(c2);
  EXPECT_NE(c2.status().message().find("manifest checksum mismatch"), std::string::npos)
      << c2.status().message();

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(latest(), dir(1));
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warnings.find(dir(3)), std::string::npos) << warnings;
  EXPECT_NE(warnings.find(dir(2)), std::string::npos) << warnings;

  // A missing manifest is skipped the same way; with nothing valid left, an error.
  fs::remove(dir(1) + "/manifest.json");
  ::testing::internal::CaptureStderr();
  auto none = find_latest_checkpoint(root_);
  ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(none);
  EXPECT_NE(none.status().message().find(root_), std::string::npos);
}

TEST_F(CheckpointTest, RenamedDirectoryIsSkipped) {
  write(1, make_tensors(1));
  write(2, make_tensors(2));
  fs::rename(dir(2), dir(9));  // manifest says step 2
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(latest(), dir(1));
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("does not match"), std::string::npos);
}

TEST_F(CheckpointTest, UncommittedTmpDirIsIgnoredThenCleaned) {
  write(1, make_tensors(1));
  // A complete, valid checkpoint for a later step that was never renamed.
  const std::string staged = root_ + "/.tmp-step_00000005-4242";
  fs::create_directories(staged);
  fs::copy(dir(1), staged);
  EXPECT_EQ(latest(), dir(1));
  write(2, make_tensors(2));
  EXPECT_FALSE(fs::exists(staged));
  EXPECT_EQ(latest(), dir(2));
}

TEST_F(CheckpointTest, ReplacesExistingStep) {
  write(3, make_tensors(1));
  const Tensors t = make_tensors(2);
  write(3, t);
  auto c = read_checkpoint(latest());
  ASSERT_TRUE(c) << c.status().message();
  expect_matches(*c, t);
  size_t entries = std::distance(fs::directory_iterator(root_), fs::directory_iterator());
  EXPECT_EQ(entries, 1u);
}

// The brief's scenario: the write of checkpoint N+1 dies after K bytes.
TEST_F(CheckpointTest, WriteFailureAfterKBytesKeepsPreviousCheckpoint) {
  const Tensors t1 = make_tensors(1), t2 = make_tensors(2);
  write(1, t1);
  FaultyFileSystem counter;
  ASSERT_TRUE(write_checkpoint(tmp_ + "/count", 2, views(t2), kConfig, json{}, 0, counter));
  const int64_t total = counter.bytes;
  ASSERT_GT(total, 1000);
  for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{100}, total / 3,
                    total / 2, total - 1000, total - 1}) {
    FaultyFileSystem faulty;
    faulty.byte_budget = k;
    Status s = write_checkpoint(root_, 2, views(t2), kConfig, json{}, 1, faulty);
    ASSERT_FALSE(s) << "k=" << k;
    EXPECT_NE(s.message().find("injected write failure"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("step 2"), std::string::npos) << s.message();
    EXPECT_FALSE(fs::exists(dir(2))) << "k=" << k;
    ASSERT_EQ(latest(), dir(1)) << "k=" << k;
    auto c = read_checkpoint(dir(1));
    ASSERT_TRUE(c) << c.status().message();
    expect_matches(*c, t1);
  }
  write(2, t2, 1);
  EXPECT_EQ(latest(), dir(2));
  EXPECT_FALSE(fs::exists(dir(1)));
}

// Every file-system operation of a write, failed in turn: each failure is
// reported and leaves the previous checkpoint (here: step 2 being replaced,
// and step 1) exactly as it was.
TEST_F(CheckpointTest, FailureAtEveryOperationIsSafe) {
  const Tensors t1 = make_tensors(1), t2 = make_tensors(2), t2b = make_tensors(3);
  write(1, t1);
  write(2, t2);
  int64_t failures = 0;
  for (int64_t op = 1;; ++op) {
    ASSERT_LT(op, 200) << "write never succeeded";
    FaultyFileSystem faulty;
    faulty.fail_at_op = op;
    Status s = write_checkpoint(root_, 2, views(t2b), kConfig, json{}, 0, faulty);
    if (s) break;
    ++failures;
    EXPECT_NE(s.message().find("injected failure"), std::string::npos) << s.message();
    ASSERT_EQ(latest(), dir(2)) << "op " << op << ": " << s.message();
    auto c = read_checkpoint(dir(2));
    ASSERT_TRUE(c) << c.status().message();
    expect_matches(*c, t2);
  }
  EXPECT_GT(failures, 10);
  auto c = read_checkpoint(latest());
  ASSERT_TRUE(c);
  expect_matches(*c, t2b);
  auto c1 = read_checkpoint(dir(1));
  ASSERT_TRUE(c1);
  expect_matches(*c1, t1);
}

TEST_F(CheckpointTest, TensorHashIsStableAndSensitive) {
  Tensors t = make_tensors(1);
  const std::string h = compute_tensor_hash(views(t));
  EXPECT_EQ(h.size(), 16u);
  EXPECT_EQ(h, compute_tensor_hash(views(t)));

  // The definition, computed independently: name, 0 byte, data, in name order.
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  for (const auto& [name, s] : t) {  // std::map: name order
    XXH64_update(st, name.c_str(), name.size() + 1);
    XXH64_update(st, s.second.data(), s.second.size() * 4);
  }
  char want[17];
  std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(XXH64_digest(st)));
  XXH64_freeState(st);
  EXPECT_EQ(h, want);

  // Pinned: a change here breaks comparisons with existing checkpoints.
  const std::vector<float> a = {1.0f, -2.5f}, b = {3.0f};
  EXPECT_EQ(compute_tensor_hash({{"b", {1}, b.data()}, {"a", {2}, a.data()}}), "27e1d9cddf0f583e");
  std::string stream("a\0", 2);
  stream.append(reinterpret_cast<const char*>(a.data()), 8).append("b\0", 2);
  stream.append(reinterpret_cast<const char*>(b.data()), 4);
  EXPECT_EQ(XXH64(stream.data(), stream.size(), 0), 0x27e1d9cddf0f583eull);

  // Same data at another step, with other state: same hash on disk.
  write(1, t);
  ASSERT_TRUE(write_checkpoint(root_, 2, views(t), "other", json{{"x", 1}}, 0));
  auto i1 = inspect_checkpoint(dir(1)), i2 = inspect_checkpoint(dir(2));
  ASSERT_TRUE(i1 && i2);
  EXPECT_EQ((*i1)["tensor_hash"], h);
  EXPECT_EQ((*i2)["tensor_hash"], h);

  // One value, one ulp: a different hash.
  float& x = t["norm"].second[3];
  x = std::nextafter(x, 1.0f);
  EXPECT_NE(compute_tensor_hash(views(t)), h);
  write(3, t);
  auto i3 = inspect_checkpoint(dir(3));
  ASSERT_TRUE(i3);
  EXPECT_NE((*i3)["tensor_hash"], h);
  EXPECT_EQ((*i3)["tensor_hash"], compute_tensor_hash(views(t)));
}

TEST_F(CheckpointTest, LoadIntoChecksNameAndShape) {
  const Tensors t = make_tensors(1);
  write(1, t);
  auto c = read_checkpoint(dir(1));
  ASSERT_TRUE(c);

  std::vector<float> buf(16, 0.0f);
  ASSERT_TRUE(load_into(*c, "layers.0.w", {4, 4}, buf.data()));
  EXPECT_TRUE(same_bits(buf, t.at("layers.0.w").second));

  Status s = load_into(*c, "layers.0.w", {2, 8}, buf.data());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'layers.0.w'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[4, 4]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[2, 8]"), std::string::npos) << s.message();

  s = load_into(*c, "layers.1.w", {4, 4}, buf.data());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'layers.1.w' is not in the checkpoint"), std::string::npos)
      << s.message();

  // A shard: elements [5, 11) of the flattened tensor.
  std::vector<float> part(6);
  ASSERT_TRUE(load_range_into(*c, "layers.0.w", 5, 6, part.data()));
  EXPECT_EQ(std::memcmp(part.data(), t.at("layers.0.w").second.data() + 5, 24), 0);
  s = load_range_into(*c, "layers.0.w", 12, 6, part.data());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'layers.0.w'"), std::string::npos) << s.message();
}

// Two ranks, each holding a contiguous half of every flattened tensor (FSDP).
TEST_F(CheckpointTest, ShardedWriteMatchesSingleRank) {
  const Tensors t = make_tensors(4);
  write(1, t);
  auto staging = begin_checkpoint(root_, 2);
  ASSERT_TRUE(staging) << staging.status().message();
  std::vector<ShardFile> shards;
  for (int64_t rank = 0; rank < 2; ++rank) {
    std::vector<TensorView> pieces;
    for (const auto& [name, st] : t) {
      const int64_t n = static_cast<int64_t>(st.second.size()), half = n / 2;
      const int64_t off = rank == 0 ? 0 : half, count = rank == 0 ? half : n - half;
      if (count > 0) pieces.push_back({name, st.first, st.second.data() + off, off, count});
      if (n == 0 && rank == 0) pieces.push_back({name, st.first, nullptr, 0, 0});
    }
    auto shard = write_shard_file(*staging, {rank, 2}, pieces);
    ASSERT_TRUE(shard) << shard.status().message();
    // As rank 0 would receive it from rank `rank`.
    auto copy = shard_from_json(json::parse(shard_to_json(*shard).dump()));
    ASSERT_TRUE(copy) << copy.status().message();
    shards.push_back(*copy);
  }

  // Without rank 0's piece of "norm", elements [0, 3) of it are covered by nobody.
  ShardFile short0 = shards[0];
  short0.pieces.erase(std::find_if(short0.pieces.begin(), short0.pieces.end(),
                                   [](const ShardFile::Piece& p) { return p.name == "norm"; }));
  Status partial = commit_checkpoint(root_, 2, *staging, {short0, shards[1]}, kConfig, json{}, 0);
  ASSERT_FALSE(partial);
  EXPECT_NE(partial.message().find("'norm'"), std::string::npos) << partial.message();
  EXPECT_FALSE(fs::exists(dir(2)));
  ASSERT_TRUE(commit_checkpoint(root_, 2, *staging, shards, kConfig, json{}, 0));

  auto c = read_checkpoint(latest());
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(c->step, 2);
  expect_matches(*c, t);
  auto i1 = inspect_checkpoint(dir(1)), i2 = inspect_checkpoint(dir(2));
  ASSERT_TRUE(i1 && i2);
  EXPECT_EQ((*i2)["world_size"], 2);
  EXPECT_EQ((*i2)["files"].size(), 2u);
  EXPECT_EQ((*i1)["tensor_hash"], (*i2)["tensor_hash"]);
}

TEST_F(CheckpointTest, BadInputsAreErrorsNotAborts) {
  const Tensors t = make_tensors(1);
  std::vector<TensorView> v = views(t);
  v.push_back(v[0]);
  Status s = write_checkpoint(root_, 1, v, kConfig, json{}, 0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'embed'"), std::string::npos) << s.message();
  EXPECT_FALSE(write_checkpoint(root_, -1, views(t), kConfig, json{}, 0));
  EXPECT_FALSE(write_checkpoint(root_, 1, views(t), kConfig, json{}, -1));
  EXPECT_FALSE(write_checkpoint(root_, 1, views(t), "bad utf-8 \xff", json{}, 0));
  EXPECT_FALSE(fs::exists(dir(1)));
  EXPECT_FALSE(find_latest_checkpoint(root_));
  EXPECT_FALSE(find_latest_checkpoint(tmp_ + "/does-not-exist"));
  EXPECT_FALSE(read_checkpoint(tmp_ + "/does-not-exist"));
}

}  // namespace
}  // namespace mt
