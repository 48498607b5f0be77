// data_fuzz_target.h — one fuzz input through the data readers that face
// untrusted bytes: JSONL records, the gzip/zstd line readers and the shard /
// document-index validator (with raw headers, and with checksums repaired so
// the deeper checks are reached). Built two ways: tests/fuzz/data_fuzzer.cpp
// (libFuzzer, -DMT_FUZZ=ON with clang) and tests/unit/data_fuzz_test.cpp
// (a seed corpus plus seeded mutations for a few seconds inside ctest).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/hash.h"
#include "data/ingest.h"
#include "data/line_reader.h"
#include "data/shard.h"

namespace mt::fuzz {

// Selector byte values (first input byte, modulo 5).
enum Target : uint8_t { kJsonl = 0, kGzip = 1, kZstd = 2, kShardRaw = 3, kShardFixed = 4 };

inline void drain(LineReader& r) {
  std::string line;
  int64_t total = 0;
  while (total < (8 << 20)) {  // bounded output: a decompression bomb just stops here
    auto more = r.next(line);
    if (!more || !more.value()) return;
    total += int64_t(line.size()) + 1;
  }
}

inline void read_shard(std::string tok, std::string idx) {
  auto r = ShardReader::from_bytes(std::move(tok), std::move(idx), "fuzz", 0x77, 1 << 16);
  if (!r) return;
  const ShardReader& s = *r.value();
  int64_t sum = 0;
  for (int64_t d = 0; d < s.n_docs(); ++d) sum += s.doc_length(d);
  for (int64_t i = 0; i < s.n_tokens(); ++i) sum += s.token(i);
  (void)sum;
}

// Fills in payload and header checksums of a 64-byte-header file image.
inline void fix_checksums(std::string& f) {
  if (f.size() < 64) f.resize(64, '\0');
  const uint64_t payload = xxh64(f.data() + 64, f.size() - 64);
  std::memcpy(f.data() + 40, &payload, 8);
  const uint64_t header = xxh64(f.data(), 56);
  std::memcpy(f.data() + 56, &header, 8);
}

inline int data_fuzz_one(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t sel = data[0] % 5;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (sel) {
    case kJsonl: {
      JsonlFields plain, code;
      code.text = "content";
      code.quality = "meta.q";
      size_t start = 0;
      while (start <= rest.size()) {
        size_t nl = rest.find('\n', start);
        if (nl == std::string::npos) nl = rest.size();
        const std::string_view line(rest.data() + start, nl - start);
        JsonlRecord a, b;
        std::string reason;
        (void)parse_jsonl_record(line, plain, true, a, "fuzz:1", &reason);
        (void)parse_jsonl_record(line, code, false, b, "fuzz:1", &reason);
        start = nl + 1;
      }
      break;
    }
    case kGzip:
    case kZstd: {
      auto r = LineReader::from_memory(rest, sel == kGzip ? Compression::kGzip : Compression::kZstd, "fuzz");
      drain(*r);
      break;
    }
    case kShardRaw:
    case kShardFixed: {
      // Two bytes: where the token file ends and the index begins.
      if (rest.size() < 2) return 0;
      const size_t split = (uint8_t(rest[0]) | size_t(uint8_t(rest[1])) << 8) % (rest.size() - 1);
      std::string tok = rest.substr(2, split), idx = rest.substr(2 + split);
      if (sel == kShardFixed) {
        // Valid magics, version and tokenizer hash, so checks past them run.
        tok.resize(std::max<size_t>(tok.size(), 64), '\0');
        idx.resize(std::max<size_t>(idx.size(), 64), '\0');
        std::memcpy(tok.data(), "MTTOKENS", 8);
        std::memcpy(idx.data(), "MTDOCIDX", 8);
        const uint32_t version = kShardVersion;
        const uint64_t hash = 0x77;
        for (std::string* f : {&tok, &idx}) {
          std::memcpy(f->data() + 8, &version, 4);
          std::memcpy(f->data() + 16, &hash, 8);
        }
        fix_checksums(tok);
        fix_checksums(idx);
      }
      read_shard(std::move(tok), std::move(idx));
      break;
    }
  }
  return 0;
}

}  // namespace mt::fuzz
