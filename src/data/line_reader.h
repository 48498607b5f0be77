// line_reader.h — reads a file line by line, plain or compressed the way large
// corpora ship (.gz through zlib, .zst through libzstd, chosen by extension),
// counting lines for error messages. A truncated or corrupt compressed stream
// is an error naming the file, never a silently short read.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace mt {

enum class Compression { kNone, kGzip, kZstd };

// By file name: ".gz" -> gzip, ".zst" / ".zstd" -> zstd, else none.
Compression compression_of(const std::string& path);
// The name without a compression suffix ("a.jsonl.zst" -> "a.jsonl").
std::string strip_compression_suffix(const std::string& path);

class ByteSource;

class LineReader {
 public:
  ~LineReader();
  static Result<std::unique_ptr<LineReader>> open(const std::string& path);
  // Over bytes in memory (tests, the fuzz harness); `name` is used in errors.
  static std::unique_ptr<LineReader> from_memory(std::string bytes, Compression c, const std::string& name);

  // Reads the next line (without its "\n") into `line`. Returns false at the
  // end of input; an error for corrupt/truncated input or a line longer than
  // max_line_bytes.
  Result<bool> next(std::string& line);
  // Reads everything that is left (for whole-file text documents).
  Status read_all(std::string& out);
  int64_t line_number() const { return line_; }     // of the line last returned, 1-based
  int64_t bytes_out() const { return bytes_out_; }  // decompressed bytes delivered
  int64_t line_offset() const { return line_offset_; }  // of the line last returned: its first byte, decompressed
  const std::string& name() const { return name_; }

  static constexpr int64_t kMaxLineBytes = int64_t(1) << 30;

 private:
  LineReader() = default;
  Status fill();  // refills buf_; sets eof_

  std::unique_ptr<ByteSource> src_;
  std::string name_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  int64_t line_ = 0, bytes_out_ = 0, line_offset_ = 0;
};

}  // namespace mt
