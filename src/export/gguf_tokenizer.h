// gguf_tokenizer.h — a run's tokenizer as GGUF metadata (tokenizer.ggml.*),
// so llama.cpp tokenizes text into moetrain's ids. SentencePiece runs (BPE
// with byte fallback, identity normalisation, no dummy prefix) map onto
// llama.cpp's "llama" (SPM) tokenizer: pieces, scores and types by id,
// add_space_prefix false. Byte-tokenizer runs map onto "gpt2" (byte-level
// BPE) with no merges: token b is byte b in GPT-2's byte-to-character
// alphabet, so every byte is its own token, as in moetrain. Ids past the
// tokenizer's vocabulary (the model's vocab_size is an upper bound) are
// unused placeholders. The end-of-document id is BOS and EOS.
#pragma once
#include <cstdint>
#include <string>

#include "export/gguf_file.h"

namespace mt {

class TextCodec;

void add_gguf_tokenizer(GgufFile& f, const TextCodec& codec, int64_t vocab_size);

// GPT-2's byte-level alphabet: the character (UTF-8) byte b stands for.
std::string gpt2_byte_char(int b);

}  // namespace mt
