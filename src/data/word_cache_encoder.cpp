// word_cache_encoder.cpp — split, look each chunk up in the thread's cache,
// encode the misses with SentencePiece and remember them.
#include "data/word_cache_encoder.h"

#include <sentencepiece_processor.h>

#include "core/check.h"
#include "data/word_cache.h"

namespace mt {
namespace {

std::atomic<uint64_t> g_next_encoder_id{1};

// One cache per thread, owned by the encoder that last used it on this
// thread. A different encoder (another model, or a new one at a recycled
// address) takes it over and clears it: ids are what tell them apart.
struct ThreadCache {
  uint64_t owner = 0;
  std::unique_ptr<WordCache> cache;
  std::vector<std::string_view> chunks;  // reused split buffer
};
thread_local ThreadCache t_cache;

// Probe for the creation self-check: runs of spaces and tabs, newlines,
// digits, a literal "▁", invalid UTF-8, emoji, a control token's text, and a
// word repeated so the second copy is a cache hit.
constexpr std::string_view kProbe =
    "def  f(x):\n\treturn x+1  # 12345\n\n  \n   The the the, 3.14159 \xE2\x96\x81 \xE2\x96\x81\xE2\x96\x81x "
    "caf\xC3\xA9 \xF0\x9F\x98\x80! \xFF\xFE \xE2\x96 <|endoftext|> \xE4\xB8\xAD\xE6\x96\x87 The  the\n";

}  // namespace

void sp_encode_append(const sentencepiece::SentencePieceProcessor& sp, std::string_view text,
                      std::vector<int32_t>& out) {
  std::vector<int> ids;
  const auto s = sp.Encode(text, &ids);
  // Encode fails only for an unloaded model (checked at load) or an internal
  // inconsistency; neither is caused by input text.
  MT_CHECK(s.ok(), "SentencePiece encode failed: {}", s.ToString());
  out.insert(out.end(), ids.begin(), ids.end());
}

WordCacheEncoder::WordCacheEncoder(const sentencepiece::SentencePieceProcessor& sp, ChunkCutter cutter)
    : sp_(sp), cutter_(std::move(cutter)), id_(g_next_encoder_id.fetch_add(1)) {}
WordCacheEncoder::~WordCacheEncoder() = default;

Result<std::unique_ptr<WordCacheEncoder>> WordCacheEncoder::create(const sentencepiece::SentencePieceProcessor& sp,
                                                                   std::string_view serialized) {
  auto info = read_sp_model_info(serialized, "tokenizer");
  if (!info) return info.status();
  auto cutter = ChunkCutter::from_model(info.value());
  if (!cutter) return cutter.status();
  if (!cutter->cuts_at_spaces()) return Status::error("a piece has \"\xE2\x96\x81\" after another character");
  std::unique_ptr<WordCacheEncoder> e(new WordCacheEncoder(sp, std::move(cutter.value())));
  auto bpe = BpeWord::from_model(info.value());
  if (bpe)
    e->bpe_ = std::move(bpe.value());
  else
    e->bpe_off_ = bpe.status().message();
  // The argument in chunk_cutter.h rests on SentencePiece internals; check it
  // on a probe text with this library and model before relying on it.
  std::vector<int32_t> want, got;
  sp_encode_append(sp, kProbe, want);
  WordCache cache(64);
  e->encode(kProbe, got, cache);
  if (got != want) return Status::error("self-check: chunked encoding differs from SentencePiece on the probe text");
  return e;
}

void WordCacheEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  ThreadCache& t = t_cache;
  if (t.owner != id_) {
    if (!t.cache)
      t.cache = std::make_unique<WordCache>(kCacheEntries);
    else
      t.cache->clear();
    t.owner = id_;
  }
  encode(text, out, *t.cache);
}

void WordCacheEncoder::encode(std::string_view text, std::vector<int32_t>& out, WordCache& cache) const {
  // Split into a buffer of this thread's (the caller-owned path allocates).
  std::vector<std::string_view> local;
  std::vector<std::string_view>& chunks = &cache == t_cache.cache.get() ? t_cache.chunks : local;
  chunks.clear();
  cutter_.split(text, chunks);
  for (std::string_view c : chunks) {
    if (int64_t(c.size()) > WordCache::kMaxWordBytes) {
      sp_encode_append(sp_, c, out);
      continue;
    }
    const uint64_t h = WordCache::hash(c);
    int64_t n = 0;
    if (const int32_t* ids = cache.find(c, h, n)) {
      out.insert(out.end(), ids, ids + n);
      continue;
    }
    const size_t before = out.size();
    encode_new_word(c, out);
    const int64_t added = int64_t(out.size() - before);
    if (added <= WordCache::kMaxIds) cache.insert(c, h, out.data() + before, added);
  }
}

void WordCacheEncoder::encode_new_word(std::string_view word, std::vector<int32_t>& out) const {
  if (!bpe_ || !bpe_->encode(word, out)) sp_encode_append(sp_, word, out);
}

}  // namespace mt
