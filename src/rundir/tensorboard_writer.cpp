// tensorboard_writer.cpp — Event messages in TFRecord frames.
//
// The three messages are encoded here, field by field, in protobuf's wire
// format (varints, fixed64/fixed32 little-endian, length-delimited strings
// and sub-messages), with TensorFlow's field numbers:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; oneof value { float simple_value = 2; } }
// Debian's protobuf runtime cannot be linked into moetrain: Debian's
// libsentencepiece exports the symbols of its own bundled protobuf-lite, and
// the two copies' MessageLite functions resolve to one another (a message
// serialised through libprotobuf-lite crashed inside libsentencepiece). The
// unit test decodes these bytes with protoc's classes of the same messages
// (tests/unit/tensorboard_event.proto), in a test that links no sentencepiece,
// and the interop test reads whole files back with the tensorboard package.
#include "rundir/tensorboard_writer.h"

#include <chrono>
#include <cstring>

#include "rundir/tfrecord.h"

namespace mt {

namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
void put_tag(std::string& out, uint32_t field, WireType t) { put_varint(out, (uint64_t(field) << 3) | t); }
template <typename T>
void put_fixed(std::string& out, T v) {  // little-endian, as x86 stores it
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}
// Event's wall_time and step: proto3 scalars, left out when zero.
void put_event_header(std::string& out, double wall_time, int64_t step) {
  if (wall_time != 0.0) {
    put_tag(out, 1, kFixed64);
    put_fixed(out, wall_time);
  }
  if (step != 0) {
    put_tag(out, 2, kVarint);
    put_varint(out, uint64_t(step));  // two's complement: negative steps take 10 bytes, as protobuf's
  }
}

}  // namespace

std::string tensorboard_file_version_record(double wall_time) {
  std::string e;
  put_event_header(e, wall_time, 0);
  put_bytes(e, 3, "brain.Event:2");
  return tfrecord_frame(e);
}

std::string tensorboard_scalars_record(const ScalarStep& s) {
  std::string summary, value;
  for (const auto& [tag, v] : s.scalars) {
    value.clear();
    put_bytes(value, 1, tag);
    put_tag(value, 2, kFixed32);  // in a oneof: written even when zero
    put_fixed(value, float(v));
    put_bytes(summary, 1, value);
  }
  std::string e;
  put_event_header(e, s.wall_time, s.step);
  put_bytes(e, 5, summary);
  return tfrecord_frame(e);
}

Result<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::open(const std::string& dir,
                                                                   const std::vector<ScalarStep>& history,
                                                                   FileSystem& fs) {
  MT_RETURN_IF_ERROR(fs.create_dirs(dir));
  // The run's start for TensorBoard's relative time: its first step, or now.
  const double start = history.empty()
                           ? std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()
                           : history.front().wall_time;
  std::string bytes = tensorboard_file_version_record(start);
  for (const ScalarStep& s : history) bytes += tensorboard_scalars_record(s);
  auto log = AppendLog::open(dir + "/" + kFileName, bytes, fs);
  if (!log) return log.status();
  return std::unique_ptr<TensorBoardWriter>(new TensorBoardWriter(std::move(log.value())));
}

Status TensorBoardWriter::add(const ScalarStep& s) { return log_->append(tensorboard_scalars_record(s)); }

}  // namespace mt
