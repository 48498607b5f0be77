// doc_spill.h — a build's scratch files: records appended in order and read
// back in order, so that no stage of `data build` holds the corpus in memory.
// A record is a length-prefixed byte string; RecordWriter/RecordReader move
// them, and the encode/decode helpers below pack the two kinds the build
// keeps: ingested documents (text, marks, labels from metadata, provenance)
// and tokenized documents (ids, provenance, labels and scores).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/status.h"
#include "data/document.h"

namespace mt {

class RecordWriter {
 public:
  ~RecordWriter();
  static Result<std::unique_ptr<RecordWriter>> create(const std::string& path);
  Status append(std::string_view record);
  Status close();
  int64_t records() const { return records_; }

 private:
  RecordWriter() = default;
  std::string path_;
  std::FILE* f_ = nullptr;
  int64_t records_ = 0;
};

class RecordReader {
 public:
  ~RecordReader();
  static Result<std::unique_ptr<RecordReader>> open(const std::string& path);
  // The next record into `out`; false at the end. A short record is an error.
  Result<bool> next(std::string& out);

 private:
  RecordReader() = default;
  std::string path_;
  std::FILE* f_ = nullptr;
};

// Packing: fixed-width little-endian integers and length-prefixed strings.
class Packer {
 public:
  explicit Packer(std::string& out) : out_(out) {}
  void i64(int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void f64(double v) { out_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void str(std::string_view s) {
    i64(int64_t(s.size()));
    out_.append(s);
  }
  void bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }

 private:
  std::string& out_;
};

class Unpacker {
 public:
  explicit Unpacker(std::string_view in) : in_(in) {}
  int64_t i64() { return pod<int64_t>(); }
  double f64() { return pod<double>(); }
  std::string str() {
    const int64_t n = i64();
    MT_CHECK(n >= 0 && size_t(n) <= in_.size() - at_, "spill record: string of {} bytes overruns the record", n);
    std::string s(in_.substr(at_, size_t(n)));
    at_ += size_t(n);
    return s;
  }
  bool at_end() const { return at_ == in_.size(); }
  std::string_view view(size_t n) {
    MT_CHECK(n <= in_.size() - at_, "spill record: {} bytes overrun the record", n);
    std::string_view v = in_.substr(at_, n);
    at_ += n;
    return v;
  }

 private:
  template <typename T>
  T pod() {
    MT_CHECK(sizeof(T) <= in_.size() - at_, "spill record: truncated at byte {}", at_);
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string_view in_;
  size_t at_ = 0;
};

// An ingested document with its place in input order.
struct SpilledDoc {
  int64_t item = 0, seq = 0;  // ingest item, and the document's index within it
  Document doc;
};
std::string encode_spilled_doc(const SpilledDoc& d);
SpilledDoc decode_spilled_doc(std::string_view record);

}  // namespace mt
