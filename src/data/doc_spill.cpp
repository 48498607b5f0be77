// doc_spill.cpp — record files (length-prefixed, buffered stdio) and the
// packing of ingested documents.
#include "data/doc_spill.h"

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace mt {

RecordWriter::~RecordWriter() {
  if (f_) std::fclose(f_);
}

Result<std::unique_ptr<RecordWriter>> RecordWriter::create(const std::string& path) {
  std::unique_ptr<RecordWriter> w(new RecordWriter());
  w->path_ = path;
  w->f_ = std::fopen(path.c_str(), "wb");
  if (!w->f_) return Status::errorf("{}: cannot create: {}", path, std::strerror(errno));
  std::setvbuf(w->f_, nullptr, _IOFBF, 1 << 20);
  return w;
}

Status RecordWriter::append(std::string_view record) {
  const int64_t n = int64_t(record.size());
  if (std::fwrite(&n, sizeof(n), 1, f_) != 1 || std::fwrite(record.data(), 1, record.size(), f_) != record.size())
    return Status::errorf("{}: write failed: {}", path_, std::strerror(errno));
  ++records_;
  return Status::ok();
}

Status RecordWriter::close() {
  std::FILE* f = f_;
  f_ = nullptr;
  if (f && std::fclose(f) != 0) return Status::errorf("{}: close failed: {}", path_, std::strerror(errno));
  return Status::ok();
}

RecordReader::~RecordReader() {
  if (f_) std::fclose(f_);
}

Result<std::unique_ptr<RecordReader>> RecordReader::open(const std::string& path) {
  std::unique_ptr<RecordReader> r(new RecordReader());
  r->path_ = path;
  r->f_ = std::fopen(path.c_str(), "rb");
  if (!r->f_) return Status::errorf("{}: cannot open: {}", path, std::strerror(errno));
  std::setvbuf(r->f_, nullptr, _IOFBF, 1 << 20);
  return r;
}

Result<bool> RecordReader::next(std::string& out) {
  int64_t n = 0;
  const size_t got = std::fread(&n, 1, sizeof(n), f_);
  if (got == 0 && std::feof(f_)) return false;
  if (got != sizeof(n) || n < 0) return Status::errorf("{}: truncated record header", path_);
  out.resize(size_t(n));
  if (std::fread(out.data(), 1, size_t(n), f_) != size_t(n)) return Status::errorf("{}: truncated record", path_);
  return true;
}

std::string encode_spilled_doc(const SpilledDoc& s) {
  const Document& d = s.doc;
  std::string out;
  out.reserve(d.text.size() + 256);
  Packer p(out);
  p.i64(s.item);
  p.i64(s.seq);
  p.str(d.text);
  p.i64(int64_t(d.marks.size()));
  for (const DocMark& m : d.marks) {
    p.i64(m.offset);
    p.i64(int64_t(m.special));
  }
  p.str(d.topic);
  p.str(d.quality);
  p.f64(d.quality_score);
  p.str(d.origin);
  p.str(d.source);
  p.i64(d.line);
  p.i64(d.offset);
  p.i64(d.part);
  p.i64(d.text_offset);
  return out;
}

SpilledDoc decode_spilled_doc(std::string_view record) {
  SpilledDoc s;
  Document& d = s.doc;
  Unpacker u(record);
  s.item = u.i64();
  s.seq = u.i64();
  d.text = u.str();
  const int64_t n = u.i64();
  MT_CHECK(n >= 0 && n <= int64_t(record.size()), "spill record: {} marks", n);
  d.marks.resize(size_t(n));
  for (DocMark& m : d.marks) {
    m.offset = u.i64();
    m.special = Special(u.i64());
  }
  d.topic = u.str();
  d.quality = u.str();
  d.quality_score = u.f64();
  d.origin = u.str();
  d.source = u.str();
  d.line = u.i64();
  d.offset = u.i64();
  d.part = u.i64();
  d.text_offset = u.i64();
  return s;
}

}  // namespace mt
