// float_buffer.cpp — heap or file-mapped storage.
#include "core/float_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/check.h"

namespace mt {

template <typename T>
MappedBuffer<T>::~MappedBuffer() { release(); }

template <typename T>
MappedBuffer<T>::MappedBuffer(MappedBuffer&& o) noexcept { *this = std::move(o); }

template <typename T>
MappedBuffer<T>& MappedBuffer<T>::operator=(MappedBuffer&& o) noexcept {
  if (this == &o) return *this;
  release();
  const bool heap = o.fd_ < 0;
  heap_ = std::move(o.heap_);
  p_ = heap ? heap_.data() : o.p_;
  n_ = o.n_;
  fd_ = o.fd_;
  path_ = std::move(o.path_);
  o.p_ = nullptr;
  o.n_ = 0;
  o.fd_ = -1;
  return *this;
}

template <typename T>
void MappedBuffer<T>::release() {
  if (fd_ >= 0) {
    if (n_ > 0) munmap(p_, size_t(n_) * sizeof(T));
    close(fd_);
    fd_ = -1;
  }
  heap_.clear();
  heap_.shrink_to_fit();
  p_ = nullptr;
  n_ = 0;
}

template <typename T>
Status MappedBuffer<T>::map_file(const std::string& path, int64_t n) {
  release();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::errorf("{}: cannot create the stream store file: {}", path, std::strerror(errno));
  const size_t bytes = size_t(std::max<int64_t>(n, 1)) * sizeof(T);
  if (const int e = posix_fallocate(fd, 0, off_t(bytes)); e != 0) {
    close(fd);
    unlink(path.c_str());
    return Status::errorf("{}: cannot reserve {} bytes for the stream store: {}", path, bytes, std::strerror(e));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return Status::errorf("{}: cannot map the stream store file: {}", path, std::strerror(e));
  }
  fd_ = fd;
  p_ = static_cast<T*>(p);
  n_ = n;
  path_ = path;
  return Status::ok();
}

template <typename T>
void MappedBuffer<T>::assign(int64_t n, T value) {
  if (fd_ >= 0) {
    MT_CHECK(n == n_, "{}: a mapped stream store buffer keeps its size ({} elements, asked for {})", path_, n_, n);
    std::fill(p_, p_ + n_, value);
    return;
  }
  heap_.assign(size_t(n), value);
  p_ = heap_.data();
  n_ = n;
}

template <typename T>
void MappedBuffer<T>::remove_file() {
  if (fd_ >= 0) unlink(path_.c_str());
}

template class MappedBuffer<float>;
template class MappedBuffer<bf16>;

}  // namespace mt
