// topic_words.h — the word tokens every topic method sees: lower-cased runs of
// [A-Za-z0-9_] and UTF-8 bytes, from the first max_bytes of a document. One
// tokeniser for fastText training, embedding, naming and seed matching, so a
// keyword matches exactly the token a document was embedded with.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mt {

// Appends the words of text[0, max_bytes) to `out` (cleared first).
// Underscores stay inside words: in code, `errno_t` and `socket_fd` are
// identifiers, not two words each.
void topic_words(std::string_view text, int64_t max_bytes, std::vector<std::string>& out);

// The words joined by single spaces on one line (fastText's input format:
// one document per line, whitespace-separated tokens).
std::string topic_line(std::string_view text, int64_t max_bytes);

}  // namespace mt
