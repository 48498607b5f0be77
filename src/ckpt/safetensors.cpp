// safetensors.cpp — header encode/parse for the safetensors layout
// (https://github.com/huggingface/safetensors, "Format").
#include "ckpt/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

namespace mt {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors and checkpoint data are little-endian");

// The reference implementation refuses headers above 100 MB; so do we.
constexpr int64_t kMaxHeaderBytes = 100'000'000;

bool is_nonneg_int(const nlohmann::json& v) {
  return v.is_number_unsigned() ||
         (v.is_number_integer() && v.get<int64_t>() >= 0);
}

int64_t as_int(const nlohmann::json& v) { return v.get<int64_t>(); }

}  // namespace

int64_t safetensors_dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, int64_t> kSizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
      {"I16", 2}, {"I8", 1},  {"U64", 8}, {"U32", 4},  {"U16", 2}, {"U8", 1}, {"BOOL", 1}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

std::string encode_safetensors_header(const std::vector<SafetensorsEntry>& entries,
                                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json h = nlohmann::json::object();
  for (const SafetensorsEntry& e : entries) {
    h[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  }
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::string json = h.dump();
  const size_t pad = (8 - json.size() % 8) % 8;
  json.append(pad, ' ');
  const uint64_t n = json.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);  // little-endian (static_assert above)
  return out + json;
}

Result<SafetensorsHeader> read_safetensors_header(ReadableFile& file, const std::string& path) {
  const int64_t size = file.size();
  if (size < 8) {
    return Status::errorf("{}: {} bytes is too short for a safetensors file", path, size);
  }
  uint64_t n = 0;
  MT_RETURN_IF_ERROR(file.read_at(0, &n, 8));
  if (n > static_cast<uint64_t>(kMaxHeaderBytes) || static_cast<int64_t>(n) > size - 8) {
    return Status::errorf("{}: header length {} does not fit in a file of {} bytes", path, n,
                          size);
  }
  SafetensorsHeader hdr;
  hdr.data_start = 8 + static_cast<int64_t>(n);
  hdr.raw.resize(hdr.data_start);
  std::memcpy(hdr.raw.data(), &n, 8);
  MT_RETURN_IF_ERROR(file.read_at(8, hdr.raw.data() + 8, static_cast<int64_t>(n)));

  const nlohmann::json h = nlohmann::json::parse(hdr.raw.begin() + 8, hdr.raw.end(), nullptr,
                                                 /*allow_exceptions=*/false);
  if (h.is_discarded() || !h.is_object()) {
    return Status::errorf("{}: header is not a JSON object", path);
  }
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) return Status::errorf("{}: __metadata__ is not an object", path);
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) {
          return Status::errorf("{}: __metadata__.{} is not a string", path, m.key());
        }
        hdr.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string() ||
        !v.contains("shape") || !v["shape"].is_array() || !v.contains("data_offsets") ||
        !v["data_offsets"].is_array() || v["data_offsets"].size() != 2) {
      return Status::errorf("{}: tensor '{}': header entry needs dtype, shape and data_offsets [b, e]",
                            path, key);
    }
    SafetensorsEntry e;
    e.name = key;
    e.dtype = v["dtype"].get<std::string>();
    const int64_t elem = safetensors_dtype_bytes(e.dtype);
    if (elem == 0) return Status::errorf("{}: tensor '{}': unknown dtype '{}'", path, key, e.dtype);
    int64_t numel = 1;
    for (const nlohmann::json& d : v["shape"]) {
      if (!is_nonneg_int(d)) {
        return Status::errorf("{}: tensor '{}': shape {} has a negative or non-integer entry",
                              path, key, v["shape"].dump());
      }
      e.shape.push_back(as_int(d));
      if (__builtin_mul_overflow(numel, e.shape.back(), &numel)) {
        return Status::errorf("{}: tensor '{}': shape {} overflows", path, key, v["shape"].dump());
      }
    }
    const nlohmann::json& off = v["data_offsets"];
    if (!is_nonneg_int(off[0]) || !is_nonneg_int(off[1]) || as_int(off[0]) > as_int(off[1])) {
      return Status::errorf("{}: tensor '{}': bad data_offsets {}", path, key, off.dump());
    }
    e.begin = as_int(off[0]);
    e.end = as_int(off[1]);
    int64_t bytes = 0;
    if (__builtin_mul_overflow(numel, elem, &bytes) || bytes != e.end - e.begin) {
      return Status::errorf("{}: tensor '{}': data_offsets {} hold {} bytes, shape {} x {} needs {}",
                            path, key, off.dump(), e.end - e.begin, v["shape"].dump(), e.dtype,
                            numel * elem);
    }
    hdr.entries.push_back(std::move(e));
  }
  std::sort(hdr.entries.begin(), hdr.entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  int64_t expect = 0;
  for (const SafetensorsEntry& e : hdr.entries) {
    if (e.begin != expect) {
      return Status::errorf("{}: tensor '{}': data starts at byte {} of the data section, expected "
                            "{} (holes and overlaps are not allowed)",
                            path, e.name, e.begin, expect);
    }
    expect = e.end;
  }
  if (hdr.data_start + expect != size) {
    return Status::errorf("{}: header describes {} bytes of data but the file holds {}", path,
                          expect, size - hdr.data_start);
  }
  return hdr;
}

}  // namespace mt
