// safetensors_dir.cpp — see safetensors_dir.h.
#include "export/safetensors_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "ckpt/safetensors.h"
#include "core/bf16.h"
#include "core/file_io.h"
#include "export/export_files.h"

namespace fs = std::filesystem;

namespace mt {
const char* dtype_name(TensorDtype d) { return d == TensorDtype::kF32 ? "F32" : "BF16"; }
int64_t dtype_bytes(TensorDtype d) { return d == TensorDtype::kF32 ? 4 : 2; }

Result<std::vector<std::string>> write_safetensors_shards(const std::string& dir,
                                                          const std::vector<NamedTensor>& tensors,
                                                          const std::map<std::string, std::string>& metadata,
                                                          int64_t max_shard_bytes, TensorDtype dtype,
                                                          FileSystem& file_system) {
  auto dtype_of = [&](const NamedTensor& t) { return t.keep_f32 ? TensorDtype::kF32 : dtype; };
  // Greedy packing in the given order.
  std::vector<std::vector<const NamedTensor*>> shards(1);
  int64_t in_shard = 0, total = 0;
  std::set<std::string> names;
  for (const NamedTensor& t : tensors) {
    if (!names.insert(t.name).second) return Status::errorf("{}: tensor {} given twice", dir, t.name);
    const int64_t bytes = int64_t(t.data.size()) * dtype_bytes(dtype_of(t));
    if (in_shard > 0 && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&t);
    in_shard += bytes;
    total += bytes;
  }
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = "pt";
  std::vector<std::string> files;
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name = shards.size() == 1
                                 ? "model.safetensors"
                                 : fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
    // The safetensors header lists tensors by name; data in that order.
    std::vector<const NamedTensor*> order = shards[s];
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->name < b->name; });
    std::vector<SafetensorsEntry> entries;
    int64_t at = 0;
    for (const NamedTensor* t : order) {
      entries.push_back(
          {t->name, dtype_name(dtype_of(*t)), t->shape, at, at + int64_t(t->data.size()) * dtype_bytes(dtype_of(*t))});
      at = entries.back().end;
      weight_map[t->name] = name;
    }
    const std::string header = encode_safetensors_header(entries, meta);
    MT_RETURN_IF_ERROR(write_file_atomic(
        path_in(dir, name),
        [&](WritableFile& f) {
          MT_RETURN_IF_ERROR(f.append(header.data(), int64_t(header.size())));
          for (const NamedTensor* t : order) {
            if (dtype_of(*t) == TensorDtype::kF32) {
              MT_RETURN_IF_ERROR(f.append(t->data.data(), int64_t(t->data.size()) * 4));
              continue;
            }
            std::vector<bf16> rounded(t->data.size());  // round to nearest even, as the bf16 forward does
            convert_f32_to_bf16_span(rounded.data(), t->data.data(), int64_t(rounded.size()));
            MT_RETURN_IF_ERROR(f.append(rounded.data(), int64_t(rounded.size()) * 2));
          }
          return Status::ok();
        },
        file_system));
    files.push_back(name);
  }
  std::error_code ec;
  if (shards.size() > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    MT_RETURN_IF_ERROR(write_json(path_in(dir, kSafetensorsIndexFile), index, file_system));
    files.push_back(kSafetensorsIndexFile);
    fs::remove(path_in(dir, "model.safetensors"), ec);  // a stale unsharded file would shadow the index
  } else {
    fs::remove(path_in(dir, kSafetensorsIndexFile), ec);
  }
  return files;
}

Result<SafetensorsModel> read_safetensors_model(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  const std::string index = path_in(dir, kSafetensorsIndexFile);
  if (fs::exists(index, ec)) {
    auto text = read_file(index, "safetensors index");
    if (!text) return text.status();
    auto j = nlohmann::json::parse(text.value(), nullptr, false);
    if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object())
      return Status::errorf("{}: not a safetensors index (no \"weight_map\" object)", index);
    std::set<std::string> seen;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) return Status::errorf("{}: weight_map[\"{}\"] is not a file name", index, name);
      if (seen.insert(file.get<std::string>()).second) files.push_back(file.get<std::string>());
    }
  } else if (fs::exists(path_in(dir, "model.safetensors"), ec)) {
    files.push_back("model.safetensors");
  } else {
    return Status::errorf("{}: neither model.safetensors nor {}", dir, kSafetensorsIndexFile);
  }
  SafetensorsModel out;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string path = path_in(dir, files[i]);
    auto file = default_file_system().open_readable_file(path);
    if (!file) return file.status();
    auto header = read_safetensors_header(*file.value(), path);
    if (!header) return header.status();
    if (i == 0) out.metadata = header.value().metadata;
    for (const SafetensorsEntry& e : header.value().entries) {
      NamedTensor t{e.name, e.shape, {}};
      const int64_t esize = safetensors_dtype_bytes(e.dtype), n = (e.end - e.begin) / std::max<int64_t>(1, esize);
      std::string raw(size_t(e.end - e.begin), '\0');
      MT_RETURN_IF_ERROR(file.value()->read_at(header.value().data_start + e.begin, raw.data(), e.end - e.begin));
      t.data.resize(size_t(n));
      if (e.dtype == "F32") {
        std::memcpy(t.data.data(), raw.data(), raw.size());
      } else if (e.dtype == "BF16") {
        for (int64_t k = 0; k < n; ++k) {
          bf16 b;
          std::memcpy(&b, raw.data() + 2 * k, 2);
          t.data[size_t(k)] = bf16_to_f32(b);  // exact: bf16 is fp32's top half
        }
      } else {
        return Status::errorf("{}: tensor {} has dtype {}; import reads F32 and BF16", path, e.name, e.dtype);
      }
      if (!out.tensors.emplace(e.name, std::move(t)).second)
        return Status::errorf("{}: tensor {} appears in two shards", path, e.name);
    }
  }
  return out;
}

}  // namespace mt
