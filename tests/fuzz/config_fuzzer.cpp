// config_fuzzer.cpp — libFuzzer entry point for the config parsers:
//   cmake -DMT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ ... && ./tests/config_fuzzer -max_total_time=60
#include <cstddef>
#include <cstdint>

#include "fuzz/config_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return mt::fuzz::config_fuzz_one(data, size); }
