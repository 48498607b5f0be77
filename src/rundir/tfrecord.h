// tfrecord.h — TFRecord framing, the container of TensorBoard event files:
// each record is its length (uint64, little-endian), the masked CRC-32C of
// those 8 bytes, the payload, and the masked CRC-32C of the payload. A
// reader that meets a torn record at the end of a file (a crash mid-write)
// detects it by the checksums. Pure functions; tensorboard_writer.h writes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mt {

// CRC-32C (Castagnoli) of `n` bytes (Boost.CRC).
uint32_t crc32c(const void* data, size_t n);

// TFRecord's masking of a CRC: rotated right by 15 bits plus 0xa282ead8, so
// that data holding its own CRCs does not checksum to trivial values.
uint32_t masked_crc32c(const void* data, size_t n);

// The framed record of `payload`.
std::string tfrecord_frame(std::string_view payload);

// The payload of the record starting at data[*at], advancing *at past it;
// false when the bytes from *at are not a whole, valid record (torn or
// corrupt), leaving *at where it was.
bool tfrecord_next(std::string_view data, size_t* at, std::string* payload);

}  // namespace mt
