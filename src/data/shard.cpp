// shard.cpp — writing (temporary name, header last, fsync, rename) and
// validating (sizes, magic, checksums, tokenizer hash, token range, offsets)
// shard files; see shard.h and docs/data.md.
#include "data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/hash.h"

namespace mt {
namespace {

constexpr char kTokMagic[8] = {'M', 'T', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr char kIdxMagic[8] = {'M', 'T', 'D', 'O', 'C', 'I', 'D', 'X'};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t elem_bytes;      // token file: 2 or 4; index: 8
  uint64_t tokenizer_hash;
  uint64_t n_tokens;
  uint64_t n_docs;
  uint64_t payload_hash;    // xxh64 of everything after the header
  uint64_t reserved;
  uint64_t header_hash;     // xxh64 of bytes [0, 56)
};
static_assert(sizeof(Header) == kShardHeaderBytes);

Status errno_status(const std::string& what, const std::string& path) {
  return Status::errorf("{}: {}: {}", path, what, std::strerror(errno));
}

// After both files are renamed into place: their directory entries persist.
Status sync_parent(const std::string& path, FileSystem& fs) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  Status s = fs.sync_dir(parent.empty() ? std::string(".") : parent);
  return s ? s : Status::errorf("{}: written but not synced: {}", path, s.message());
}

Header shard_header(const char (&magic)[8], uint32_t elem_bytes, uint64_t tokenizer_hash, uint64_t n_tokens,
                    uint64_t n_docs) {
  Header h{};
  std::memcpy(h.magic, magic, 8);
  h.version = kShardVersion;
  h.elem_bytes = elem_bytes;
  h.tokenizer_hash = tokenizer_hash;
  h.n_tokens = n_tokens;
  h.n_docs = n_docs;
  return h;
}

Status check_header(const Header& h, const char (&magic)[8], const std::string& name, size_t file_len,
                    const char* what) {
  if (file_len < sizeof(Header))
    return Status::errorf("{}: truncated {} ({} bytes, the header alone is {})", name, what, file_len,
                          sizeof(Header));
  if (std::memcmp(h.magic, magic, 8) != 0)
    return Status::errorf("{}: not a moetrain {} (bad magic; an interrupted write leaves a zero header)", name,
                          what);
  if (h.header_hash != xxh64(&h, offsetof(Header, header_hash)))
    return Status::errorf("{}: {} header checksum mismatch (corrupted)", name, what);
  if (h.version != kShardVersion)
    return Status::errorf("{}: {} version {} (this build reads version {})", name, what, h.version,
                          kShardVersion);
  return Status::ok();
}

}  // namespace

// A shard file written under "<path>.tmp" through a FileSystem: a zero
// header, the payload (hashed as it goes, through a 1 MiB buffer), then the
// real header over the zeros, an fsync (kSync) and the rename that
// publishes it. A reader never accepts the file before that: an interrupted
// write leaves a zero header. Removed unless published.
class HeaderLastFile {
 public:
  static Result<std::unique_ptr<HeaderLastFile>> create(const std::string& path, FileSystem& fs) {
    std::unique_ptr<HeaderLastFile> f(new HeaderLastFile(path, fs));
    auto w = fs.new_writable_file(f->tmp_);
    if (!w) return f->named(w.status());
    f->file_ = std::move(w.value());
    const Header zero{};
    if (Status s = f->file_->append(&zero, sizeof(zero)); !s) return f->named(s);
    return f;
  }
  ~HeaderLastFile() {
    file_.reset();
    if (!tmp_.empty() && fs_.exists(tmp_)) (void)fs_.remove_all(tmp_);
  }
  const std::string& path() const { return path_; }
  Status put(const void* p, size_t n) {
    hasher_.update(p, n);
    buf_.append(static_cast<const char*>(p), n);
    return buf_.size() >= (1 << 20) ? flush() : Status::ok();
  }
  Status finish(Header h, ShardSync sync) {
    MT_RETURN_IF_ERROR(flush());
    h.payload_hash = hasher_.digest();
    h.header_hash = xxh64(&h, offsetof(Header, header_hash));
    Status s = file_->write_at(0, &h, sizeof(h));
    if (s && sync == ShardSync::kSync) s = file_->sync();
    if (s) s = file_->close();
    if (s) s = fs_.rename(tmp_, path_);
    if (!s) return named(s);
    tmp_.clear();  // published: nothing left to remove
    return Status::ok();
  }

 private:
  HeaderLastFile(const std::string& path, FileSystem& fs) : path_(path), tmp_(path + ".tmp"), fs_(fs) {}
  Status flush() {
    Status s = file_->append(buf_.data(), int64_t(buf_.size()));
    buf_.clear();
    return s ? s : named(s);
  }
  Status named(const Status& s) const { return Status::errorf("{}: not written: {}", path_, s.message()); }
  std::string path_, tmp_;
  FileSystem& fs_;
  std::unique_ptr<WritableFile> file_;
  Hasher hasher_;
  std::string buf_;
};

Status write_shard(const std::string& tokens_path, const std::string& index_path,
                   const std::vector<int32_t>& tokens, const std::vector<int64_t>& offsets, int token_bytes,
                   uint64_t tokenizer_hash, ShardSync sync, FileSystem& fs) {
  if (token_bytes != 2 && token_bytes != 4)
    return Status::errorf("{}: token width {} bytes is not 2 or 4", tokens_path, token_bytes);
  if (offsets.empty() || offsets.front() != 0 || offsets.back() != int64_t(tokens.size()))
    return Status::errorf("{}: document offsets do not cover the tokens", index_path);
  auto tok = HeaderLastFile::create(tokens_path, fs);
  if (!tok) return tok.status();
  if (token_bytes == 4) {
    MT_RETURN_IF_ERROR(tok.value()->put(tokens.data(), tokens.size() * 4));
  } else {
    std::vector<uint16_t> buf;
    for (size_t i = 0; i < tokens.size(); i += 1 << 16) {
      const size_t n = std::min<size_t>(1 << 16, tokens.size() - i);
      buf.resize(n);
      for (size_t j = 0; j < n; ++j) {
        if (tokens[i + j] < 0 || tokens[i + j] > 0xffff)
          return Status::errorf("{}: token {} does not fit in uint16", tokens_path, tokens[i + j]);
        buf[j] = uint16_t(tokens[i + j]);
      }
      MT_RETURN_IF_ERROR(tok.value()->put(buf.data(), n * 2));
    }
  }
  const uint64_t n_docs = offsets.size() - 1;
  MT_RETURN_IF_ERROR(tok.value()->finish(
      shard_header(kTokMagic, uint32_t(token_bytes), tokenizer_hash, tokens.size(), n_docs), sync));
  auto idx = HeaderLastFile::create(index_path, fs);
  if (!idx) return idx.status();
  MT_RETURN_IF_ERROR(idx.value()->put(offsets.data(), offsets.size() * sizeof(int64_t)));
  MT_RETURN_IF_ERROR(idx.value()->finish(shard_header(kIdxMagic, 8, tokenizer_hash, tokens.size(), n_docs), sync));
  return sync == ShardSync::kSync ? sync_parent(tokens_path, fs) : Status::ok();
}

Result<std::unique_ptr<ShardWriter>> ShardWriter::open(const std::string& tokens_path, const std::string& index_path,
                                                       int token_bytes, uint64_t tokenizer_hash, FileSystem& fs) {
  if (token_bytes != 2 && token_bytes != 4)
    return Status::errorf("{}: token width {} bytes is not 2 or 4", tokens_path, token_bytes);
  std::unique_ptr<ShardWriter> w(new ShardWriter());
  w->token_bytes_ = token_bytes;
  w->tokenizer_hash_ = tokenizer_hash;
  w->fs_ = &fs;
  auto tok = HeaderLastFile::create(tokens_path, fs);
  if (!tok) return tok.status();
  w->tok_ = std::move(tok.value());
  auto idx = HeaderLastFile::create(index_path, fs);
  if (!idx) return idx.status();
  w->idx_ = std::move(idx.value());
  const int64_t first = 0;
  MT_RETURN_IF_ERROR(w->idx_->put(&first, sizeof(first)));
  return w;
}

Status ShardWriter::add_document(const int32_t* ids, int64_t n) {
  if (token_bytes_ == 4) {
    MT_RETURN_IF_ERROR(tok_->put(ids, size_t(n) * 4));
  } else {
    narrow_.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] > 0xffff)
        return Status::errorf("{}: token {} does not fit in uint16", tok_->path(), ids[i]);
      narrow_[size_t(i)] = uint16_t(ids[i]);
    }
    MT_RETURN_IF_ERROR(tok_->put(narrow_.data(), size_t(n) * 2));
  }
  n_tokens_ += n;
  ++n_docs_;
  return idx_->put(&n_tokens_, sizeof(n_tokens_));
}

Status ShardWriter::finish(ShardSync sync) {
  const uint64_t n_tokens = uint64_t(n_tokens_), n_docs = uint64_t(n_docs_);
  MT_RETURN_IF_ERROR(
      tok_->finish(shard_header(kTokMagic, uint32_t(token_bytes_), tokenizer_hash_, n_tokens, n_docs), sync));
  MT_RETURN_IF_ERROR(idx_->finish(shard_header(kIdxMagic, 8, tokenizer_hash_, n_tokens, n_docs), sync));
  return sync == ShardSync::kSync ? sync_parent(tok_->path(), *fs_) : Status::ok();
}

ShardWriter::~ShardWriter() = default;

ShardReader::~ShardReader() {
  if (tok_map_) ::munmap(tok_map_, tok_map_len_);
  if (idx_map_) ::munmap(idx_map_, idx_map_len_);
}

namespace {
// Maps a whole file read-only; a zero-length file maps to nothing.
Status map_file(const std::string& path, void*& addr, size_t& len) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("cannot open shard file", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return errno_status("cannot stat", path);
  }
  len = size_t(st.st_size);
  addr = nullptr;
  if (len > 0) {
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return errno_status("mmap failed", path);
    }
    addr = p;
  }
  ::close(fd);
  return Status::ok();
}
}  // namespace

Result<std::unique_ptr<ShardReader>> ShardReader::open(const std::string& tokens_path,
                                                       const std::string& index_path, uint64_t tokenizer_hash,
                                                       int64_t vocab_size, ShardVerify verify) {
  std::unique_ptr<ShardReader> r(new ShardReader());
  MT_RETURN_IF_ERROR(map_file(tokens_path, r->tok_map_, r->tok_map_len_));
  MT_RETURN_IF_ERROR(map_file(index_path, r->idx_map_, r->idx_map_len_));
  r->tok_file_ = std::string_view(static_cast<const char*>(r->tok_map_), r->tok_map_len_);
  r->idx_file_ = std::string_view(static_cast<const char*>(r->idx_map_), r->idx_map_len_);
  MT_RETURN_IF_ERROR(r->validate(tokens_path, index_path, tokenizer_hash, vocab_size, verify));
  return r;
}

Result<std::unique_ptr<ShardReader>> ShardReader::from_bytes(std::string tokens_bytes, std::string index_bytes,
                                                             const std::string& name, uint64_t tokenizer_hash,
                                                             int64_t vocab_size) {
  std::unique_ptr<ShardReader> r(new ShardReader());
  r->tok_owned_ = std::move(tokens_bytes);
  r->idx_owned_ = std::move(index_bytes);
  r->tok_file_ = r->tok_owned_;
  r->idx_file_ = r->idx_owned_;
  MT_RETURN_IF_ERROR(r->validate(name + ".tokens", name + ".index", tokenizer_hash, vocab_size, ShardVerify::kFull));
  return r;
}

Status ShardReader::validate(const std::string& tok_name, const std::string& idx_name, uint64_t tokenizer_hash,
                             int64_t vocab_size, ShardVerify verify) {
  Header th{}, ih{};
  std::memcpy(&th, tok_file_.data(), std::min(tok_file_.size(), sizeof(th)));
  std::memcpy(&ih, idx_file_.data(), std::min(idx_file_.size(), sizeof(ih)));
  MT_RETURN_IF_ERROR(check_header(th, kTokMagic, tok_name, tok_file_.size(), "token file"));
  MT_RETURN_IF_ERROR(check_header(ih, kIdxMagic, idx_name, idx_file_.size(), "document index"));
  if (th.elem_bytes != 2 && th.elem_bytes != 4)
    return Status::errorf("{}: token width {} bytes (expected 2 or 4)", tok_name, th.elem_bytes);
  if (ih.elem_bytes != 8) return Status::errorf("{}: offset width {} bytes (expected 8)", idx_name, ih.elem_bytes);
  if (th.tokenizer_hash != tokenizer_hash)
    return Status::errorf("{}: tokenizer mismatch: shard was written with tokenizer {}, the dataset's is {}", tok_name,
                          hex64(th.tokenizer_hash), hex64(tokenizer_hash));
  if (ih.tokenizer_hash != tokenizer_hash)
    return Status::errorf("{}: tokenizer mismatch: index was written with tokenizer {}, the dataset's is {}", idx_name,
                          hex64(ih.tokenizer_hash), hex64(tokenizer_hash));
  if (th.n_tokens != ih.n_tokens || th.n_docs != ih.n_docs)
    return Status::errorf("{}: counts ({} tokens, {} docs) disagree with {} ({} tokens, {} docs)", idx_name,
                          ih.n_tokens, ih.n_docs, tok_name, th.n_tokens, th.n_docs);
  const uint64_t max_count = uint64_t(1) << 60;
  if (th.n_tokens > max_count || th.n_docs > max_count)
    return Status::errorf("{}: implausible counts ({} tokens, {} docs)", tok_name, th.n_tokens, th.n_docs);
  const uint64_t want_tok = sizeof(Header) + th.n_tokens * th.elem_bytes;
  const uint64_t want_idx = sizeof(Header) + (th.n_docs + 1) * 8;
  if (tok_file_.size() != want_tok)
    return Status::errorf("{}: {} bytes, header promises {} ({} tokens): truncated or padded", tok_name,
                          tok_file_.size(), want_tok, th.n_tokens);
  if (idx_file_.size() != want_idx)
    return Status::errorf("{}: {} bytes, header promises {} ({} documents): truncated or padded", idx_name,
                          idx_file_.size(), want_idx, th.n_docs);
  tokens_ = reinterpret_cast<const uint8_t*>(tok_file_.data()) + sizeof(Header);
  offsets_ = reinterpret_cast<const int64_t*>(idx_file_.data() + sizeof(Header));
  n_tokens_ = int64_t(th.n_tokens);
  n_docs_ = int64_t(th.n_docs);
  token_bytes_ = int(th.elem_bytes);
  tokenizer_hash_ = th.tokenizer_hash;
  if (offsets_[0] != 0 || offsets_[n_docs_] != n_tokens_)
    return Status::errorf("{}: offsets must start at 0 and end at {} tokens", idx_name, n_tokens_);
  if (verify == ShardVerify::kHeadersOnly) return Status::ok();
  if (xxh64(tokens_, size_t(n_tokens_) * size_t(token_bytes_)) != th.payload_hash)
    return Status::errorf("{}: token checksum mismatch (corrupted)", tok_name);
  if (xxh64(offsets_, size_t(n_docs_ + 1) * 8) != ih.payload_hash)
    return Status::errorf("{}: offset checksum mismatch (corrupted)", idx_name);
  for (int64_t d = 0; d < n_docs_; ++d)
    if (offsets_[d + 1] < offsets_[d])
      return Status::errorf("{}: offsets decrease at document {}", idx_name, d);
  for (int64_t i = 0; i < n_tokens_; ++i) {
    const int64_t t = int64_t(uint32_t(token(i)));  // a uint32 id past 2^31 must not pass as negative
    if (t >= vocab_size)
      return Status::errorf("{}: token {} at position {} is outside the tokenizer's vocabulary [0, {})", tok_name,
                            t, i, vocab_size);
  }
  return Status::ok();
}

int32_t ShardReader::token(int64_t i) const {
  if (token_bytes_ == 2) {
    uint16_t v;
    std::memcpy(&v, tokens_ + i * 2, 2);
    return int32_t(v);
  }
  uint32_t v;
  std::memcpy(&v, tokens_ + i * 4, 4);
  return int32_t(v);
}

void ShardReader::copy(int64_t begin, int64_t n, int32_t* out) const {
  if (token_bytes_ == 2) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(tokens_) + begin;
    for (int64_t i = 0; i < n; ++i) out[i] = int32_t(p[i]);
  } else {
    std::memcpy(out, tokens_ + begin * 4, size_t(n) * 4);
  }
}

}  // namespace mt
