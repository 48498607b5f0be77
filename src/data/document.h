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
