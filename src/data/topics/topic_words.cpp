// topic_words.cpp — see topic_words.h.
#include "data/topics/topic_words.h"

#include <algorithm>
#include <cctype>

namespace mt {

void topic_words(std::string_view text, int64_t max_bytes, std::vector<std::string>& out) {
  out.clear();
  if (max_bytes >= 0 && int64_t(text.size()) > max_bytes) text = text.substr(0, size_t(max_bytes));
  std::string w;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || u == '_' || u >= 0x80) {
      w += char(std::tolower(u));
    } else if (!w.empty()) {
      out.push_back(std::move(w));
      w.clear();
    }
  }
  if (!w.empty()) out.push_back(std::move(w));
}

std::string topic_line(std::string_view text, int64_t max_bytes) {
  std::vector<std::string> words;
  topic_words(text, max_bytes, words);
  std::string line;
  for (const std::string& w : words) {
    if (!line.empty()) line += ' ';
    line += w;
  }
  return line;
}

}  // namespace mt
