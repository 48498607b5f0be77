// topic_names.cpp — see topic_names.h.
#include "data/topics/topic_names.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <unordered_map>

#include "core/check.h"
#include "data/topics/topic_words.h"

namespace mt {
namespace {

// A name word must read as a word: 3+ bytes, a letter first, not a hex-ish
// run of digits (line numbers and hashes are distinctive but say nothing).
bool nameable(const std::string& w) {
  if (w.size() < 3 || w.size() > 24) return false;
  if (!std::isalpha(static_cast<unsigned char>(w[0]))) return false;
  int64_t digits = 0;
  for (char c : w) digits += std::isdigit(static_cast<unsigned char>(c)) ? 1 : 0;
  return digits * 2 < int64_t(w.size());
}

}  // namespace

std::string file_safe_name(std::string_view s, int64_t max_bytes) {
  std::string out;
  for (char c : s) {
    if (int64_t(out.size()) >= max_bytes) break;
    const unsigned char u = static_cast<unsigned char>(c);
    out += (std::isalnum(u) && u < 0x80) || c == '_' || c == '.' || c == '-' ? c : '_';
  }
  return out;
}

std::vector<std::string> name_clusters(const std::vector<std::string_view>& texts,
                                       const std::vector<int32_t>& labels, int64_t k, int64_t max_doc_bytes,
                                       int64_t words_per_name) {
  MT_CHECK(texts.size() == labels.size(), "{} texts, {} labels", texts.size(), labels.size());
  // Document frequency per (word, cluster); a word appears at most once per document.
  std::unordered_map<std::string, std::map<int32_t, int64_t>> df;
  std::vector<int64_t> size(size_t(k), 0);
  std::vector<std::string> words;
  for (size_t i = 0; i < texts.size(); ++i) {
    const int32_t c = labels[i];
    MT_CHECK(c >= 0 && c < k, "label {} outside [0, {})", c, k);
    ++size[size_t(c)];
    topic_words(texts[i], max_doc_bytes, words);
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    for (const std::string& w : words)
      if (nameable(w)) ++df[w][c];
  }
  const double n = double(texts.size());
  std::vector<std::vector<std::pair<double, std::string>>> best(static_cast<size_t>(k));
  for (const auto& [w, per] : df) {
    int64_t total = 0;
    for (const auto& [c, m] : per) total += m;
    const double p = double(total) / n;
    for (const auto& [c, m] : per) {
      if (m < std::min<int64_t>(2, size[size_t(c)])) continue;  // one document is an accident
      const double pc = double(m) / double(size[size_t(c)]);
      best[size_t(c)].push_back({pc * std::log(pc / p), w});
    }
  }
  const int width = std::max(2, int(fmt::format("{}", std::max<int64_t>(k - 1, 0)).size()));
  std::vector<std::string> names(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) {
    auto& b = best[size_t(c)];
    // Highest score first; equal scores by word, so the order never depends on hashing.
    std::sort(b.begin(), b.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    std::string name = fmt::format("t{:0{}}", c, width);
    for (int64_t j = 0; j < words_per_name && j < int64_t(b.size()) && b[size_t(j)].first > 0; ++j)
      name += "-" + b[size_t(j)].second;
    names[size_t(c)] = file_safe_name(name, 64);
  }
  return names;
}

}  // namespace mt
