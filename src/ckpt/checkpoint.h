// checkpoint.h — save and restore training state as committed checkpoint
// directories <root>/step_<8 digits>/ (manifest.json + safetensors shard files,
// format in docs/checkpoint-format.md). Writes are atomic: a reader sees a
// whole checkpoint or none. Readers verify every checksum and never abort on
// bad files; errors name the path and what was wrong.
//
// One process:   write_checkpoint(...)            ... find_latest_checkpoint + read_checkpoint.
// Several ranks: rank 0 begin_checkpoint -> every rank write_shard_file (its
//                FSDP pieces) -> gather ShardFile (as JSON) -> rank 0 commit_checkpoint.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file_system.h"
#include "core/bf16.h"
#include "core/status.h"

namespace mt {

// A tensor to save, or one contiguous piece of it (an FSDP shard: a range of
// the row-major flattened tensor). `data` points at `count` floats, or
// `data_bf16` at `count` bf16 values (optimizer moments held in bf16), which
// are saved widened to F32: exactly, so the file format has one dtype and a
// checkpoint restores into either form.
struct TensorView {
  std::string name;             // global name, e.g. "layers.3.attn.wq"
  std::vector<int64_t> shape;   // global shape of the whole tensor
  const float* data = nullptr;
  int64_t offset = 0;           // first element of this piece in the flattened tensor
  int64_t count = -1;           // elements in this piece; -1 = up to the end of the tensor
  const bf16* data_bf16 = nullptr;  // instead of data
};

// The view's `count` values as saved (bf16 widened) into `to`: what an
// asynchronous save snapshots before the step goes on.
void copy_view_as_f32(const TensorView& v, float* to);

// Which shard file a process writes: rank_<5-digit rank>.safetensors.
struct ShardRank {
  int64_t rank = 0;
  int64_t world_size = 1;
};

// What one rank wrote; rank 0 needs every rank's to commit. shard_to_json /
// shard_from_json carry it across processes.
struct ShardFile {
  struct Piece {
    std::string name;
    std::vector<int64_t> shape;  // global shape
    int64_t offset = 0, count = 0;
    int64_t byte_begin = 0, byte_end = 0;  // inside the file
    uint64_t xxh64 = 0;
  };
  std::string file;              // name inside the checkpoint directory
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t bytes = 0;
  uint64_t xxh64 = 0;
  std::vector<Piece> pieces;     // sorted by name
};
nlohmann::json shard_to_json(const ShardFile& shard);
Result<ShardFile> shard_from_json(const nlohmann::json& j);

struct LoadedTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;       // numel(shape) floats, row-major
};

struct LoadedCheckpoint {
  std::string dir;
  int64_t step = 0;
  std::string config_toml;       // the run's resolved config, as saved
  nlohmann::json state;          // caller-defined (RNG, data position, ...)
  std::string tensor_hash;       // 16 hex digits, verified against the data
  std::map<std::string, LoadedTensor> tensors;
};

// "step_00000042".
std::string checkpoint_dir_name(int64_t step);

// Writes `tensors` (whole tensors or pieces that together cover each tensor
// exactly) as checkpoint `step` under `root`, creating `root` if needed, and
// commits it atomically. An existing checkpoint with the same step is
// replaced. Afterwards keeps the `keep_last` newest committed checkpoints
// (0 = keep all), never deleting the one just written. On error nothing new
// is visible under `root` and older checkpoints are untouched.
Status write_checkpoint(const std::string& root, int64_t step,
                        const std::vector<TensorView>& tensors, const std::string& config_toml,
                        const nlohmann::json& state, int64_t keep_last,
                        FileSystem& fs = default_file_system());

// The newest committed checkpoint under `root` that passes verify_checkpoint.
// Invalid ones are skipped with a warning on stderr naming the directory and
// the reason. Uncommitted (.tmp-*) directories are never considered. Errors
// when `root` cannot be listed or holds no valid checkpoint.
Result<std::string> find_latest_checkpoint(const std::string& root,
                                           FileSystem& fs = default_file_system());

// A run directory's checkpoints live in RUN_DIR/checkpoints: its newest valid
// one (an error if none), and whether it holds any committed one at all,
// valid or not (--resume refuses to start over on those).
std::string run_checkpoints_dir(const std::string& run_dir);
Result<std::string> find_latest_checkpoint_dir(const std::string& run_dir);
bool has_committed_checkpoints(const std::string& run_dir);

// What every command that reads one checkpoint takes as DIR: a checkpoint
// (step_XXXXXXXX), a run directory (its newest valid checkpoint) or a run's
// checkpoints/ directory. Errors say whether DIR is missing, not a
// directory, or neither kind.
Result<std::string> resolve_checkpoint_dir(const std::string& dir);

// Full validation without keeping the data: manifest (parse, checksum,
// schema), each file's size, header and xxh64, each piece's and tensor's
// xxh64, and tensor_hash. Reads every byte of the checkpoint twice.
Status verify_checkpoint(const std::string& dir, FileSystem& fs = default_file_system());

// Reads and validates as verify_checkpoint does, keeping whole tensors.
Result<LoadedCheckpoint> read_checkpoint(const std::string& dir,
                                         FileSystem& fs = default_file_system());

// Validates and summarizes: {"dir", "step", "format_version", "world_size",
// "tensor_hash", "state", "files": [{name, rank, bytes, xxh64}],
// "tensors": [{name, dtype, shape, numel, xxh64, pieces}]}.
Result<nlohmann::json> inspect_checkpoint(const std::string& dir,
                                          FileSystem& fs = default_file_system());

// Copies tensor `name` into dst (numel(shape) floats). Errors name the
// tensor when it is missing or its saved shape differs from `shape`.
Status load_into(const LoadedCheckpoint& ckpt, const std::string& name,
                 const std::vector<int64_t>& shape, float* dst);

// Copies elements [offset, offset + count) of the flattened tensor `name`
// into dst: how a rank restores its FSDP shard under any world size.
Status load_range_into(const LoadedCheckpoint& ckpt, const std::string& name, int64_t offset,
                       int64_t count, float* dst);

// The manifest's tensor_hash of whole tensors: xxh64 streamed over, for each
// tensor in byte-wise name order, its name, one 0 byte, and its float32 data
// (little-endian). Every view must be a whole tensor (offset 0, all elements).
std::string compute_tensor_hash(const std::vector<TensorView>& tensors);
std::string compute_tensor_hash(const LoadedCheckpoint& ckpt);

// ---- Multi-rank protocol (write_checkpoint runs it with one rank) ----

// Rank 0: creates `root` and the staging directory <root>/.tmp-step_XXXXXXXX-<pid>
// (returned; broadcast it), removing stale .tmp-* directories first.
Result<std::string> begin_checkpoint(const std::string& root, int64_t step,
                                     FileSystem& fs = default_file_system());

// Every rank: writes its pieces into staging_dir/rank_<rank>.safetensors and fsyncs it.
Result<ShardFile> write_shard_file(const std::string& staging_dir, const ShardRank& who,
                                   const std::vector<TensorView>& pieces,
                                   FileSystem& fs = default_file_system());

// Rank 0, after every rank's write_shard_file succeeded: checks the shards
// cover every tensor exactly, reads the data back to compute tensor hashes,
// writes manifest.json, fsyncs, renames staging_dir to <root>/step_XXXXXXXX,
// fsyncs root, then prunes to keep_last. Does not remove staging_dir on error.
Status commit_checkpoint(const std::string& root, int64_t step, const std::string& staging_dir,
                         const std::vector<ShardFile>& shards, const std::string& config_toml,
                         const nlohmann::json& state, int64_t keep_last,
                         FileSystem& fs = default_file_system());

// Best effort removal of a staging directory after a failed write.
void abort_checkpoint(const std::string& staging_dir, FileSystem& fs = default_file_system());

}  // namespace mt
