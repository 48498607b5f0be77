// hf_tokenizer.h — the tokenizer files transformers loads next to an
// exported model: SentencePiece runs ship their model for LlamaTokenizer
// (legacy mode: SentencePiece unchanged on the text); byte-tokenizer runs a
// tokenizers BPE without merges over the 256 byte pieces. The mapping and
// why it is exact: docs/inference.md, "Tokenizer files".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt {

class TextCodec;

// Writes the files into `dir` (max_len: model_max_length); returns their names.
Result<std::vector<std::string>> write_hf_tokenizer(const std::string& dir, const TextCodec& codec, int64_t max_len);

}  // namespace mt
