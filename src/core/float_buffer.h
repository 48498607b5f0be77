// float_buffer.h — an array (fp32, or bf16 for optimizer moments held in
// bf16) in host memory or in a memory-mapped file on local disk (the disk
// tier of weight streaming, docs/streaming.md). The trainer's parameter,
// gradient and optimizer-state buffers are these, so
// the same code trains with its state on either tier; the kernel pages the
// file in and out, and nothing but the layers in flight has to fit in RAM.
// The file is reserved in full when mapped (posix_fallocate), so a full disk
// is an error at start-up, never a SIGBUS mid-step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/status.h"

namespace mt {

template <typename T>
class MappedBuffer {
 public:
  MappedBuffer() = default;
  ~MappedBuffer();
  MappedBuffer(MappedBuffer&& o) noexcept;
  MappedBuffer& operator=(MappedBuffer&& o) noexcept;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;

  // n zeros in a new file at `path` (replacing any), mapped shared. Later
  // assign() calls must keep the size.
  Status map_file(const std::string& path, int64_t n);
  // n copies of value (in host memory unless mapped; a mapped buffer keeps its size).
  void assign(int64_t n, T value);
  // Removes a mapped buffer's file from the directory; the mapping stays
  // valid until the buffer is destroyed (scratch stores leave nothing).
  void remove_file();

  T* data() { return p_; }
  const T* data() const { return p_; }
  int64_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  bool mapped() const { return fd_ >= 0; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }
  T& operator[](int64_t i) { return p_[i]; }
  const T& operator[](int64_t i) const { return p_[i]; }

 private:
  void release();
  std::vector<T> heap_;
  T* p_ = nullptr;
  int64_t n_ = 0;
  int fd_ = -1;
  std::string path_;
};

using FloatBuffer = MappedBuffer<float>;
using Bf16Buffer = MappedBuffer<bf16>;  // optimizer moments held in bf16 (optim.state_precision)

}  // namespace mt
