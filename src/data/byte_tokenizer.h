// byte_tokenizer.h — the stand-in tokenizer until the SentencePiece pipeline:
// ids 0..255 are bytes, then three specials. Vocab must be >= kByteVocab.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mt {

struct ByteTokenizer {
  static constexpr int32_t kEndOfDocument = 256;
  static constexpr int32_t kPad = 257;
  static constexpr int32_t kPathHeader = 258;
  static constexpr int64_t kByteVocab = 259;

  static void append_document(std::vector<int32_t>& out, const std::string& text);
  static std::string decode(const int32_t* ids, int64_t n);
};

}  // namespace mt
