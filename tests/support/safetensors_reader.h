// safetensors_reader.h — minimal reader of the safetensors format for tests:
// u64 little-endian header size, a JSON header mapping tensor names to
// {dtype, shape, data_offsets: [begin, end)} (offsets relative to the end of
// the header) plus an optional "__metadata__" string map, then the raw
// little-endian data. Supports F32 and I32, which is all the golden fixtures
// (tools/ref/moe_reference.py) contain. Deliberately independent of
// src/ckpt so the fixtures test the model, not our own writer.
#pragma once
#include <nlohmann/json.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mt::testing {

static_assert(std::endian::native == std::endian::little, "reader assumes a little-endian host");

struct SafetensorsTensor {
  std::string dtype;           // "F32" or "I32"
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;  // byte range within the data section
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

class SafetensorsFile {
 public:
  // Reads and validates the whole file; on failure returns nullopt and sets *error.
  static std::optional<SafetensorsFile> load(const std::string& path, std::string* error) {
    auto fail = [&](const std::string& why) {
      *error = path + ": " + why;
      return std::nullopt;
    };
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("cannot open");
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 8) return fail("shorter than the 8-byte header size");
    uint64_t hlen = 0;
    std::memcpy(&hlen, bytes.data(), 8);
    if (hlen > bytes.size() - 8) return fail("header size past end of file");
    nlohmann::json header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + int64_t(hlen),
                                                  nullptr, /*allow_exceptions=*/false);
    if (header.is_discarded() || !header.is_object()) return fail("header is not a JSON object");
    SafetensorsFile f;
    const int64_t data_size = int64_t(bytes.size() - 8 - hlen);
    f.data_.assign(bytes.begin() + 8 + int64_t(hlen), bytes.end());
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        for (auto m = it->begin(); m != it->end(); ++m) {
          if (!m->is_string()) return fail("metadata value " + m.key() + " is not a string");
          f.metadata_[m.key()] = m->get<std::string>();
        }
        continue;
      }
      const nlohmann::json& t = *it;
      if (!t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
        return fail("tensor " + it.key() + " lacks dtype/shape/data_offsets");
      SafetensorsTensor st;
      st.dtype = t["dtype"].get<std::string>();
      st.shape = t["shape"].get<std::vector<int64_t>>();
      st.begin = t["data_offsets"][0].get<int64_t>();
      st.end = t["data_offsets"][1].get<int64_t>();
      if (st.dtype != "F32" && st.dtype != "I32") return fail("tensor " + it.key() + ": dtype " + st.dtype);
      if (st.begin < 0 || st.end > data_size || st.end - st.begin != st.numel() * 4)
        return fail("tensor " + it.key() + ": bad data_offsets");
      f.tensors_[it.key()] = st;
    }
    return f;
  }

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const SafetensorsTensor& info(const std::string& name) const { return tensors_.at(name); }
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Contents of a tensor of the given element type (dtype must match).
  std::vector<float> f32(const std::string& name) const { return read<float>(name, "F32"); }
  std::vector<int32_t> i32(const std::string& name) const { return read<int32_t>(name, "I32"); }

 private:
  template <class T>
  std::vector<T> read(const std::string& name, const char* dtype) const {
    const SafetensorsTensor& t = tensors_.at(name);
    if (t.dtype != dtype) return {};
    std::vector<T> out(size_t(t.numel()));
    std::memcpy(out.data(), data_.data() + t.begin, size_t(t.end - t.begin));
    return out;
  }

  std::map<std::string, SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
  std::vector<char> data_;
};

}  // namespace mt::testing
