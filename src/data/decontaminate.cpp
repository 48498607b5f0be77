// decontaminate.cpp — word normalisation, the n-gram index of evaluation
// items and the coverage rule (decontaminate.h).
#include "data/decontaminate.h"

#include <algorithm>
#include <cmath>

#include "core/hash.h"

namespace mt {
namespace {

bool is_ascii_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Python's string.punctuation: the printable ASCII bytes that are neither
// letters, digits nor space.
bool is_ascii_punct(unsigned char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

// Calls f(word) for each normalised word of text, in order.
template <typename F>
void for_each_word(std::string_view text, F&& f) {
  std::string w;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_ascii_space(c)) {
      if (!w.empty()) f(w);
      w.clear();
    } else if (!is_ascii_punct(c)) {
      w += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : ch;
    }
  }
  if (!w.empty()) f(w);
}

}  // namespace

Status check_decontam_options(const DecontamOptions& o) {
  if (o.n < 1) return Status::errorf("--n: {} words per n-gram; expected at least 1", o.n);
  if (!(o.threshold >= 0 && o.threshold <= 1))
    return Status::errorf("--threshold: {}; expected a fraction of an item's words in [0, 1]", o.threshold);
  return Status::ok();
}

std::vector<std::string> normalized_words(std::string_view text) {
  std::vector<std::string> out;
  for_each_word(text, [&](const std::string& w) { out.push_back(w); });
  return out;
}

std::vector<uint64_t> word_ngram_hashes(std::string_view text, int64_t n) {
  std::vector<uint64_t> words;
  for_each_word(text, [&](const std::string& w) { words.push_back(xxh64(w.data(), w.size())); });
  std::vector<uint64_t> grams;
  if (int64_t(words.size()) < n) return grams;
  grams.reserve(words.size() - size_t(n) + 1);
  // An n-gram is the hash of its words' hashes: 64 bits each, so word
  // boundaries cannot shift ("ab c" and "a bc" differ).
  for (size_t p = 0; p + size_t(n) <= words.size(); ++p)
    grams.push_back(xxh64(&words[p], size_t(n) * sizeof(uint64_t), uint64_t(n)));
  return grams;
}

NgramIndex::NgramIndex(const std::vector<EvalTask>& tasks, const DecontamOptions& opt)
    : n_(opt.n), threshold_(opt.threshold), too_short_(tasks.size(), 0) {
  for (size_t t = 0; t < tasks.size(); ++t)
    for (size_t i = 0; i < tasks[t].items.size(); ++i) {
      Item item{int32_t(t), int32_t(i), {}};
      for (const std::string& s : tasks[t].items[i].sequences) {
        Sequence seq;
        seq.words = int64_t(normalized_words(s).size());
        seq.grams = word_ngram_hashes(s, n_);
        if (!seq.grams.empty()) item.sequences.push_back(std::move(seq));
      }
      if (item.sequences.empty()) {
        ++too_short_[t];
        continue;
      }
      const auto k = int32_t(items_.size());
      for (const Sequence& seq : item.sequences)
        for (uint64_t g : seq.grams) {
          std::vector<int32_t>& p = postings_[g];
          if (p.empty() || p.back() != k) p.push_back(k);  // items are added in order: ascending
        }
      items_.push_back(std::move(item));
    }
}

std::vector<ItemMatch> NgramIndex::match(std::string_view text) const {
  std::vector<uint64_t> hits;
  std::vector<int32_t> candidates;
  for (uint64_t g : word_ngram_hashes(text, n_)) {
    const auto it = postings_.find(g);
    if (it == postings_.end()) continue;
    hits.push_back(g);
    candidates.insert(candidates.end(), it->second.begin(), it->second.end());
  }
  std::vector<ItemMatch> out;
  if (candidates.empty()) return out;
  std::sort(hits.begin(), hits.end());
  hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<char> covered;
  for (int32_t k : candidates) {
    const Item& item = items_[size_t(k)];
    double best = 0;
    for (const Sequence& seq : item.sequences) {
      covered.assign(size_t(seq.words), 0);
      for (size_t j = 0; j < seq.grams.size(); ++j)
        if (std::binary_search(hits.begin(), hits.end(), seq.grams[j]))
          std::fill(covered.begin() + int64_t(j), covered.begin() + int64_t(j) + n_, 1);
      const auto c = std::count(covered.begin(), covered.end(), 1);
      best = std::max(best, double(c) / double(seq.words));
    }
    if (best > 0 && best >= threshold_) out.push_back({item.task, item.item, best});
  }
  return out;
}

}  // namespace mt
