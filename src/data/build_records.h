// build_records.h — what the passes of `data build` hand each other and
// the ranks (build_pipeline.cpp): ingest statistics per item, the keys of a
// document until the dedup decision, the labels and scores of a kept
// document, a tokenized document in a token spill; each packed to bytes.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "data/build_labels.h"
#include "data/doc_spill.h"
#include "data/document.h"
#include "data/ingest.h"

namespace mt {

nlohmann::json stats_json(const IngestStats& s);

// Per-item statistics of one rank, merged in item order so that "first
// error" is the first in input order whatever the split across ranks.
struct ItemStats {
  int64_t item;
  IngestStats st;
};
nlohmann::json item_stats_json(const ItemStats& s);
void merge_into(IngestStats& into, const nlohmann::json& j);

// What pass 1 keeps of a document until the dedup decision.
struct DocKeys {
  int64_t item = 0, seq = 0, input = 0, bytes = 0;
  uint64_t k0 = 0, k1 = 0;         // exact key (128 bits)
  int64_t has_topic = 0, has_quality = 0;
  std::vector<uint64_t> bands;     // MinHash band keys
};
void pack_keys(Packer& p, const DocKeys& d);
DocKeys unpack_keys(Unpacker& u);

// The labels and scores of one kept document, gathered after tokenizing.
struct DocLabel {
  std::string topic, quality;  // quality: from metadata, or "" (cut from a score)
  double meta_score = std::nan("");
  DocScores scores;
  int64_t input = 0, tokens = 0, eval = 0;
  uint64_t hash = 0;
};
void pack_label(Packer& p, int64_t id, const DocLabel& l);
// Reads what pack_label wrote; returns the id.
int64_t unpack_label(Unpacker& u, DocLabel& l);

// A tokenized document in a rank's token spill.
struct TokenizedDoc {
  int64_t id = 0;
  std::vector<int32_t> ids;
  Document prov;  // provenance only (text empty)
};
std::string encode_tokenized(const TokenizedDoc& t);
TokenizedDoc decode_tokenized(std::string_view rec);

}  // namespace mt
