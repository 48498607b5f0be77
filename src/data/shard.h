// shard.h — one split (train or eval) of one bucket on disk: a token file and
// a document index, each opening with a 64-byte header (magic, version, token
// dtype, tokenizer hash, counts, payload checksum, header checksum). Readers
// memory-map both files and accept them only if every check passes, so a file
// cut short or corrupted by a crash is refused. Format: docs/data.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"

namespace mt {

inline constexpr uint32_t kShardVersion = 1;
inline constexpr int64_t kShardHeaderBytes = 64;

// Writes `tokens` (documents back to back) and `offsets` (n_docs + 1 entries,
// offsets[0] = 0, offsets[n_docs] = tokens.size()). token_bytes is 2 (uint16)
// or 4 (uint32). Each file is written under a temporary name, its header last,
// fsync'ed (kSync) and renamed into place: a crash leaves no file a reader
// accepts. kDeferSync skips the fsyncs for a caller that syncs the whole
// directory before publishing it (data build: one syncfs instead of ~800).
enum class ShardSync { kSync, kDeferSync };
class HeaderLastFile;  // one shard file being written (shard.cpp)
Status write_shard(const std::string& tokens_path, const std::string& index_path,
                   const std::vector<int32_t>& tokens, const std::vector<int64_t>& offsets,
                   int token_bytes, uint64_t tokenizer_hash, ShardSync sync = ShardSync::kSync,
                   FileSystem& fs = default_file_system());

// The same two files written document by document, for builds that never
// hold a bucket in memory: payloads are appended to "<path>.tmp" files through
// a buffer, and finish() writes both headers last, syncs (kSync) and renames.
// The bytes are exactly those write_shard() writes for the same documents.
// Destroying an unfinished writer removes its temporary files.
class ShardWriter {
 public:
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  static Result<std::unique_ptr<ShardWriter>> open(const std::string& tokens_path, const std::string& index_path,
                                                   int token_bytes, uint64_t tokenizer_hash,
                                                   FileSystem& fs = default_file_system());
  Status add_document(const int32_t* ids, int64_t n);
  Status finish(ShardSync sync);
  int64_t n_tokens() const { return n_tokens_; }
  int64_t n_docs() const { return n_docs_; }

 private:
  ShardWriter() = default;
  std::unique_ptr<HeaderLastFile> tok_, idx_;
  FileSystem* fs_ = nullptr;
  int token_bytes_ = 2;
  uint64_t tokenizer_hash_ = 0;
  int64_t n_tokens_ = 0, n_docs_ = 0;
  std::vector<uint16_t> narrow_;
};

enum class ShardVerify { kFull, kHeadersOnly };  // kFull: checksums + token range + offsets

// A validated, read-only shard. Thread-safe for concurrent reads.
class ShardReader {
 public:
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  // Maps and validates both files. Every error names the file and the check
  // that failed (truncated, bad magic, checksum, tokenizer hash mismatch, ...).
  static Result<std::unique_ptr<ShardReader>> open(const std::string& tokens_path,
                                                   const std::string& index_path,
                                                   uint64_t tokenizer_hash, int64_t vocab_size,
                                                   ShardVerify verify = ShardVerify::kFull);
  // Same checks over bytes in memory (tests, the fuzz harness).
  static Result<std::unique_ptr<ShardReader>> from_bytes(std::string tokens_bytes,
                                                         std::string index_bytes,
                                                         const std::string& name,
                                                         uint64_t tokenizer_hash, int64_t vocab_size);

  int64_t n_tokens() const { return n_tokens_; }
  int64_t n_docs() const { return n_docs_; }
  int token_bytes() const { return token_bytes_; }
  uint64_t tokenizer_hash() const { return tokenizer_hash_; }
  int64_t doc_begin(int64_t d) const { return offsets_[d]; }
  int64_t doc_length(int64_t d) const { return offsets_[d + 1] - offsets_[d]; }
  int32_t token(int64_t i) const;
  // Copies tokens [begin, begin + n) into out.
  void copy(int64_t begin, int64_t n, int32_t* out) const;

 private:
  ShardReader() = default;
  Status validate(const std::string& tok_name, const std::string& idx_name, uint64_t tokenizer_hash,
                  int64_t vocab_size, ShardVerify verify);

  // Either mapped files or owned bytes back these pointers.
  void* tok_map_ = nullptr;
  size_t tok_map_len_ = 0;
  void* idx_map_ = nullptr;
  size_t idx_map_len_ = 0;
  std::string tok_owned_, idx_owned_;
  std::string_view tok_file_, idx_file_;
  const uint8_t* tokens_ = nullptr;  // payload of the token file
  const int64_t* offsets_ = nullptr;  // (n_docs + 1)
  int64_t n_tokens_ = 0, n_docs_ = 0;
  int token_bytes_ = 2;
  uint64_t tokenizer_hash_ = 0;
};

}  // namespace mt
