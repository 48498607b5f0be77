// checkpoint_read.cpp — finding, verifying and loading checkpoints. Every byte
// is checked against the manifest before a checkpoint is reported valid; bad
// files give a Status naming the file and tensor, never an abort.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_internal.h"
#include "ckpt/manifest.h"
#include "ckpt/safetensors.h"
#include "core/check.h"
#include "core/hash.h"

namespace mt {
namespace ckpt_internal {

Result<StoredHashes> hash_stored_tensors(FileSystem& fs, const std::string& dir,
                                         const Manifest& m) {
  std::map<std::string, std::unique_ptr<ReadableFile>> files;
  for (const ManifestFile& f : m.files) {
    const std::string path = join_path(dir, f.name);
    auto file = fs.open_readable_file(path);
    if (!file) return file.status();
    if ((*file)->size() != f.bytes) {
      return Status::errorf("{}: {} bytes, manifest says {}", path, (*file)->size(), f.bytes);
    }
    files[f.name] = std::move(*file);
  }
  constexpr int64_t kChunk = int64_t{4} << 20;
  std::vector<char> buf;
  StoredHashes out;
  Hasher all;
  for (const ManifestTensor& t : m.tensors) {
    hash_tensor_name(all, t.name);
    Hasher one;
    for (const ManifestPiece& p : t.pieces) {
      ReadableFile& file = *files.at(p.file);
      Hasher piece;
      for (int64_t at = p.byte_begin; at < p.byte_end; at += kChunk) {
        const int64_t n = std::min(kChunk, p.byte_end - at);
        buf.resize(n);
        MT_RETURN_IF_ERROR(file.read_at(at, buf.data(), n));
        piece.update(buf.data(), n);
        one.update(buf.data(), n);
        all.update(buf.data(), n);
      }
      if (piece.digest() != p.xxh64) {
        return Status::errorf("{}: tensor '{}' (elements [{}, {})): checksum mismatch: data hashes "
                              "to {}, manifest says {}",
                              join_path(dir, p.file), t.name, p.offset, p.offset + p.count,
                              hex64(piece.digest()), hex64(p.xxh64));
      }
    }
    out.per_tensor.push_back(one.digest());
  }
  out.tensor_hash = all.digest();
  return out;
}

}  // namespace ckpt_internal

using namespace ckpt_internal;

namespace {

std::string base_name(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.rfind('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

Result<Manifest> load_manifest(FileSystem& fs, const std::string& dir) {
  const std::string path = join_path(dir, kManifestFileName);
  auto file = fs.open_readable_file(path);
  if (!file) return file.status();
  constexpr int64_t kMaxManifestBytes = int64_t{1} << 30;
  const int64_t size = (*file)->size();
  if (size > kMaxManifestBytes) return Status::errorf("{}: {} bytes is too large", path, size);
  std::string text(size, '\0');
  MT_RETURN_IF_ERROR((*file)->read_at(0, text.data(), size));
  auto m = decode_manifest(text, path);
  if (!m) return m;
  int64_t dir_step;
  if (parse_step_dir_name(base_name(dir), &dir_step) && dir_step != m->step) {
    return Status::errorf("{}: step {} does not match the directory name {}", path, m->step,
                          base_name(dir));
  }
  return m;
}

// Where to put a piece's floats; nullptr = only verify.
using PieceSink = std::function<float*(const ManifestTensor&, const ManifestPiece&)>;

// Checks one tensor file against the manifest — size, header, the xxh64 of
// every piece and of the whole file — streaming it once, front to back.
Status scan_file(FileSystem& fs, const std::string& dir, const Manifest& m, const ManifestFile& f,
                 const PieceSink& sink) {
  const std::string path = join_path(dir, f.name);
  struct Ref {
    const ManifestTensor* t;
    const ManifestPiece* p;
  };
  std::vector<Ref> refs;
  for (const ManifestTensor& t : m.tensors) {
    for (const ManifestPiece& p : t.pieces) {
      if (p.file == f.name) refs.push_back({&t, &p});
    }
  }
  std::sort(refs.begin(), refs.end(),
            [](const Ref& a, const Ref& b) { return a.p->byte_begin < b.p->byte_begin; });

  auto file = fs.open_readable_file(path);
  if (!file) return file.status();
  const int64_t size = (*file)->size();
  if (size != f.bytes) {
    // The first tensor cut and a count: a list of every one would bury the message.
    int64_t n_cut = 0;
    std::string first;
    for (const Ref& r : refs)
      if (r.p->byte_end > size && n_cut++ == 0) first = r.t->name;
    return Status::errorf(
        "{}: {} bytes, manifest says {} ({}){}", path, size, f.bytes,
        size < f.bytes ? "truncated" : "longer than written",
        n_cut == 0 ? std::string()
                   : fmt::format("; {} of its {} tensors lie past the end, the first '{}'", n_cut, refs.size(), first));
  }
  auto header = read_safetensors_header(**file, path);
  if (!header) return header.status();

  if (header->entries.size() != refs.size()) {
    return Status::errorf("{}: header lists {} tensors, manifest expects {}", path,
                          header->entries.size(), refs.size());
  }
  for (const SafetensorsEntry& e : header->entries) {
    auto it = std::find_if(refs.begin(), refs.end(), [&](const Ref& r) { return r.t->name == e.name; });
    if (it == refs.end()) {
      return Status::errorf("{}: tensor '{}' is in the file but not in the manifest", path, e.name);
    }
    const ManifestTensor& t = *it->t;
    const ManifestPiece& p = *it->p;
    const bool whole = p.offset == 0 && p.count == t.numel;
    const std::vector<int64_t> want = whole ? t.shape : std::vector<int64_t>{p.count};
    if (e.dtype != t.dtype || e.shape != want ||
        header->data_start + e.begin != p.byte_begin || header->data_start + e.end != p.byte_end) {
      return Status::errorf("{}: tensor '{}': header says {} {} at bytes [{}, {}), manifest says "
                            "{} {} at [{}, {})",
                            path, e.name, e.dtype, shape_str(e.shape), header->data_start + e.begin,
                            header->data_start + e.end, t.dtype, shape_str(want), p.byte_begin,
                            p.byte_end);
    }
  }

  Hasher file_hash;
  file_hash.update(header->raw.data(), header->raw.size());
  constexpr int64_t kChunk = int64_t{4} << 20;
  std::vector<char> buf;
  for (const Ref& r : refs) {
    const ManifestPiece& p = *r.p;
    const int64_t bytes = p.byte_end - p.byte_begin;
    float* dst = sink ? sink(*r.t, p) : nullptr;
    uint64_t got;
    if (dst != nullptr) {
      MT_RETURN_IF_ERROR((*file)->read_at(p.byte_begin, dst, bytes));
      got = xxh64(dst, bytes);
      file_hash.update(dst, bytes);
    } else {
      Hasher piece;
      for (int64_t at = 0; at < bytes; at += kChunk) {
        const int64_t n = std::min(kChunk, bytes - at);
        buf.resize(n);
        MT_RETURN_IF_ERROR((*file)->read_at(p.byte_begin + at, buf.data(), n));
        piece.update(buf.data(), n);
        file_hash.update(buf.data(), n);
      }
      got = piece.digest();
    }
    if (got != p.xxh64) {
      return Status::errorf("{}: tensor '{}' (elements [{}, {})): checksum mismatch: data hashes "
                            "to {}, manifest says {}",
                            path, r.t->name, p.offset, p.offset + p.count, hex64(got),
                            hex64(p.xxh64));
    }
  }
  if (file_hash.digest() != f.xxh64) {
    return Status::errorf("{}: file checksum mismatch: hashes to {}, manifest says {}", path,
                          hex64(file_hash.digest()), hex64(f.xxh64));
  }
  return Status::ok();
}

Status check_tensor_hashes(const std::string& dir, const Manifest& m, const StoredHashes& h) {
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    if (h.per_tensor[i] != m.tensors[i].xxh64) {
      return Status::errorf("{}: tensor '{}': checksum mismatch: data hashes to {}, manifest says {}",
                            dir, m.tensors[i].name, hex64(h.per_tensor[i]),
                            hex64(m.tensors[i].xxh64));
    }
  }
  if (h.tensor_hash != m.tensor_hash) {
    return Status::errorf("{}: tensor_hash mismatch: data hashes to {}, manifest says {}", dir,
                          hex64(h.tensor_hash), hex64(m.tensor_hash));
  }
  return Status::ok();
}

Result<Manifest> verify_and_load_manifest(const std::string& dir, FileSystem& fs) {
  auto m = load_manifest(fs, dir);
  if (!m) return m;
  for (const ManifestFile& f : m->files) MT_RETURN_IF_ERROR(scan_file(fs, dir, *m, f, nullptr));
  auto hashes = hash_stored_tensors(fs, dir, *m);
  if (!hashes) return hashes.status();
  MT_RETURN_IF_ERROR(check_tensor_hashes(dir, *m, *hashes));
  return m;
}

}  // namespace

Status verify_checkpoint(const std::string& dir, FileSystem& fs) {
  return verify_and_load_manifest(dir, fs).status();
}

Result<LoadedCheckpoint> read_checkpoint(const std::string& dir, FileSystem& fs) {
  auto m = load_manifest(fs, dir);
  if (!m) return m.status();
  LoadedCheckpoint out;
  out.dir = dir;
  out.step = m->step;
  out.config_toml = m->config_toml;
  out.state = m->state;
  out.tensor_hash = hex64(m->tensor_hash);
  // Tensors are allocated once their file has passed its size and header checks.
  PieceSink sink = [&out](const ManifestTensor& t, const ManifestPiece& p) -> float* {
    LoadedTensor& lt = out.tensors[t.name];
    if (lt.data.size() != static_cast<size_t>(t.numel)) {
      lt.shape = t.shape;
      lt.data.resize(t.numel);
    }
    return lt.data.data() + p.offset;
  };
  for (const ManifestFile& f : m->files) MT_RETURN_IF_ERROR(scan_file(fs, dir, *m, f, sink));

  StoredHashes h;
  Hasher all;
  for (const ManifestTensor& t : m->tensors) {
    LoadedTensor& lt = out.tensors[t.name];  // creates empty tensors that have no pieces
    lt.shape = t.shape;
    const int64_t bytes = static_cast<int64_t>(lt.data.size() * sizeof(float));
    hash_tensor_name(all, t.name);
    all.update(lt.data.data(), bytes);
    h.per_tensor.push_back(xxh64(lt.data.data(), bytes));
  }
  h.tensor_hash = all.digest();
  MT_RETURN_IF_ERROR(check_tensor_hashes(dir, *m, h));
  return out;
}

Result<nlohmann::json> inspect_checkpoint(const std::string& dir, FileSystem& fs) {
  auto m = verify_and_load_manifest(dir, fs);
  if (!m) return m.status();
  nlohmann::json files = nlohmann::json::array();
  for (const ManifestFile& f : m->files) {
    files.push_back({{"name", f.name}, {"rank", f.rank}, {"bytes", f.bytes}, {"xxh64", hex64(f.xxh64)}});
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (const ManifestTensor& t : m->tensors) {
    nlohmann::json pieces = nlohmann::json::array();
    for (const ManifestPiece& p : t.pieces) {
      pieces.push_back({{"file", p.file}, {"offset", p.offset}, {"count", p.count}});
    }
    tensors.push_back({{"name", t.name},
                       {"dtype", t.dtype},
                       {"shape", t.shape},
                       {"numel", t.numel},
                       {"xxh64", hex64(t.xxh64)},
                       {"pieces", std::move(pieces)}});
  }
  return nlohmann::json{{"dir", dir},
                        {"step", m->step},
                        {"format_version", m->format_version},
                        {"world_size", m->world_size},
                        {"tensor_hash", hex64(m->tensor_hash)},
                        {"state", m->state},
                        {"files", std::move(files)},
                        {"tensors", std::move(tensors)}};
}

Result<std::string> find_latest_checkpoint(const std::string& root, FileSystem& fs) {
  auto names = fs.list_dir(root);
  if (!names) return names.status();
  std::vector<std::pair<int64_t, std::string>> steps;
  for (const std::string& n : *names) {
    int64_t s;
    if (parse_step_dir_name(n, &s)) steps.emplace_back(s, n);
  }
  if (steps.empty()) return Status::errorf("{}: no committed checkpoint (step_* directory)", root);
  std::sort(steps.rbegin(), steps.rend());
  for (const auto& [step, name] : steps) {
    const std::string dir = join_path(root, name);
    Status s = verify_checkpoint(dir, fs);
    if (s) return dir;
    std::fprintf(stderr, "moetrain: warning: skipping checkpoint %s: %s\n", dir.c_str(),
                 s.message().c_str());
  }
  return Status::errorf("{}: none of the {} committed checkpoints is valid (reasons above)", root,
                        steps.size());
}

std::string run_checkpoints_dir(const std::string& run_dir) { return run_dir + "/checkpoints"; }

Result<std::string> resolve_checkpoint_dir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec))
    return Status::errorf("{}: does not exist (expected a checkpoint or run directory)", dir);
  if (!std::filesystem::is_directory(dir, ec))
    return Status::errorf("{}: not a directory (expected a checkpoint or run directory)", dir);
  if (std::filesystem::exists(std::filesystem::path(dir) / "manifest.json", ec)) return dir;
  if (std::filesystem::is_directory(std::filesystem::path(dir) / "checkpoints", ec))
    return find_latest_checkpoint_dir(dir);
  auto latest = find_latest_checkpoint(dir);
  if (!latest)
    return Status::errorf("{}: neither a checkpoint (no manifest.json) nor a run directory (no checkpoints/): {}", dir,
                          latest.status().message());
  return latest;
}

Result<std::string> find_latest_checkpoint_dir(const std::string& run_dir) {
  FileSystem& fs = default_file_system();
  if (!fs.exists(run_checkpoints_dir(run_dir))) return Status::errorf("{}: no checkpoints", run_dir);
  return find_latest_checkpoint(run_checkpoints_dir(run_dir), fs);
}

bool has_committed_checkpoints(const std::string& run_dir) {
  auto names = default_file_system().list_dir(run_checkpoints_dir(run_dir));
  if (!names) return false;
  int64_t step;
  for (const std::string& n : names.value())
    if (parse_step_dir_name(n, &step)) return true;
  return false;
}

Status load_into(const LoadedCheckpoint& ckpt, const std::string& name,
                 const std::vector<int64_t>& shape, float* dst) {
  auto it = ckpt.tensors.find(name);
  if (it == ckpt.tensors.end()) {
    return Status::errorf("{}: tensor '{}' is not in the checkpoint", ckpt.dir, name);
  }
  if (it->second.shape != shape) {
    return Status::errorf("{}: tensor '{}': checkpoint has shape {}, expected {}", ckpt.dir, name,
                          shape_str(it->second.shape), shape_str(shape));
  }
  std::copy(it->second.data.begin(), it->second.data.end(), dst);
  return Status::ok();
}

Status load_range_into(const LoadedCheckpoint& ckpt, const std::string& name, int64_t offset,
                       int64_t count, float* dst) {
  auto it = ckpt.tensors.find(name);
  if (it == ckpt.tensors.end()) {
    return Status::errorf("{}: tensor '{}' is not in the checkpoint", ckpt.dir, name);
  }
  const int64_t numel = static_cast<int64_t>(it->second.data.size());
  if (offset < 0 || count < 0 || offset > numel || count > numel - offset) {
    return Status::errorf("{}: tensor '{}': elements [{}, {}) are outside its {} elements (shape {})",
                          ckpt.dir, name, offset, offset + count, numel,
                          shape_str(it->second.shape));
  }
  std::copy_n(it->second.data.begin() + offset, count, dst);
  return Status::ok();
}

std::string compute_tensor_hash(const std::vector<TensorView>& tensors) {
  std::vector<const TensorView*> order;
  for (const TensorView& v : tensors) order.push_back(&v);
  std::sort(order.begin(), order.end(),
            [](const TensorView* a, const TensorView* b) { return a->name < b->name; });
  Hasher all;
  for (const TensorView* v : order) {
    int64_t numel = 1;
    for (int64_t d : v->shape) numel *= d;
    MT_CHECK(v->offset == 0 && (v->count < 0 || v->count == numel),
             "compute_tensor_hash needs whole tensors; '{}' is a piece at {} of {} elements",
             v->name, v->offset, v->count);
    hash_tensor_name(all, v->name);
    for_each_f32_chunk(*v, numel, [&](const float* x, int64_t n) { all.update(x, size_t(n) * sizeof(float)); });
  }
  return hex64(all.digest());
}

std::string compute_tensor_hash(const LoadedCheckpoint& ckpt) {
  Hasher all;
  for (const auto& [name, t] : ckpt.tensors) {  // std::map: byte-wise name order
    hash_tensor_name(all, name);
    all.update(t.data.data(), t.data.size() * sizeof(float));
  }
  return hex64(all.digest());
}

}  // namespace mt
