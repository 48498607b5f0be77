// buffer_sizer.h — one sizing pass shared by allocation and planning: every
// allocate() hands its buffers to a BufferSizer, which either resizes them
// (the trainer) or only adds up their bytes (the planner, `moetrain plan`),
// so the planner's activation figure is the trainer's allocation by construction.
#pragma once
#include <cstdint>
#include <vector>

namespace mt {

class BufferSizer {
 public:
  enum class Mode { kAllocate, kCountOnly };
  explicit BufferSizer(Mode mode) : mode_(mode) {}

  // Sizes `v` to n elements (kAllocate) and counts n * sizeof(T) bytes.
  template <typename T>
  void operator()(std::vector<T>& v, int64_t n) {
    if (mode_ == Mode::kAllocate) v.resize(size_t(n));
    bytes_ += n * int64_t(sizeof(T));
    sizes_.push_back(n * int64_t(sizeof(T)));
  }
  int64_t bytes() const { return bytes_; }
  // Bytes of every buffer in the order sized: two layers whose lists are
  // equal can share their activation buffers (layer recomputation).
  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  Mode mode_;
  int64_t bytes_ = 0;
  std::vector<int64_t> sizes_;
};

// Bytes of data held by vectors (what a sizing pass must have counted).
template <typename T>
int64_t vector_bytes(const std::vector<T>& v) {
  return int64_t(v.size() * sizeof(T));
}
template <typename T>
int64_t vector_bytes(const std::vector<std::vector<T>>& vv) {
  int64_t s = 0;
  for (const auto& v : vv) s += vector_bytes(v);
  return s;
}

}  // namespace mt
