// manifest.cpp — manifest.json encode/decode. Decoding never throws: every
// field is type-checked and every message names the file and the JSON path.
#include "ckpt/manifest.h"

#include <set>

#include "core/hash.h"

namespace mt {
namespace {

using nlohmann::json;

// Typed access to one JSON object, with "<path>: <where>.<key>" in messages.
class Fields {
 public:
  Fields(const json& obj, std::string path, std::string where)
      : obj_(obj), path_(std::move(path)), where_(std::move(where)) {}

  Status err(const std::string& key, const std::string& what) const {
    return Status::errorf("{}: {}{}{}: {}", path_, where_, where_.empty() ? "" : ".", key, what);
  }
  Result<const json*> field(const std::string& key) const {
    if (!obj_.is_object()) return Status::errorf("{}: {}: expected an object", path_, where_);
    auto it = obj_.find(key);
    if (it == obj_.end()) return err(key, "missing");
    return &*it;
  }
  Status get_int(const std::string& key, int64_t min, int64_t* out) const {
    auto f = field(key);
    if (!f) return f.status();
    const json& v = **f;
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) ||
        v.get<int64_t>() < min) {
      return err(key, fmt::format("expected an integer >= {}, got {}", min, v.dump()));
    }
    *out = v.get<int64_t>();
    return Status::ok();
  }
  Status get_string(const std::string& key, std::string* out) const {
    auto f = field(key);
    if (!f) return f.status();
    if (!(*f)->is_string()) return err(key, "expected a string");
    *out = (*f)->get<std::string>();
    return Status::ok();
  }
  Status get_hex(const std::string& key, uint64_t* out) const {
    std::string s;
    MT_RETURN_IF_ERROR(get_string(key, &s));
    if (!parse_hex64(s, out)) return err(key, fmt::format("expected 16 hex digits, got '{}'", s));
    return Status::ok();
  }
  Status get_array(const std::string& key, const json** out) const {
    auto f = field(key);
    if (!f) return f.status();
    if (!(*f)->is_array()) return err(key, "expected an array");
    *out = *f;
    return Status::ok();
  }
  std::string sub(const std::string& key) const {
    return where_.empty() ? key : where_ + "." + key;
  }

 private:
  const json& obj_;
  std::string path_;
  std::string where_;
};

bool plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

json to_json(const Manifest& m) {
  json files = json::array();
  for (const ManifestFile& f : m.files) {
    files.push_back({{"name", f.name}, {"rank", f.rank}, {"bytes", f.bytes}, {"xxh64", hex64(f.xxh64)}});
  }
  json tensors = json::array();
  for (const ManifestTensor& t : m.tensors) {
    json pieces = json::array();
    for (const ManifestPiece& p : t.pieces) {
      pieces.push_back({{"file", p.file},
                        {"offset", p.offset},
                        {"count", p.count},
                        {"byte_range", {p.byte_begin, p.byte_end}},
                        {"xxh64", hex64(p.xxh64)}});
    }
    tensors.push_back({{"name", t.name},
                       {"dtype", t.dtype},
                       {"shape", t.shape},
                       {"numel", t.numel},
                       {"xxh64", hex64(t.xxh64)},
                       {"pieces", std::move(pieces)}});
  }
  return {{"format", kCheckpointFormatName},
          {"format_version", m.format_version},
          {"step", m.step},
          {"world_size", m.world_size},
          {"config_toml", m.config_toml},
          {"state", m.state},
          {"tensor_hash", hex64(m.tensor_hash)},
          {"files", std::move(files)},
          {"tensors", std::move(tensors)}};
}

Result<Manifest> from_json(const json& j, const std::string& path) {
  Manifest m;
  Fields top(j, path, "");
  std::string format;
  MT_RETURN_IF_ERROR(top.get_string("format", &format));
  if (format != kCheckpointFormatName) {
    return top.err("format", fmt::format("expected '{}', got '{}'", kCheckpointFormatName, format));
  }
  MT_RETURN_IF_ERROR(top.get_int("format_version", 0, &m.format_version));
  if (m.format_version != kCheckpointFormatVersion) {
    return top.err("format_version", fmt::format("version {} is not supported (this build reads {})",
                                                 m.format_version, kCheckpointFormatVersion));
  }
  MT_RETURN_IF_ERROR(top.get_int("step", 0, &m.step));
  MT_RETURN_IF_ERROR(top.get_int("world_size", 1, &m.world_size));
  MT_RETURN_IF_ERROR(top.get_string("config_toml", &m.config_toml));
  auto state = top.field("state");
  if (!state) return state.status();
  m.state = **state;
  MT_RETURN_IF_ERROR(top.get_hex("tensor_hash", &m.tensor_hash));

  const json* files = nullptr;
  MT_RETURN_IF_ERROR(top.get_array("files", &files));
  for (size_t i = 0; i < files->size(); ++i) {
    Fields f((*files)[i], path, fmt::format("files[{}]", i));
    ManifestFile mf;
    MT_RETURN_IF_ERROR(f.get_string("name", &mf.name));
    MT_RETURN_IF_ERROR(f.get_int("rank", 0, &mf.rank));
    MT_RETURN_IF_ERROR(f.get_int("bytes", 0, &mf.bytes));
    MT_RETURN_IF_ERROR(f.get_hex("xxh64", &mf.xxh64));
    m.files.push_back(std::move(mf));
  }

  const json* tensors = nullptr;
  MT_RETURN_IF_ERROR(top.get_array("tensors", &tensors));
  for (size_t i = 0; i < tensors->size(); ++i) {
    Fields t((*tensors)[i], path, fmt::format("tensors[{}]", i));
    ManifestTensor mt;
    MT_RETURN_IF_ERROR(t.get_string("name", &mt.name));
    MT_RETURN_IF_ERROR(t.get_string("dtype", &mt.dtype));
    const json* shape = nullptr;
    MT_RETURN_IF_ERROR(t.get_array("shape", &shape));
    for (const json& d : *shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        return t.err("shape", fmt::format("expected non-negative integers, got {}", shape->dump()));
      }
      mt.shape.push_back(d.get<int64_t>());
    }
    MT_RETURN_IF_ERROR(t.get_int("numel", 0, &mt.numel));
    MT_RETURN_IF_ERROR(t.get_hex("xxh64", &mt.xxh64));
    const json* pieces = nullptr;
    MT_RETURN_IF_ERROR(t.get_array("pieces", &pieces));
    for (size_t k = 0; k < pieces->size(); ++k) {
      Fields p((*pieces)[k], path, fmt::format("tensors[{}].pieces[{}]", i, k));
      ManifestPiece mp;
      MT_RETURN_IF_ERROR(p.get_string("file", &mp.file));
      MT_RETURN_IF_ERROR(p.get_int("offset", 0, &mp.offset));
      MT_RETURN_IF_ERROR(p.get_int("count", 0, &mp.count));
      const json* range = nullptr;
      MT_RETURN_IF_ERROR(p.get_array("byte_range", &range));
      if (range->size() != 2 || !(*range)[0].is_number_integer() ||
          !(*range)[1].is_number_integer()) {
        return p.err("byte_range", "expected [begin, end]");
      }
      mp.byte_begin = (*range)[0].get<int64_t>();
      mp.byte_end = (*range)[1].get<int64_t>();
      MT_RETURN_IF_ERROR(p.get_hex("xxh64", &mp.xxh64));
      mt.pieces.push_back(std::move(mp));
    }
    m.tensors.push_back(std::move(mt));
  }
  return m;
}

}  // namespace

int64_t checkpoint_dtype_bytes(const std::string& dtype) { return dtype == "F32" ? 4 : 0; }

bool parse_hex64(const std::string& s, uint64_t* out) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

Status validate_manifest(const Manifest& m, const std::string& where) {
  if (m.step < 0) return Status::errorf("{}: step {} is negative", where, m.step);
  if (m.world_size < 1 || static_cast<int64_t>(m.files.size()) != m.world_size) {
    return Status::errorf("{}: world_size {} but {} files listed", where, m.world_size,
                          m.files.size());
  }
  std::set<std::string> file_names;
  for (size_t r = 0; r < m.files.size(); ++r) {
    const ManifestFile& f = m.files[r];
    if (f.rank != static_cast<int64_t>(r)) {
      return Status::errorf("{}: files[{}] has rank {}; files must be listed by rank 0..{}", where,
                            r, f.rank, m.world_size - 1);
    }
    if (!plain_file_name(f.name) || f.name == kManifestFileName) {
      return Status::errorf("{}: files[{}]: '{}' is not a valid tensor file name", where, r, f.name);
    }
    if (!file_names.insert(f.name).second) {
      return Status::errorf("{}: file '{}' is listed twice", where, f.name);
    }
  }
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const ManifestTensor& t = m.tensors[i];
    if (t.name.empty() || t.name == "__metadata__") {
      return Status::errorf("{}: tensors[{}]: invalid name '{}'", where, i, t.name);
    }
    if (i > 0 && !(m.tensors[i - 1].name < t.name)) {
      return Status::errorf("{}: tensor '{}': tensors must be sorted by name without duplicates",
                            where, t.name);
    }
    const int64_t elem = checkpoint_dtype_bytes(t.dtype);
    if (elem == 0) {
      return Status::errorf("{}: tensor '{}': unsupported dtype '{}' (this build reads F32)", where,
                            t.name, t.dtype);
    }
    int64_t numel = 1, bytes = 0;
    for (int64_t d : t.shape) {
      if (d < 0 || __builtin_mul_overflow(numel, d, &numel)) {
        return Status::errorf("{}: tensor '{}': invalid shape", where, t.name);
      }
    }
    if (numel != t.numel || __builtin_mul_overflow(numel, elem, &bytes)) {
      return Status::errorf("{}: tensor '{}': numel {} does not match its shape ({} elements)",
                            where, t.name, t.numel, numel);
    }
    int64_t next = 0;
    std::set<std::string> files_used;
    for (const ManifestPiece& p : t.pieces) {
      if (!file_names.count(p.file)) {
        return Status::errorf("{}: tensor '{}': piece in unlisted file '{}'", where, t.name, p.file);
      }
      if (!files_used.insert(p.file).second) {
        return Status::errorf("{}: tensor '{}': two pieces in file '{}'", where, t.name, p.file);
      }
      if (p.offset != next || p.count < 0 || p.count > numel - p.offset) {
        return Status::errorf("{}: tensor '{}': piece [{}, {}) in '{}' leaves a gap or overlaps; "
                              "pieces must cover elements [0, {}) in order",
                              where, t.name, p.offset, p.offset + p.count, p.file, numel);
      }
      if (p.byte_begin < 0 || p.byte_end - p.byte_begin != p.count * elem) {
        return Status::errorf("{}: tensor '{}': byte_range [{}, {}) in '{}' does not hold {} "
                              "elements",
                              where, t.name, p.byte_begin, p.byte_end, p.file, p.count);
      }
      next = p.offset + p.count;
    }
    if (next != numel) {
      return Status::errorf("{}: tensor '{}': pieces cover elements [0, {}) of {}", where, t.name,
                            next, numel);
    }
  }
  return Status::ok();
}

Result<std::string> encode_manifest(const Manifest& m) {
  try {
    json j = to_json(m);
    const std::string body = j.dump();
    j["manifest_xxh64"] = hex64(xxh64(body.data(), body.size()));
    return j.dump(2) + "\n";
  } catch (const json::exception& e) {
    // dump() throws on strings that are not valid UTF-8.
    return Status::errorf("checkpoint manifest for step {}: cannot encode config or state: {}",
                          m.step, e.what());
  }
}

Result<Manifest> decode_manifest(const std::string& text, const std::string& path) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::errorf("{}: not a JSON object (corrupt or truncated)", path);
  }
  auto it = j.find("manifest_xxh64");
  if (it == j.end() || !it->is_string()) {
    return Status::errorf("{}: manifest_xxh64: missing", path);
  }
  uint64_t want = 0;
  if (!parse_hex64(it->get<std::string>(), &want)) {
    return Status::errorf("{}: manifest_xxh64: expected 16 hex digits", path);
  }
  j.erase(it);
  std::string body;
  try {
    body = j.dump();
  } catch (const json::exception& e) {
    return Status::errorf("{}: {}", path, e.what());
  }
  const uint64_t got = xxh64(body.data(), body.size());
  if (got != want) {
    return Status::errorf("{}: manifest checksum mismatch (content hashes to {}, manifest_xxh64 "
                          "says {}): the manifest was modified or corrupted",
                          path, hex64(got), hex64(want));
  }
  auto m = from_json(j, path);
  if (!m) return m.status();
  MT_RETURN_IF_ERROR(validate_manifest(*m, path));
  return m;
}

}  // namespace mt
