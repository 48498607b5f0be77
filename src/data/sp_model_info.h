// sp_model_info.h — the few fields of a serialized SentencePiece ModelProto
// that decide whether text may be encoded in independent chunks
// (chunk_cutter.h). A small protobuf wire-format reader: Debian's
// libsentencepiece-dev ships no sentencepiece_model.pb.h, and the processor's
// API does not expose the normaliser settings or piece types.
// Field numbers and proto2 defaults are those of sentencepiece_model.proto
// (stable since 0.1.x).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mt {

// ModelProto.SentencePiece.Type.
enum class SpPieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
// TrainerSpec.ModelType.
enum class SpModelType { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

struct SpPieceInfo {
  std::string piece;
  float score = 0;  // BPE: merges with higher scores go first
  SpPieceType type = SpPieceType::kNormal;
};

struct SpModelInfo {
  std::vector<SpPieceInfo> pieces;  // in id order
  // TrainerSpec (proto defaults where a field is absent).
  SpModelType model_type = SpModelType::kUnigram;
  bool split_by_whitespace = true;
  bool treat_whitespace_as_suffix = false;
  bool byte_fallback = false;
  // NormalizerSpec.
  std::string normalizer_name;
  int64_t charsmap_bytes = 0;  // precompiled_charsmap size: 0 = no rewriting rules (identity)
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Errors name `name` and the malformed field.
Result<SpModelInfo> read_sp_model_info(std::string_view serialized, const std::string& name);

}  // namespace mt
