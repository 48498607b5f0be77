// line_reader.cpp — byte sources (file, memory) and streaming decompressors
// (zlib inflate with gzip/zlib auto-detection and concatenated members;
// ZSTD_decompressStream), then line splitting.
#include "data/line_reader.h"

#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>

namespace mt {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes into dst; 0 at the end.
  virtual Result<size_t> read(char* dst, size_t n) = 0;
};

namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(std::FILE* f, std::string name) : f_(f), name_(std::move(name)) {}
  ~FileSource() override { std::fclose(f_); }
  Result<size_t> read(char* dst, size_t n) override {
    size_t r = std::fread(dst, 1, n, f_);
    if (r < n && std::ferror(f_)) return Status::errorf("{}: read error", name_);
    return r;
  }

 private:
  std::FILE* f_;
  std::string name_;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string b) : b_(std::move(b)) {}
  Result<size_t> read(char* dst, size_t n) override {
    n = std::min(n, b_.size() - pos_);
    std::memcpy(dst, b_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string b_;
  size_t pos_ = 0;
};

constexpr size_t kChunk = 1 << 18;

class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> in, std::string name) : in_(std::move(in)), name_(std::move(name)) {
    std::memset(&z_, 0, sizeof(z_));
    ok_ = inflateInit2(&z_, 15 + 32) == Z_OK;  // +32: gzip or zlib header
    inbuf_.resize(kChunk);
  }
  ~GzipSource() override { inflateEnd(&z_); }
  Result<size_t> read(char* dst, size_t n) override {
    if (!ok_) return Status::errorf("{}: zlib initialisation failed", name_);
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = uInt(n);
    while (z_.avail_out == n) {
      if (z_.avail_in == 0 && !in_eof_) {
        auto r = in_->read(inbuf_.data(), inbuf_.size());
        if (!r) return r.status();
        if (r.value() == 0) in_eof_ = true;
        z_.next_in = reinterpret_cast<Bytef*>(inbuf_.data());
        z_.avail_in = uInt(r.value());
      }
      if (z_.avail_in == 0 && in_eof_) {
        if (!mid_stream_) break;
        // Input is exhausted: inflate may still hold output; none means truncated.
        int rc = inflate(&z_, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) { mid_stream_ = false; inflateReset(&z_); continue; }
        if (z_.avail_out == n) return Status::errorf("{}: truncated gzip stream (ends inside a member)", name_);
        if (rc != Z_OK && rc != Z_BUF_ERROR)
          return Status::errorf("{}: corrupt gzip stream ({})", name_, z_.msg ? z_.msg : "inflate error");
        break;
      }
      mid_stream_ = true;
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        mid_stream_ = false;
        inflateReset(&z_);  // another member may follow (concatenated .gz)
      } else if (rc == Z_BUF_ERROR) {
        if (z_.avail_in != 0) return Status::errorf("{}: corrupt gzip stream", name_);
      } else if (rc != Z_OK) {
        return Status::errorf("{}: corrupt gzip stream ({})", name_, z_.msg ? z_.msg : "inflate error");
      }
    }
    return n - z_.avail_out;
  }

 private:
  std::unique_ptr<ByteSource> in_;
  std::string name_;
  z_stream z_;
  std::string inbuf_;
  bool ok_ = false, in_eof_ = false, mid_stream_ = false;
};

class ZstdSource final : public ByteSource {
 public:
  ZstdSource(std::unique_ptr<ByteSource> in, std::string name)
      : in_(std::move(in)), name_(std::move(name)), d_(ZSTD_createDStream()) {
    inbuf_.resize(ZSTD_DStreamInSize());
    ZSTD_DCtx_setParameter(d_, ZSTD_d_windowLogMax, 27);  // bounded memory on hostile input
  }
  ~ZstdSource() override { ZSTD_freeDStream(d_); }
  Result<size_t> read(char* dst, size_t n) override {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos == 0) {
      if (zin_.pos == zin_.size && !in_eof_) {
        auto r = in_->read(inbuf_.data(), inbuf_.size());
        if (!r) return r.status();
        if (r.value() == 0) in_eof_ = true;
        zin_ = ZSTD_inBuffer{inbuf_.data(), r.value(), 0};
      }
      if (zin_.pos == zin_.size && in_eof_) {
        if (pending_ == 0) break;
        // Input is exhausted: flush what the decoder holds; nothing means truncated.
        ZSTD_inBuffer none{nullptr, 0, 0};
        size_t rc = ZSTD_decompressStream(d_, &out, &none);
        if (ZSTD_isError(rc)) return Status::errorf("{}: corrupt zstd stream ({})", name_, ZSTD_getErrorName(rc));
        pending_ = rc;
        if (out.pos == 0) return Status::errorf("{}: truncated zstd stream (ends inside a frame)", name_);
        break;
      }
      size_t rc = ZSTD_decompressStream(d_, &out, &zin_);
      if (ZSTD_isError(rc)) return Status::errorf("{}: corrupt zstd stream ({})", name_, ZSTD_getErrorName(rc));
      pending_ = rc;
    }
    return out.pos;
  }

 private:
  std::unique_ptr<ByteSource> in_;
  std::string name_;
  ZSTD_DStream* d_;
  std::string inbuf_;
  ZSTD_inBuffer zin_{nullptr, 0, 0};
  size_t pending_ = 0;
  bool in_eof_ = false;
};

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::unique_ptr<ByteSource> wrap(std::unique_ptr<ByteSource> raw, Compression c, const std::string& name) {
  if (c == Compression::kGzip) return std::make_unique<GzipSource>(std::move(raw), name);
  if (c == Compression::kZstd) return std::make_unique<ZstdSource>(std::move(raw), name);
  return raw;
}

}  // namespace

Compression compression_of(const std::string& path) {
  if (ends_with(path, ".gz")) return Compression::kGzip;
  if (ends_with(path, ".zst") || ends_with(path, ".zstd")) return Compression::kZstd;
  return Compression::kNone;
}

std::string strip_compression_suffix(const std::string& path) {
  for (const char* s : {".gz", ".zst", ".zstd"})
    if (ends_with(path, s)) return path.substr(0, path.size() - std::strlen(s));
  return path;
}

LineReader::~LineReader() = default;

Result<std::unique_ptr<LineReader>> LineReader::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::errorf("{}: cannot open for reading", path);
  std::unique_ptr<LineReader> r(new LineReader());
  r->name_ = path;
  r->src_ = wrap(std::make_unique<FileSource>(f, path), compression_of(path), path);
  return r;
}

std::unique_ptr<LineReader> LineReader::from_memory(std::string bytes, Compression c, const std::string& name) {
  std::unique_ptr<LineReader> r(new LineReader());
  r->name_ = name;
  r->src_ = wrap(std::make_unique<MemorySource>(std::move(bytes)), c, name);
  return r;
}

Status LineReader::fill() {
  if (pos_ > 0) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  const size_t old = buf_.size();
  buf_.resize(old + kChunk);
  auto r = src_->read(buf_.data() + old, kChunk);
  if (!r) {
    buf_.resize(old);
    return r.status();
  }
  buf_.resize(old + r.value());
  bytes_out_ += int64_t(r.value());
  if (r.value() == 0) eof_ = true;
  return Status::ok();
}

Result<bool> LineReader::next(std::string& line) {
  size_t scanned = pos_;
  for (;;) {
    const size_t nl = buf_.find('\n', scanned);
    if (nl != std::string::npos) {
      line_offset_ = bytes_out_ - int64_t(buf_.size()) + int64_t(pos_);
      line.assign(buf_, pos_, nl - pos_);
      pos_ = nl + 1;
      ++line_;
      return true;
    }
    if (eof_) {
      if (pos_ >= buf_.size()) return false;
      line_offset_ = bytes_out_ - int64_t(buf_.size()) + int64_t(pos_);
      line.assign(buf_, pos_, std::string::npos);  // last line without "\n"
      pos_ = buf_.size();
      ++line_;
      return true;
    }
    if (int64_t(buf_.size() - pos_) > kMaxLineBytes)
      return Status::errorf("{}:{}: line longer than {} bytes", name_, line_ + 1, kMaxLineBytes);
    scanned = buf_.size() - pos_;
    MT_RETURN_IF_ERROR(fill());
    scanned = pos_ + scanned;  // fill() moved the unread part to the front
  }
}

Status LineReader::read_all(std::string& out) {
  while (!eof_) MT_RETURN_IF_ERROR(fill());
  out.assign(buf_, pos_, std::string::npos);
  pos_ = buf_.size();
  return Status::ok();
}

}  // namespace mt
