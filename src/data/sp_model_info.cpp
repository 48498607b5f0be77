// sp_model_info.cpp — protobuf wire format (varint, 64-bit, length-delimited,
// 32-bit) walked field by field; unknown fields are skipped, as protobuf does.
#include "data/sp_model_info.h"

#include <bit>
#include <cstring>

namespace mt {
namespace {

static_assert(std::endian::native == std::endian::little, "piece scores are read as little-endian floats");

class WireReader {
 public:
  explicit WireReader(std::string_view b) : b_(b) {}
  bool done() const { return pos_ >= b_.size(); }

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && pos_ < b_.size(); shift += 7) {
      const uint8_t c = uint8_t(b_[pos_++]);
      v |= uint64_t(c & 0x7F) << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  }

  // Reads one field: number, wire type, and either its varint value or its
  // bytes (length-delimited, or the 8 / 4 bytes of a fixed-width field).
  bool field(int64_t& number, int& wire, uint64_t& value, std::string_view& bytes) {
    uint64_t key;
    if (!varint(key)) return false;
    number = int64_t(key >> 3);
    wire = int(key & 7);
    switch (wire) {
      case 0: return varint(value);
      case 1: return take(8, bytes);
      case 5: return take(4, bytes);
      case 2: {
        uint64_t n;
        return varint(n) && take(n, bytes);
      }
      default: return false;  // groups (3, 4) are not used by this proto
    }
  }

 private:
  bool take(uint64_t n, std::string_view& bytes) {
    if (n > b_.size() - pos_) return false;
    bytes = b_.substr(pos_, size_t(n));
    pos_ += size_t(n);
    return true;
  }
  std::string_view b_;
  size_t pos_ = 0;
};

// Calls f(number, wire, value, bytes) for every field of `msg`; false if malformed.
template <class F>
bool for_each_field(std::string_view msg, F&& f) {
  WireReader r(msg);
  while (!r.done()) {
    int64_t number = 0;
    int wire = 0;
    uint64_t value = 0;
    std::string_view bytes;
    if (!r.field(number, wire, value, bytes)) return false;
    if (!f(number, wire, value, bytes)) return false;
  }
  return true;
}

bool read_piece(std::string_view msg, SpPieceInfo& p) {
  return for_each_field(msg, [&](int64_t n, int wire, uint64_t v, std::string_view b) {
    if (n == 1 && wire == 2) p.piece = std::string(b);
    if (n == 2 && wire == 5) std::memcpy(&p.score, b.data(), 4);  // little-endian IEEE float, as x86 stores it
    if (n == 3 && wire == 0) {
      if (v < 1 || v > 6) return false;
      p.type = SpPieceType(int(v));
    }
    return true;
  });
}

bool read_trainer_spec(std::string_view msg, SpModelInfo& m) {
  return for_each_field(msg, [&](int64_t n, int wire, uint64_t v, std::string_view) {
    if (wire != 0) return true;
    if (n == 3) m.model_type = SpModelType(int(v));
    if (n == 22) m.split_by_whitespace = v != 0;
    if (n == 24) m.treat_whitespace_as_suffix = v != 0;
    if (n == 35) m.byte_fallback = v != 0;
    return true;
  });
}

bool read_normalizer_spec(std::string_view msg, SpModelInfo& m) {
  return for_each_field(msg, [&](int64_t n, int wire, uint64_t v, std::string_view b) {
    if (n == 1 && wire == 2) m.normalizer_name = std::string(b);
    if (n == 2 && wire == 2) m.charsmap_bytes = int64_t(b.size());
    if (n == 3 && wire == 0) m.add_dummy_prefix = v != 0;
    if (n == 4 && wire == 0) m.remove_extra_whitespaces = v != 0;
    if (n == 5 && wire == 0) m.escape_whitespaces = v != 0;
    return true;
  });
}

}  // namespace

Result<SpModelInfo> read_sp_model_info(std::string_view serialized, const std::string& name) {
  SpModelInfo m;
  const char* bad = nullptr;
  const bool ok = for_each_field(serialized, [&](int64_t n, int wire, uint64_t, std::string_view b) {
    if (wire != 2) return true;
    if (n == 1) {
      m.pieces.emplace_back();
      if (!read_piece(b, m.pieces.back())) bad = "pieces";
    } else if (n == 2) {
      if (!read_trainer_spec(b, m)) bad = "trainer_spec";
    } else if (n == 3) {
      if (!read_normalizer_spec(b, m)) bad = "normalizer_spec";
    }
    return bad == nullptr;
  });
  if (!ok) return Status::errorf("{}: malformed SentencePiece model ({})", name, bad ? bad : "top-level fields");
  return m;
}

}  // namespace mt
