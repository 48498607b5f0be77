// text_normalize.h — what every document goes through before labelling and
// tokenizing: UTF-8 validation (or repair to U+FFFD), line endings to "\n",
// no byte-order mark, no NUL bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mt {

enum class Utf8Policy { kStrict, kRepair };  // strict: invalid UTF-8 is an input error

// Byte offset of the first ill-formed UTF-8 sequence (overlong forms,
// surrogates and code points past U+10FFFF included), or -1 if valid.
int64_t find_invalid_utf8(std::string_view s);

// Replaces each maximal ill-formed subsequence with U+FFFD; returns how many
// replacements were made.
int64_t repair_utf8(std::string& s);

// CRLF and lone CR become LF; a leading BOM and NUL bytes are removed.
void normalize_text(std::string& s);

// True if s holds only whitespace.
bool is_blank(std::string_view s);

}  // namespace mt
