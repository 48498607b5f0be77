// keyword_seeds.cpp — see keyword_seeds.h.
#include "data/topics/keyword_seeds.h"

#include <map>
#include <set>

#include "data/topics/spherical_kmeans.h"
#include "data/topics/topic_names.h"
#include "data/topics/topic_words.h"

namespace mt {

Result<KeywordSeeds> keyword_seeds(const std::vector<std::string_view>& sample, const float* x_ND,
                                   const DocVectors& embed, const TopicModelOptions& opt) {
  const std::vector<KeywordTopic>& topics = opt.keywords;
  if (topics.empty()) return Status::error("topics.keywords: seeded topics need at least one [[topics.keywords]] table");
  const bool other = opt.other == OtherTopic::kCluster;
  KeywordSeeds s;
  std::map<std::string, int32_t> word_topic;  // keyword -> topic; a word may name only one
  for (size_t t = 0; t < topics.size(); ++t) {
    const std::string& name = topics[t].topic;
    if (name.empty() || file_safe_name(name) != name)
      return Status::errorf("topics.keywords[{}].topic: \"{}\" is not a file-name safe label ([A-Za-z0-9_.-], 1-64 bytes)",
                            t, name);
    for (const std::string& n : s.names)
      if (n == name) return Status::errorf("topics.keywords[{}].topic: \"{}\" is named twice", t, name);
    if (other && name == "other")
      return Status::errorf("topics.keywords[{}].topic: \"other\" is reserved while topics.other = \"cluster\"", t);
    if (topics[t].keywords.empty()) return Status::errorf("topics.keywords[{}].keywords: empty for \"{}\"", t, name);
    std::vector<std::string> ws;
    for (const std::string& k : topics[t].keywords) {
      topic_words(k, -1, ws);  // "TCP/IP" -> tcp, ip: the tokens a document would have
      for (const std::string& w : ws) {
        auto [it, fresh] = word_topic.emplace(w, int32_t(t));
        if (!fresh && it->second != int32_t(t))
          return Status::errorf("topics.keywords[{}].keywords: \"{}\" also identifies \"{}\"", t, w,
                                topics[size_t(it->second)].topic);
      }
    }
    s.names.push_back(name);
  }
  if (other) s.names.push_back("other");

  const int64_t K = int64_t(s.names.size()), D = embed.dim(), T = int64_t(topics.size());
  std::vector<double> sum(size_t(K * D), 0.0);
  std::vector<int64_t> votes(size_t(K), 0);
  std::vector<std::string> words;
  for (size_t i = 0; i < sample.size(); ++i) {
    topic_words(sample[i], opt.max_doc_bytes, words);
    std::vector<int64_t> hits(size_t(T), 0);
    for (const std::string& w : words) {
      auto it = word_topic.find(w);
      if (it != word_topic.end()) ++hits[size_t(it->second)];
    }
    int64_t best = -1, best_hits = 0;
    bool tie = false;
    for (int64_t t = 0; t < T; ++t) {
      if (hits[size_t(t)] > best_hits) { best = t; best_hits = hits[size_t(t)]; tie = false; }
      else if (hits[size_t(t)] == best_hits && best_hits > 0) tie = true;
    }
    int64_t into = -1;
    if (best >= 0 && !tie) into = best;
    else if (best < 0 && other) into = K - 1;
    if (into < 0) continue;
    ++votes[size_t(into)];
    for (int64_t j = 0; j < D; ++j) sum[size_t(into * D + j)] += x_ND[int64_t(i) * D + j];
  }
  s.cent_KD.assign(size_t(K * D), 0.0f);
  for (int64_t t = 0; t < K; ++t) {
    float* y = s.cent_KD.data() + t * D;
    if (t < T) s.seeded_docs += votes[size_t(t)];
    if (votes[size_t(t)] > 0) {
      for (int64_t j = 0; j < D; ++j) y[j] = float(sum[size_t(t * D + j)]);
    } else if (t < T) {
      std::string kw;
      for (const std::string& k : topics[size_t(t)].keywords) kw += k + " ";
      embed.embed(kw, y);
      bool any = false;
      for (int64_t j = 0; j < D; ++j) any = any || y[j] != 0.0f;
      if (!any)
        return Status::errorf("topics.keywords[{}]: no document of the sample uses a keyword of \"{}\", "
                              "and none of its keywords is in the vocabulary", t, s.names[size_t(t)]);
    }  // an "other" nobody falls into stays zero: it then takes only documents no topic resembles
    normalize_row(y, D);
  }
  return s;
}

}  // namespace mt
