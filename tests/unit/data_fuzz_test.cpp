// data_fuzz_test.cpp — the data fuzz harness (tests/fuzz/data_fuzz_target.h)
// run inside ctest as a plain executable: a seed corpus of valid inputs for
// every target, then seeded random mutations (flips, truncations, splices,
// insertions) for a fixed time budget. Passing = no crash, no hang, no abort.
#include <gtest/gtest.h>

#include <chrono>

#include "fuzz/data_fuzz_target.h"
#include "support/data_fixtures.h"

namespace mt {
namespace {

namespace td = testdata;

std::string with_selector(uint8_t sel, const std::string& body) { return std::string(1, char(sel)) + body; }

std::vector<std::string> seed_corpus() {
  std::vector<std::string> c;
  const std::string jsonl = "{\"text\":\"hello\",\"topic\":\"web\",\"quality\":3}\n{\"content\":\"x\",\"repo\":\"a\","
                            "\"path\":\"b\",\"meta\":{\"q\":0.5}}\n{\"text\":\"\\u00e9\\ud83d\\ude00\",\"outcome\":\"success\"}\n";
  c.push_back(with_selector(fuzz::kJsonl, jsonl));
  c.push_back(with_selector(fuzz::kGzip, td::gzip(jsonl + jsonl)));
  c.push_back(with_selector(fuzz::kZstd, td::zstd(jsonl + jsonl)));
  // A valid shard pair, as written by write_shard.
  td::TempDir dir;
  EXPECT_TRUE(write_shard(dir / "s.tokens", dir / "s.index", {1, 2, 3, 4, 5}, {0, 2, 5}, 2, 0x77).is_ok());
  const std::string tok = td::read_file(dir / "s.tokens"), idx = td::read_file(dir / "s.index");
  std::string split(2, '\0');
  split[0] = char(tok.size() & 0xff);
  split[1] = char(tok.size() >> 8);
  c.push_back(with_selector(fuzz::kShardRaw, split + tok + idx));
  c.push_back(with_selector(fuzz::kShardFixed, split + tok + idx));
  return c;
}

TEST(DataFuzz, SeedCorpusIsAccepted) {
  // The seeds are valid: the shard seed must parse, or mutations explore nothing.
  td::TempDir dir;
  ASSERT_TRUE(write_shard(dir / "s.tokens", dir / "s.index", {1, 2, 3, 4, 5}, {0, 2, 5}, 2, 0x77).is_ok());
  auto r = ShardReader::from_bytes(td::read_file(dir / "s.tokens"), td::read_file(dir / "s.index"), "seed", 0x77, 1 << 16);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  for (const std::string& s : seed_corpus())
    EXPECT_EQ(fuzz::data_fuzz_one(reinterpret_cast<const uint8_t*>(s.data()), s.size()), 0);
}

TEST(DataFuzz, RandomMutationsForAFewSeconds) {
  const std::vector<std::string> seeds = seed_corpus();
  uint64_t rng = 20240601;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t runs = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)) {
    std::string in = seeds[td::splitmix(rng) % seeds.size()];
    const int edits = 1 + int(td::splitmix(rng) % 8);
    for (int e = 0; e < edits && !in.empty(); ++e) {
      const size_t at = td::splitmix(rng) % in.size();
      switch (td::splitmix(rng) % 6) {
        case 0: in[at] = char(in[at] ^ (1 << (td::splitmix(rng) % 8))); break;         // bit flip
        case 1: in[at] = char(td::splitmix(rng)); break;                              // byte
        case 2: in.resize(std::max<size_t>(1, at)); break;                            // truncate
        case 3: in.insert(at, std::string(1 + td::splitmix(rng) % 16, char(td::splitmix(rng)))); break;
        case 4: in.insert(at, seeds[td::splitmix(rng) % seeds.size()].substr(1)); break;  // splice
        case 5: in.erase(at, 1 + td::splitmix(rng) % 8); break;
      }
    }
    if (!in.empty() && td::splitmix(rng) % 4 == 0) in[0] = char(td::splitmix(rng) % 5);  // retarget
    ASSERT_EQ(fuzz::data_fuzz_one(reinterpret_cast<const uint8_t*>(in.data()), in.size()), 0);
    ++runs;
  }
  EXPECT_GT(runs, 1000);
  std::printf("[fuzz] %lld inputs\n", static_cast<long long>(runs));
}

}  // namespace
}  // namespace mt
