// checkpoint.cpp — writing checkpoints: shard files, manifest, atomic commit
// (staging dir -> fsync -> rename -> fsync root) and keep-last-N pruning.
// Reading and validation live in checkpoint_read.cpp.
#include "ckpt/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "ckpt/checkpoint_internal.h"
#include "ckpt/manifest.h"
#include "ckpt/safetensors.h"
#include "core/hash.h"

namespace mt {

void copy_view_as_f32(const TensorView& v, float* to) {
  ckpt_internal::for_each_f32_chunk(v, v.count, [&](const float* x, int64_t n) { to = std::copy(x, x + n, to); });
}

namespace ckpt_internal {

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool parse_step_dir_name(const std::string& name, int64_t* step) {
  constexpr size_t kPrefix = 5;  // "step_"
  if (name.size() < kPrefix + 8 || name.size() > kPrefix + 18 || name.compare(0, kPrefix, "step_") != 0) {
    return false;
  }
  int64_t v = 0;
  for (size_t i = kPrefix; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    v = v * 10 + (name[i] - '0');
  }
  *step = v;
  return true;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void hash_tensor_name(Hasher& all, const std::string& name) {
  const char zero = 0;
  all.update(name.data(), name.size());
  all.update(&zero, 1);
}

}  // namespace ckpt_internal

using namespace ckpt_internal;

namespace {

Status with_context(const Status& s, const std::string& context) {
  return Status::error(context + ": " + s.message());
}

void warn(const std::string& msg) { std::fprintf(stderr, "moetrain: warning: %s\n", msg.c_str()); }

// Deletes committed checkpoints beyond the keep_last newest, sparing `just_written`.
// Failures only warn: the new checkpoint is already durable.
void prune_checkpoints(const std::string& root, int64_t just_written, int64_t keep_last,
                       FileSystem& fs) {
  if (keep_last <= 0) return;
  auto names = fs.list_dir(root);
  if (!names) return warn("keep_last: " + names.status().message());
  std::vector<std::pair<int64_t, std::string>> steps;
  for (const std::string& n : *names) {
    int64_t s;
    if (parse_step_dir_name(n, &s)) steps.emplace_back(s, n);
  }
  std::sort(steps.rbegin(), steps.rend());
  bool removed = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (static_cast<int64_t>(i) < keep_last || steps[i].first == just_written) continue;
    // Rename first so a half-deleted directory never looks committed.
    const std::string doomed =
        join_path(root, fmt::format("{}delete-{}-{}", kStagingPrefix, steps[i].second, getpid()));
    Status s = fs.rename(join_path(root, steps[i].second), doomed);
    if (s) s = fs.remove_all(doomed);
    if (!s) warn("keep_last: " + s.message());
    removed = true;
  }
  if (removed) {
    if (Status s = fs.sync_dir(root); !s) warn("keep_last: " + s.message());
  }
}

Status write_whole_file(FileSystem& fs, const std::string& path, const std::string& bytes) {
  auto f = fs.new_writable_file(path);
  if (!f) return f.status();
  MT_RETURN_IF_ERROR((*f)->append(bytes.data(), static_cast<int64_t>(bytes.size())));
  MT_RETURN_IF_ERROR((*f)->sync());
  return (*f)->close();
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) { return fmt::format("step_{:08d}", step); }

Result<std::string> begin_checkpoint(const std::string& root, int64_t step, FileSystem& fs) {
  if (step < 0) return Status::errorf("{}: checkpoint step {} is negative", root, step);
  MT_RETURN_IF_ERROR(fs.create_dirs(root));
  auto names = fs.list_dir(root);
  if (!names) return names.status();
  for (const std::string& n : *names) {
    if (n.rfind(kStagingPrefix, 0) != 0) continue;
    if (Status s = fs.remove_all(join_path(root, n)); !s) warn("stale staging dir: " + s.message());
  }
  const std::string staging = join_path(
      root, fmt::format("{}{}-{}", kStagingPrefix, checkpoint_dir_name(step), getpid()));
  MT_RETURN_IF_ERROR(fs.create_dirs(staging));
  return staging;
}

Result<ShardFile> write_shard_file(const std::string& staging_dir, const ShardRank& who,
                                   const std::vector<TensorView>& pieces, FileSystem& fs) {
  if (who.world_size < 1 || who.rank < 0 || who.rank >= who.world_size) {
    return Status::errorf("{}: invalid rank {} of world size {}", staging_dir, who.rank,
                          who.world_size);
  }
  ShardFile out;
  out.file = fmt::format("rank_{:05d}.safetensors", who.rank);
  out.rank = who.rank;
  out.world_size = who.world_size;
  const std::string path = join_path(staging_dir, out.file);

  std::vector<const TensorView*> order;
  std::set<std::string> names;
  for (const TensorView& v : pieces) {
    if (v.name.empty() || v.name == "__metadata__" || !names.insert(v.name).second) {
      return Status::errorf("{}: tensor name '{}' is empty, reserved or given twice", path, v.name);
    }
    int64_t numel = 1;
    for (int64_t d : v.shape) {
      if (d < 0 || __builtin_mul_overflow(numel, d, &numel)) {
        return Status::errorf("{}: tensor '{}': invalid shape {}", path, v.name, shape_str(v.shape));
      }
    }
    const int64_t count = v.count < 0 ? numel - v.offset : v.count;
    if (v.offset < 0 || v.offset > numel || count < 0 || count > numel - v.offset ||
        (count > 0 && (v.data == nullptr) == (v.data_bf16 == nullptr))) {
      return Status::errorf("{}: tensor '{}': piece offset {} count {} does not fit shape {} "
                            "(or it has not exactly one of data, data_bf16)",
                            path, v.name, v.offset, v.count, shape_str(v.shape));
    }
    ShardFile::Piece p;
    p.name = v.name;
    p.shape = v.shape;
    p.offset = v.offset;
    p.count = count;
    out.pieces.push_back(std::move(p));
    order.push_back(&v);
  }
  // Sort pieces and their views together by name: the file's data is in name order.
  std::vector<size_t> idx(order.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(),
            [&](size_t a, size_t b) { return out.pieces[a].name < out.pieces[b].name; });
  std::vector<ShardFile::Piece> sorted;
  std::vector<const TensorView*> views;
  for (size_t i : idx) {
    sorted.push_back(out.pieces[i]);
    views.push_back(order[i]);
  }
  out.pieces = std::move(sorted);

  std::vector<SafetensorsEntry> entries;
  int64_t at = 0;
  for (const ShardFile::Piece& p : out.pieces) {
    SafetensorsEntry e;
    e.name = p.name;
    e.dtype = "F32";
    // A whole tensor keeps its shape, so the file alone is a usable safetensors file.
    int64_t numel = 1;
    for (int64_t d : p.shape) numel *= d;
    e.shape = (p.offset == 0 && p.count == numel) ? p.shape : std::vector<int64_t>{p.count};
    e.begin = at;
    e.end = at + p.count * 4;
    at = e.end;
    entries.push_back(std::move(e));
  }
  const std::string header = encode_safetensors_header(
      entries, {{"format", "moetrain"},
                {"rank", std::to_string(who.rank)},
                {"world_size", std::to_string(who.world_size)}});
  const int64_t data_start = static_cast<int64_t>(header.size());

  auto file = fs.new_writable_file(path);
  if (!file) return file.status();
  Hasher file_hash;
  MT_RETURN_IF_ERROR((*file)->append(header.data(), data_start));
  file_hash.update(header.data(), header.size());
  for (size_t i = 0; i < out.pieces.size(); ++i) {
    ShardFile::Piece& p = out.pieces[i];
    p.byte_begin = data_start + entries[i].begin;
    p.byte_end = data_start + entries[i].end;
    Hasher piece;
    Status wrote = Status::ok();
    for_each_f32_chunk(*views[i], p.count, [&](const float* x, int64_t n) {
      if (!wrote || n == 0) return;
      wrote = (*file)->append(x, n * 4);
      piece.update(x, size_t(n) * 4);
      file_hash.update(x, size_t(n) * 4);
    });
    MT_RETURN_IF_ERROR(wrote);
    p.xxh64 = piece.digest();
  }
  MT_RETURN_IF_ERROR((*file)->sync());
  MT_RETURN_IF_ERROR((*file)->close());
  out.bytes = data_start + at;
  out.xxh64 = file_hash.digest();
  return out;
}

Status commit_checkpoint(const std::string& root, int64_t step, const std::string& staging_dir,
                         const std::vector<ShardFile>& shards, const std::string& config_toml,
                         const nlohmann::json& state, int64_t keep_last, FileSystem& fs) {
  if (step < 0) return Status::errorf("{}: checkpoint step {} is negative", root, step);
  if (keep_last < 0) return Status::errorf("{}: keep_last {} is negative", root, keep_last);
  if (shards.empty()) return Status::errorf("{}: no shard files to commit", staging_dir);

  Manifest m;
  m.step = step;
  m.world_size = static_cast<int64_t>(shards.size());
  m.config_toml = config_toml;
  m.state = state;
  std::vector<const ShardFile*> by_rank(shards.size(), nullptr);
  for (const ShardFile& s : shards) {
    if (s.rank < 0 || s.rank >= m.world_size || s.world_size != m.world_size || by_rank[s.rank]) {
      return Status::errorf("{}: shard '{}' has rank {} of world size {}, but {} shards were given",
                            staging_dir, s.file, s.rank, s.world_size, shards.size());
    }
    by_rank[s.rank] = &s;
  }
  std::map<std::string, ManifestTensor> tensors;
  for (const ShardFile* s : by_rank) {
    m.files.push_back({s->file, s->rank, s->bytes, s->xxh64});
    for (const ShardFile::Piece& p : s->pieces) {
      auto [it, fresh] = tensors.try_emplace(p.name);
      ManifestTensor& t = it->second;
      if (fresh) {
        t.name = p.name;
        t.shape = p.shape;
        t.numel = 1;
        for (int64_t d : p.shape) t.numel *= d;
      } else if (t.shape != p.shape) {
        return Status::errorf("{}: tensor '{}' has shape {} in {} but {} in an earlier shard",
                              staging_dir, p.name, shape_str(p.shape), s->file, shape_str(t.shape));
      }
      t.pieces.push_back({s->file, p.offset, p.count, p.byte_begin, p.byte_end, p.xxh64});
    }
  }
  for (auto& [name, t] : tensors) {
    std::sort(t.pieces.begin(), t.pieces.end(),
              [](const ManifestPiece& a, const ManifestPiece& b) { return a.offset < b.offset; });
    m.tensors.push_back(std::move(t));
  }
  MT_RETURN_IF_ERROR(validate_manifest(m, staging_dir));

  // Read the data back: the hashes then describe what is on disk, and are
  // independent of how the tensors were split across ranks.
  auto hashes = hash_stored_tensors(fs, staging_dir, m);
  if (!hashes) return hashes.status();
  m.tensor_hash = hashes->tensor_hash;
  for (size_t i = 0; i < m.tensors.size(); ++i) m.tensors[i].xxh64 = hashes->per_tensor[i];

  auto text = encode_manifest(m);
  if (!text) return text.status();
  MT_RETURN_IF_ERROR(write_whole_file(fs, join_path(staging_dir, kManifestFileName), *text));
  MT_RETURN_IF_ERROR(fs.sync_dir(staging_dir));

  const std::string name = checkpoint_dir_name(step);
  const std::string final_dir = join_path(root, name);
  std::string replaced;
  if (fs.exists(final_dir)) {
    // rename(2) cannot replace a non-empty directory: move the old one aside
    // (a .tmp- name, so a crash here leaves it for the next writer to clean).
    replaced = join_path(root, fmt::format("{}replaced-{}-{}", kStagingPrefix, name, getpid()));
    MT_RETURN_IF_ERROR(fs.remove_all(replaced));
    MT_RETURN_IF_ERROR(fs.rename(final_dir, replaced));
  }
  if (Status s = fs.rename(staging_dir, final_dir); !s) {
    if (!replaced.empty()) (void)fs.rename(replaced, final_dir);
    return s;
  }
  if (Status s = fs.sync_dir(root); !s) {
    // The rename may not be durable. Undo it, so that an error always means
    // "not committed" and the previous state is what readers see.
    if (fs.rename(final_dir, staging_dir) && (replaced.empty() || fs.rename(replaced, final_dir))) {
      return s;
    }
    return Status::errorf("{} (and undoing the commit of {} failed: it is visible but may not "
                          "survive a crash)",
                          s.message(), final_dir);
  }
  if (!replaced.empty()) {
    if (Status s = fs.remove_all(replaced); !s) warn(s.message());
  }
  prune_checkpoints(root, step, keep_last, fs);
  return Status::ok();
}

void abort_checkpoint(const std::string& staging_dir, FileSystem& fs) {
  (void)fs.remove_all(staging_dir);
}

Status write_checkpoint(const std::string& root, int64_t step,
                        const std::vector<TensorView>& tensors, const std::string& config_toml,
                        const nlohmann::json& state, int64_t keep_last, FileSystem& fs) {
  const std::string context = fmt::format("writing checkpoint step {} under {}", step, root);
  if (keep_last < 0) return Status::errorf("{}: keep_last {} is negative", context, keep_last);
  auto staging = begin_checkpoint(root, step, fs);
  if (!staging) return with_context(staging.status(), context);
  auto shard = write_shard_file(*staging, ShardRank{0, 1}, tensors, fs);
  Status s = shard ? commit_checkpoint(root, step, *staging, {*shard}, config_toml, state,
                                       keep_last, fs)
                   : shard.status();
  if (!s) {
    abort_checkpoint(*staging, fs);
    return with_context(s, context);
  }
  return Status::ok();
}

nlohmann::json shard_to_json(const ShardFile& shard) {
  nlohmann::json pieces = nlohmann::json::array();
  for (const ShardFile::Piece& p : shard.pieces) {
    pieces.push_back({{"name", p.name},
                      {"shape", p.shape},
                      {"offset", p.offset},
                      {"count", p.count},
                      {"byte_range", {p.byte_begin, p.byte_end}},
                      {"xxh64", hex64(p.xxh64)}});
  }
  return {{"file", shard.file},   {"rank", shard.rank},          {"world_size", shard.world_size},
          {"bytes", shard.bytes}, {"xxh64", hex64(shard.xxh64)}, {"pieces", std::move(pieces)}};
}

Result<ShardFile> shard_from_json(const nlohmann::json& j) {
  try {
    ShardFile s;
    s.file = j.at("file").get<std::string>();
    s.rank = j.at("rank").get<int64_t>();
    s.world_size = j.at("world_size").get<int64_t>();
    s.bytes = j.at("bytes").get<int64_t>();
    if (!parse_hex64(j.at("xxh64").get<std::string>(), &s.xxh64)) {
      return Status::error("shard record: xxh64 is not 16 hex digits");
    }
    for (const nlohmann::json& pj : j.at("pieces")) {
      ShardFile::Piece p;
      p.name = pj.at("name").get<std::string>();
      p.shape = pj.at("shape").get<std::vector<int64_t>>();
      p.offset = pj.at("offset").get<int64_t>();
      p.count = pj.at("count").get<int64_t>();
      p.byte_begin = pj.at("byte_range").at(0).get<int64_t>();
      p.byte_end = pj.at("byte_range").at(1).get<int64_t>();
      if (!parse_hex64(pj.at("xxh64").get<std::string>(), &p.xxh64)) {
        return Status::errorf("shard record: tensor '{}': xxh64 is not 16 hex digits", p.name);
      }
      s.pieces.push_back(std::move(p));
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    // Produced by our own shard_to_json on another rank, so a failure here is
    // a transport bug; still reported, not aborted.
    return Status::errorf("shard record: {}", e.what());
  }
}

}  // namespace mt
