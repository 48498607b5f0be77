// plain_source.cpp — loading (with errors naming the file) and the
// windowed, permuted sequence read.
#include "data/plain_source.h"
#include "core/config_schema.h"
#include "core/file_io.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <cstring>

#include "core/rng.h"
#include "data/byte_tokenizer.h"

namespace mt {
namespace fs = std::filesystem;
namespace {

Status read_into(const fs::path& p, std::string& out) {
  auto text = read_file(p.string(), "for reading");
  if (!text) return text.status();
  out = std::move(text.value());
  return Status::ok();
}

bool wanted(const fs::path& p, const std::vector<std::string>& exts) {
  if (exts.empty()) return true;
  const std::string name = p.filename().string();
  for (const auto& e : exts)
    if (name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) return true;
  return false;
}

// Deterministic synthetic language: repeated noisy arithmetic progressions, so
// a model can learn something in a few steps without any files.
void synthetic(std::vector<int32_t>& out, int64_t vocab, uint64_t seed) {
  const int64_t n = 1 << 20;
  out.resize(n);
  uint32_t w[4];
  int64_t cur = 0, stride = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (i % 4 == 0) philox_block(seed, 0x5e9, uint64_t(i / 4), w);
    if (w[i % 4] % 64 == 0) stride = 1 + w[i % 4] % 7;
    cur = (cur + stride) % std::min<int64_t>(vocab, 256);
    out[i] = int32_t(cur);
  }
}

// Bijection on [0, n) from a seeded affine map with a multiplier coprime to n.
int64_t permute(int64_t i, int64_t n, uint64_t seed, int64_t pass) {
  uint32_t w[4];
  philox_block(seed, 0x9e3, uint64_t(pass), w);
  uint64_t a = (uint64_t(w[0]) << 32 | w[1]) % uint64_t(n);
  uint64_t b = (uint64_t(w[2]) << 32 | w[3]) % uint64_t(n);
  auto gcd = [](uint64_t x, uint64_t y) { while (y) { uint64_t t = x % y; x = y; y = t; } return x; };
  if (a == 0) a = 1;
  while (gcd(a, uint64_t(n)) != 1) a = (a + 1) % uint64_t(n) == 0 ? 1 : a + 1;
  return int64_t((unsigned __int128)a * uint64_t(i) % uint64_t(n) + b) % n;
}

}  // namespace

Result<std::unique_ptr<PlainSource>> PlainSource::open(const PlainSourceOptions& opt) {
  auto src = std::make_unique<PlainSource>();
  src->vocab_ = opt.vocab_size;
  src->seed_ = opt.seed;
  if (opt.path.empty()) {
    synthetic(src->tokens_, opt.vocab_size, opt.seed);
    src->desc_ = "synthetic stream";
  } else if (opt.format == "tokens") {
    std::string bytes;
    MT_RETURN_IF_ERROR(read_into(opt.path, bytes));
    if (bytes.size() % 4 != 0)
      return Status::errorf("{}: token file size {} is not a multiple of 4 (uint32 ids)", opt.path, bytes.size());
    src->tokens_.resize(bytes.size() / 4);
    std::memcpy(src->tokens_.data(), bytes.data(), bytes.size());
    for (size_t i = 0; i < src->tokens_.size(); ++i)
      if (src->tokens_[i] < 0 || src->tokens_[i] >= opt.vocab_size)
        return Status::errorf("{}: token {} at index {} is outside the vocabulary [0, {})", opt.path,
                              uint32_t(src->tokens_[i]), i, opt.vocab_size);
    src->desc_ = opt.path + " (tokens)";
  } else {
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(opt.path, ec)) {
      for (auto it = fs::recursive_directory_iterator(opt.path, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec))
        if (it->is_regular_file() && wanted(it->path(), opt.extensions)) files.push_back(it->path());
      std::sort(files.begin(), files.end());  // stable, documented order
    } else if (fs::exists(opt.path, ec)) {
      files.push_back(opt.path);
    } else {
      return Status::errorf("{}: data.path does not exist", opt.path);
    }
    if (files.empty()) return Status::errorf("{}: no files match data.extensions", opt.path);
    int64_t total = 0;
    for (const auto& f : files) {
      std::string text;
      MT_RETURN_IF_ERROR(read_into(f, text));
      ByteTokenizer::append_document(src->tokens_, text);
      total += int64_t(text.size());
      if (opt.max_bytes > 0 && total >= opt.max_bytes) break;
    }
    src->desc_ = opt.path + " (" + std::to_string(files.size()) + " files, byte tokenizer)";
  }
  const int64_t n = int64_t(src->tokens_.size());
  src->train_end_ = n - int64_t(double(n) * opt.eval_frac);
  if (src->train_end_ < opt.seq_len + 1)
    return Status::errorf("{}: only {} training tokens, fewer than seq_len + 1 = {}",
                          opt.path.empty() ? "<synthetic>" : opt.path, src->train_end_, opt.seq_len + 1);
  return src;
}

void PlainSource::sequence(int64_t index, int64_t seq_len, int64_t ahead, int32_t* out) const {
  const int64_t windows = (train_end_ - 1) / seq_len;
  const int64_t pass = index / windows;
  const int64_t w = permute(index % windows, windows, seed_, pass);
  std::copy(tokens_.begin() + w * seq_len, tokens_.begin() + w * seq_len + seq_len + 1, out);
  // Never into the held-out tail: the few targets past the end come from the front.
  for (int64_t j = 1; j <= ahead; ++j) out[seq_len + j] = tokens_[size_t((w * seq_len + seq_len + j) % train_end_)];
}

bool PlainSource::eval_sequence(int64_t index, int64_t seq_len, int32_t* out) const {
  const int64_t n = int64_t(tokens_.size()) - train_end_;
  const int64_t windows = (n - 1) / seq_len;
  if (windows <= 0) return false;
  const int64_t w = index % windows;
  std::copy(tokens_.begin() + train_end_ + w * seq_len, tokens_.begin() + train_end_ + w * seq_len + seq_len + 1,
            out);
  return true;
}

void declare_keys(ConfigSchema& s, PlainSourceOptions& o, const std::string& t) {
  s.add(t + ".path", &o.path, "file or directory of text (or tokens); empty = built-in synthetic stream");
  s.add_choice(t + ".format", &o.format, {"text", "tokens"},
               "text: byte tokenizer; tokens: flat little-endian uint32 token ids");
  s.add(t + ".extensions", &o.extensions, "for directories: only files with these suffixes; empty = all");
  s.add(t + ".max_bytes", &o.max_bytes, "cap on the bytes read").min(0).unit("bytes").note("0 = no cap");
  s.add(t + ".eval_frac", &o.eval_frac, "tail of the stream held out for evaluation").min(0).below(1);
}

}  // namespace mt
