// train_config_sweep_test.cpp — no configuration value aborts the process: every
// numeric key of a run config is swept over boundary and out-of-range values;
// each is either refused with a message naming a key, or accepted, passes the
// trainer's limits and trains a step (in process: an abort fails the test
// binary). Plus a mutation fuzz over every file type's parser.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/config_schema.h"
#include "data/data_build.h"
#include "data/mixture.h"
#include "plan/cluster.h"
#include "plan/layout.h"
#include "train/run_config.h"
#include "train/trainer.h"
#include "fuzz/config_fuzz_target.h"

namespace mt {
namespace {

// tiny-test's model on synthetic data, small enough to train a step in milliseconds.
const char* kTiny =
    "[model]\nvocab_size = 320\nd_model = 32\nn_layers = 2\nn_heads = 2\nn_kv_heads = 1\nd_ff = 64\n"
    "n_experts = 4\ntop_k = 2\nd_expert = 16\n[train]\nsteps = 2\nbatch_size = 2\nseq_len = 16\nthreads = 1\n";

std::vector<std::string> numeric_keys() {
  RunConfig c;
  ConfigSchema s("run config");
  declare_keys(s, c);
  std::vector<std::string> keys;
  for (const auto& k : s.keys())
    if (k->type() == "integer" || k->type() == "float") keys.push_back(k->name());
  return keys;
}

bool names_a_key(const std::string& msg) {
  for (const char* section : {"model.", "train.", "data.", "dist.", "spike.", "health.", "optim.", "stream.", "rl."})
    if (msg.find(std::string(": ") + section) != std::string::npos) return true;
  return msg.find("the run needs about") != std::string::npos;  // the memory check names the size keys
}

TEST(ConfigSweep, EveryNumericValueIsRefusedCleanlyOrTrains) {
  const std::vector<std::string> values = {"-1", "0", "1", "2", "3", "7", "64", "65", "257", "2147483648",
                                           "4611686018427387904", "-4611686018427387904", "0.5", "1e300",
                                           "-1e300", "1e-300", "nan", "inf", "-inf"};
  int refused = 0, trained = 0;
  for (const std::string& key : numeric_keys()) {
    for (const std::string& v : values) {
      SCOPED_TRACE(key + "=" + v);
      Result<RunConfig> cfg = parse_run_config(kTiny, "tiny.toml", {key + "=" + v});
      Status s = cfg.is_ok() ? check_trainer_limits(cfg.value()) : cfg.status();
      if (!s) {
        EXPECT_TRUE(names_a_key(s.message())) << s.message();
        ++refused;
        continue;
      }
      TrainerOptions opt;
      opt.progress = false;
      opt.print_config = false;
      opt.peak_gflops = 1.0;
      auto trainer = Trainer::create(cfg.value(), opt);
      if (!trainer) {
        EXPECT_TRUE(names_a_key(trainer.status().message()) ||
                    trainer.status().message().find("dist.") != std::string::npos)
            << trainer.status().message();
        ++refused;
        continue;
      }
      trainer.value()->train_step();  // must not abort; a diverging loss is the user's to see
      ++trained;
    }
  }
  EXPECT_GT(refused, 100);
  EXPECT_GT(trained, 100);
}

// Byte mutations of valid files, through the fuzz target libFuzzer also
// drives (tests/fuzz/config_fuzzer.cpp): every parser returns.
TEST(ConfigSweep, MutatedFilesNeverCrashAParser) {
  const std::vector<std::string> seeds = {
      kTiny,
      "[[input]]\npath = \"a.jsonl\"\nkind = \"jsonl\"\n[tokenizer]\nvocab_size = 4096\n[quality]\nreference = \"r\"\n",
      "total_tokens = 1000\nscale = \"1/360\"\n[weights]\n\"t0/*\" = 0.5\n\"t1/q4\" = 2\n",
      "[gpu]\ntype = \"H100\"\n[topology]\nracks = 4\nspare_racks = 1\n",
      "[parallel]\ntp = 2\npp = 2\n[batch]\nglobal_batch = 64\n",
  };
  std::mt19937_64 rng(12345);
  const std::string alphabet = "[]=\".0123456789-+eEinfa_tzq\n #,{}'\\";
  int runs = 0;
  for (size_t kind = 0; kind < seeds.size(); ++kind)
    for (int i = 0; i < 600; ++i) {
      std::string t = seeds[kind];
      const int edits = 1 + int(rng() % 4);
      for (int e = 0; e < edits && !t.empty(); ++e) {
        const size_t at = rng() % t.size();
        switch (rng() % 3) {
          case 0: t[at] = alphabet[rng() % alphabet.size()]; break;
          case 1: t.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
          default: t.erase(at, 1); break;
        }
      }
      const std::string input = std::string(1, char(kind)) + t;
      fuzz::config_fuzz_one(reinterpret_cast<const uint8_t*>(input.data()), input.size());
      ++runs;
    }
  EXPECT_EQ(runs, 3000);
}

}  // namespace
}  // namespace mt
