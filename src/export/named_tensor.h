// named_tensor.h — a tensor of an export or import: its name in the target
// format, its shape and row-major fp32 values (the file's dtype is chosen
// when it is written: export/safetensors_dir.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mt {

struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
  // Written F32 whatever the export's dtype: values a bf16 rounding would
  // change decisions with (a router's selection bias, a decay's exponent).
  bool keep_f32 = false;
};

}  // namespace mt
