// document.h — a document between ingest and tokenizing: normalised text,
// the special tokens to insert at byte offsets (outcome tag, path headers),
// and its labels (from metadata, or filled in by the labelers).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace mt {

struct DocMark {
  int64_t offset;   // byte offset in text: the special goes before this byte
  Special special;
};

struct Document {
  std::string text;
  std::vector<DocMark> marks;   // sorted by offset
  std::string topic;            // "" = unlabelled (the topic labeler decides)
  std::string quality;          // bucket label such as "q3"; "" = unlabelled
  double quality_score = std::nan("");  // a numeric metadata score to cut into levels, if any
  std::string origin;           // "file:line" or "repo path", for messages
  // Provenance, kept with the document into the dataset (docs/data.md).
  std::string source;           // the input file, or the repository directory
  int64_t line = 0;             // JSONL: the record's line (code JSONL: the repository's first row); else 0
  int64_t offset = 0;           // JSONL: byte offset of that line in the decompressed file; else 0
  int64_t part = 0;             // a repository split at file boundaries: which part (0-based)
  int64_t text_offset = 0;      // a long document cut into pieces: where this piece starts in its text
};

// Appends the token ids of `d` (specials at their marks), without the
// end-of-document separator.
inline void encode_document(const Tokenizer& tok, const Document& d, std::vector<int32_t>& out) {
  int64_t at = 0;
  for (const DocMark& m : d.marks) {
    if (m.offset > at) tok.encode(std::string_view(d.text).substr(size_t(at), size_t(m.offset - at)), out);
    out.push_back(tok.special(m.special));
    at = std::max(at, m.offset);
  }
  if (at < int64_t(d.text.size())) tok.encode(std::string_view(d.text).substr(size_t(at)), out);
}

}  // namespace mt
