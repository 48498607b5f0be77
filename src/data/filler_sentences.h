// filler_sentences.h — sentences of real corpus text, the haystack of the
// synthetic long-context tasks (`moetrain tasks make passkey`): the inputs
// are read as `data build` reads them (files, directories, JSONL and text,
// .gz / .zst; data/ingest.h), each document cut into paragraphs at blank
// lines and each paragraph, its whitespace collapsed to single spaces, into
// sentences: runs ending in `.`, `!` or `?` (and any closing quotes or
// brackets) followed by a space or the paragraph's end. Text after a
// paragraph's last sentence end (headings, list items, code) is left out. The
// pool is in input order, so drawing from it by index is as deterministic as
// the draw.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mt {

struct FillerOptions {
  int64_t max_bytes = int64_t(64) << 20;  // document text read at most (bytes); the rest of the inputs is not read
  int64_t min_words = 3;                  // shorter sentences (headings, fragments) are left out
  int64_t max_words = 64;                 // longer ones (run-on lists, code without full stops) too: a prompt's
                                          // length is exact within one sentence
};

struct FillerSentences {
  std::vector<std::string> sentences;  // in input order
  int64_t documents = 0;               // documents read
  int64_t bytes = 0;                   // their text
  int64_t skipped_records = 0;         // malformed JSONL records skipped
};

// Appends the sentences of one document that pass `o`'s word limits and do
// not mention a pass key themselves ("pass key" or "passkey", any case): a
// second, unrelated key in the haystack would make the item ambiguous.
void add_sentences(std::string_view text, const FillerOptions& o, std::vector<std::string>& out);

// Reads `paths` in order until o.max_bytes of document text; invalid UTF-8
// is repaired and malformed JSONL records are skipped (counted). An error if
// an input is missing or no sentence passes the limits (naming the inputs).
Result<FillerSentences> read_filler(const std::vector<std::string>& paths, const FillerOptions& o);

}  // namespace mt
