// param_layout.h — every parameter tensor's name, shape and offset in one flat
// fp32 buffer. Gradients and optimizer moments use the same layout. Tensors of
// a layer are contiguous, and so are each expert's (FSDP gathers a layer, EP
// owns whole experts, with one range each).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace mt {

enum class ParamKind { kMatrix, kNorm, kEmbedding };

struct ParamEntry {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;
  int64_t numel = 0;
  ParamKind kind = ParamKind::kMatrix;
  int64_t layer = -1;   // -1: not inside a transformer block
  int64_t expert = -1;  // routed expert index, -1 otherwise
};

class ParamLayout {
 public:
  // Appends a tensor and returns its offset.
  int64_t add(std::string name, std::vector<int64_t> shape, ParamKind kind, int64_t layer = -1,
              int64_t expert = -1);
  const std::vector<ParamEntry>& entries() const { return entries_; }
  const ParamEntry* find(const std::string& name) const;
  int64_t total() const { return total_; }
  // Contiguous range [begin, end) covering all tensors of layer l.
  std::pair<int64_t, int64_t> layer_range(int64_t layer) const;

 private:
  std::vector<ParamEntry> entries_;
  std::unordered_map<std::string, size_t> by_name_;
  int64_t total_ = 0;
};

}  // namespace mt
