// tfrecord.cpp — see tfrecord.h.
#include "rundir/tfrecord.h"

#include <boost/crc.hpp>
#include <cstring>

namespace mt {

uint32_t crc32c(const void* data, size_t n) {
  // Castagnoli polynomial, reflected in and out, initial and final XOR all ones.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, n);
  return crc.checksum();
}

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

namespace {
void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}
uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}
}  // namespace

std::string tfrecord_frame(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 16);
  put_le(out, payload.size(), 8);
  put_le(out, masked_crc32c(out.data(), 8), 4);
  out.append(payload);
  put_le(out, masked_crc32c(payload.data(), payload.size()), 4);
  return out;
}

bool tfrecord_next(std::string_view data, size_t* at, std::string* payload) {
  const size_t start = *at;
  if (data.size() < start || data.size() - start < 12) return false;
  const char* p = data.data() + start;
  const uint64_t n = get_le(p, 8);
  if (uint32_t(get_le(p + 8, 4)) != masked_crc32c(p, 8)) return false;
  if (data.size() - start - 12 < 4 || n > data.size() - start - 16) return false;
  if (uint32_t(get_le(p + 12 + n, 4)) != masked_crc32c(p + 12, n)) return false;
  payload->assign(p + 12, n);
  *at = start + 16 + n;
  return true;
}

}  // namespace mt
