// config_fuzz_target.h — one fuzz input through a config parser: the first
// byte picks the file type (run, data build, mixture, cluster, layout), the
// rest is the file's text. Every parser must return a value or a Status,
// whatever the bytes. Shared by the libFuzzer entry point (config_fuzzer.cpp)
// and the in-ctest mutation fuzz (unit/train_config_sweep_test.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/data_build.h"
#include "data/mixture.h"
#include "plan/cluster.h"
#include "plan/layout.h"
#include "train/run_config.h"

namespace mt::fuzz {

inline int config_fuzz_one(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: (void)parse_run_config(text, "fuzz.toml", {}); break;
    case 1: (void)parse_data_build_config(text, "fuzz.toml", {}); break;
    case 2: (void)parse_mixture(text, "fuzz.toml", {}); break;
    case 3: (void)plan::parse_cluster(text, "fuzz.toml", {}); break;
    default: (void)plan::parse_layout(text, "fuzz.toml", {}); break;
  }
  return 0;
}

}  // namespace mt::fuzz
