// gguf_file.cpp — see gguf_file.h.
#include "export/gguf_file.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <set>

#include "core/bf16.h"
#include "core/file_io.h"

namespace mt {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF", little-endian
constexpr uint32_t kVersion = 3;
constexpr uint64_t kAlignment = 32;
constexpr int64_t kQ8Block = 32;

// gguf_type codes of the value kinds GgufValue holds.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32v = 6, kBool = 7, kString = 8, kArray = 9, kU64 = 10 };

uint16_t f32_to_f16(float f) {
  const _Float16 h = static_cast<_Float16>(f);  // round to nearest even
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

float f16_to_f32(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}

uint64_t aligned(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

struct Out {
  std::string b;
  template <typename T>
  void put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    b += s;
  }
};

void put_value(Out& o, const GgufValue& v) {
  struct Visit {
    Out& o;
    void operator()(uint32_t x) { o.put(kU32), o.put(x); }
    void operator()(int32_t x) { o.put(kI32), o.put(x); }
    void operator()(uint64_t x) { o.put(kU64), o.put(x); }
    void operator()(float x) { o.put(kF32v), o.put(x); }
    void operator()(bool x) { o.put(kBool), o.put(uint8_t(x ? 1 : 0)); }
    void operator()(const std::string& x) { o.put(kString), o.str(x); }
    void operator()(const std::vector<std::string>& x) {
      o.put(kArray), o.put(kString), o.put<uint64_t>(x.size());
      for (const std::string& s : x) o.str(s);
    }
    void operator()(const std::vector<float>& x) {
      o.put(kArray), o.put(kF32v), o.put<uint64_t>(x.size());
      for (float f : x) o.put(f);
    }
    void operator()(const std::vector<int32_t>& x) {
      o.put(kArray), o.put(kI32), o.put<uint64_t>(x.size());
      for (int32_t i : x) o.put(i);
    }
  };
  std::visit(Visit{o}, v);
}

// The tensor's bytes in its type.
std::string encode(const GgufTensor& t) {
  std::string b(size_t(ggml_bytes(t.type, int64_t(t.data.size()))), '\0');
  char* p = b.data();
  switch (t.type) {
    case GgmlType::kF32:
      std::memcpy(p, t.data.data(), b.size());
      break;
    case GgmlType::kF16:
      for (size_t i = 0; i < t.data.size(); ++i) {
        const uint16_t h = f32_to_f16(t.data[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      break;
    case GgmlType::kBf16:
      for (size_t i = 0; i < t.data.size(); ++i) {
        const bf16 h = f32_to_bf16(t.data[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      break;
    case GgmlType::kQ8_0:
      for (size_t k = 0; k < t.data.size() / kQ8Block; ++k) {
        const Q8Block q = quantize_q8_0(t.data.data() + k * kQ8Block);
        std::memcpy(p + k * 34, &q.scale_f16, 2);
        std::memcpy(p + k * 34 + 2, q.q, 32);
      }
      break;
  }
  return b;
}

// Reads little-endian fields from a byte string, remembering the first error.
struct In {
  const std::string& b;
  const std::string& path;
  size_t at = 0;
  std::string error;
  bool need(size_t n, const char* what) {
    if (error.empty() && at + n > b.size())
      error = fmt::format("{}: truncated at byte {} (reading {})", path, at, what);
    return error.empty();
  }
  template <typename T>
  T get(const char* what) {
    T v{};
    if (!need(sizeof(T), what)) return v;
    std::memcpy(&v, b.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    const uint64_t n = get<uint64_t>(what);
    if (!need(n, what)) return {};
    std::string s = b.substr(at, n);
    at += n;
    return s;
  }
};

Result<GgufValue> get_value(In& in, const std::string& key) {
  const uint32_t type = in.get<uint32_t>("a value type");
  if (!in.error.empty()) return Status::errorf("{}", in.error);
  switch (type) {
    case kU32:
      return GgufValue(in.get<uint32_t>("a uint32"));
    case kI32:
      return GgufValue(in.get<int32_t>("an int32"));
    case kU64:
      return GgufValue(in.get<uint64_t>("a uint64"));
    case kF32v:
      return GgufValue(in.get<float>("a float32"));
    case kBool:
      return GgufValue(in.get<uint8_t>("a bool") != 0);
    case kString:
      return GgufValue(in.str("a string"));
    case kArray: {
      const uint32_t elem = in.get<uint32_t>("an array type");
      const uint64_t n = in.get<uint64_t>("an array length");
      if (!in.need(n, "an array")) break;  // every element takes a byte or more
      if (elem == kString) {
        std::vector<std::string> v;
        for (uint64_t i = 0; i < n && in.error.empty(); ++i) v.push_back(in.str("an array string"));
        return GgufValue(std::move(v));
      }
      if (elem == kF32v) {
        std::vector<float> v;
        for (uint64_t i = 0; i < n && in.error.empty(); ++i) v.push_back(in.get<float>("an array float32"));
        return GgufValue(std::move(v));
      }
      if (elem == kI32) {
        std::vector<int32_t> v;
        for (uint64_t i = 0; i < n && in.error.empty(); ++i) v.push_back(in.get<int32_t>("an array int32"));
        return GgufValue(std::move(v));
      }
      return Status::errorf("{}: key {}: arrays of gguf type {} are not read", in.path, key, elem);
    }
    default:
      return Status::errorf("{}: key {}: gguf value type {} is not read", in.path, key, type);
  }
  return Status::errorf("{}", in.error);
}

}  // namespace

const char* ggml_type_name(GgmlType t) {
  switch (t) {
    case GgmlType::kF32:
      return "F32";
    case GgmlType::kF16:
      return "F16";
    case GgmlType::kQ8_0:
      return "Q8_0";
    case GgmlType::kBf16:
      return "BF16";
  }
  return "?";
}

int64_t ggml_bytes(GgmlType type, int64_t n) {
  switch (type) {
    case GgmlType::kF32:
      return 4 * n;
    case GgmlType::kF16:
    case GgmlType::kBf16:
      return 2 * n;
    case GgmlType::kQ8_0:
      return n / kQ8Block * 34;
  }
  return 0;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

Q8Block quantize_q8_0(const float* x) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
  Q8Block b;
  b.scale_f16 = f32_to_f16(d);
  for (int i = 0; i < 32; ++i) b.q[i] = int8_t(std::lround(x[i] * id));
  return b;
}

void dequantize_q8_0(const Q8Block& b, float* out) {
  const float d = f16_to_f32(b.scale_f16);
  for (int i = 0; i < 32; ++i) out[i] = float(b.q[i]) * d;
}

Status write_gguf(const std::string& path, const GgufFile& f, FileSystem& fs) {
  std::set<std::string> seen;
  for (const auto& [k, v] : f.metadata)
    if (!seen.insert(k).second) return Status::errorf("{}: metadata key {} given twice", path, k);
  seen.clear();
  for (const GgufTensor& t : f.tensors) {
    if (!seen.insert(t.name).second) return Status::errorf("{}: tensor {} given twice", path, t.name);
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    if (t.shape.empty() || n != int64_t(t.data.size()))
      return Status::errorf("{}: tensor {} has {} values for its shape", path, t.name, t.data.size());
    if (t.type == GgmlType::kQ8_0 && t.shape.back() % kQ8Block != 0)
      return Status::errorf("{}: tensor {}: Q8_0 needs an innermost dimension that is a multiple of 32, not {}", path,
                            t.name, t.shape.back());
  }
  Out o;
  o.put(kMagic);
  o.put(kVersion);
  o.put<uint64_t>(f.tensors.size());
  o.put<uint64_t>(f.metadata.size());
  for (const auto& [k, v] : f.metadata) {
    o.str(k);
    put_value(o, v);
  }
  uint64_t offset = 0;
  for (const GgufTensor& t : f.tensors) {
    o.str(t.name);
    o.put<uint32_t>(uint32_t(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) o.put<uint64_t>(uint64_t(*d));  // innermost first
    o.put<uint32_t>(uint32_t(t.type));
    o.put<uint64_t>(offset);
    offset = aligned(offset + uint64_t(ggml_bytes(t.type, int64_t(t.data.size()))));
  }
  o.b.resize(size_t(aligned(o.b.size())), '\0');
  return write_file_atomic(
      path,
      [&](WritableFile& w) {
        MT_RETURN_IF_ERROR(w.append(o.b.data(), int64_t(o.b.size())));
        for (const GgufTensor& t : f.tensors) {
          std::string bytes = encode(t);
          bytes.resize(size_t(aligned(bytes.size())), '\0');
          MT_RETURN_IF_ERROR(w.append(bytes.data(), int64_t(bytes.size())));
        }
        return Status::ok();
      },
      fs);
}

Result<GgufFile> read_gguf(const std::string& path) {
  auto text = read_file(path, "GGUF file");
  if (!text) return text.status();
  const std::string& b = text.value();
  In in{b, path, 0, {}};
  if (in.get<uint32_t>("the magic") != kMagic) return Status::errorf("{}: not a GGUF file (magic)", path);
  if (const uint32_t v = in.get<uint32_t>("the version"); v != kVersion)
    return Status::errorf("{}: GGUF version {}; reads version {}", path, v, kVersion);
  const uint64_t n_tensors = in.get<uint64_t>("the tensor count"), n_kv = in.get<uint64_t>("the key count");
  GgufFile f;
  for (uint64_t i = 0; i < n_kv && in.error.empty(); ++i) {
    const std::string key = in.str("a key");
    auto v = get_value(in, key);
    if (!v) return v.status();
    f.metadata.emplace_back(key, std::move(v.value()));
  }
  std::vector<uint64_t> offsets;
  for (uint64_t i = 0; i < n_tensors && in.error.empty(); ++i) {
    GgufTensor t;
    t.name = in.str("a tensor name");
    const uint32_t dims = in.get<uint32_t>("a dimension count");
    if (dims == 0 || dims > 4) return Status::errorf("{}: tensor {} has {} dimensions", path, t.name, dims);
    for (uint32_t d = 0; d < dims; ++d) t.shape.insert(t.shape.begin(), int64_t(in.get<uint64_t>("a dimension")));
    const uint32_t type = in.get<uint32_t>("a tensor type");
    if (type != 0 && type != 1 && type != 8 && type != 30)
      return Status::errorf("{}: tensor {} has ggml type {}; reads F32, F16, Q8_0 and BF16", path, t.name, type);
    t.type = GgmlType(type);
    offsets.push_back(in.get<uint64_t>("a tensor offset"));
    f.tensors.push_back(std::move(t));
  }
  if (!in.error.empty()) return Status::errorf("{}", in.error);
  const uint64_t data_start = aligned(in.at);
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    GgufTensor& t = f.tensors[i];
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const int64_t bytes = ggml_bytes(t.type, n);
    if (offsets[i] % kAlignment != 0 || data_start + offsets[i] + uint64_t(bytes) > b.size())
      return Status::errorf("{}: tensor {}: its data at offset {} is misaligned or past the end", path, t.name,
                            offsets[i]);
    const char* p = b.data() + data_start + offsets[i];
    t.data.resize(size_t(n));
    for (int64_t k = 0; k < (t.type == GgmlType::kQ8_0 ? n / kQ8Block : n); ++k) {
      switch (t.type) {
        case GgmlType::kF32:
          std::memcpy(&t.data[size_t(k)], p + 4 * k, 4);
          break;
        case GgmlType::kF16: {
          uint16_t h;
          std::memcpy(&h, p + 2 * k, 2);
          t.data[size_t(k)] = f16_to_f32(h);
          break;
        }
        case GgmlType::kBf16: {
          bf16 h;
          std::memcpy(&h, p + 2 * k, 2);
          t.data[size_t(k)] = bf16_to_f32(h);
          break;
        }
        case GgmlType::kQ8_0: {
          Q8Block q;
          std::memcpy(&q.scale_f16, p + 34 * k, 2);
          std::memcpy(q.q, p + 34 * k + 2, 32);
          dequantize_q8_0(q, t.data.data() + k * kQ8Block);
          break;
        }
      }
    }
  }
  return f;
}

}  // namespace mt
