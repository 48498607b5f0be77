// data_fuzzer.cpp — libFuzzer entry point for the data readers:
//   cmake -DMT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ ... && ./tests/data_fuzzer -max_total_time=60
#include <cstddef>
#include <cstdint>

#include "fuzz/data_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return mt::fuzz::data_fuzz_one(data, size); }
