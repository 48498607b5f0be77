// topic_eval — measures topic models against labelled corpora that Debian
// machines have (tests/support/topic_corpora.h) and prints one Markdown table
// row per run: method, corpus, k, NMI, purity, fit+assign time. The numbers in
// docs/data-topics.md come from it. Build (from the repository root, after
// `ninja -C build mt_data`):
//   g++ -std=c++20 -O2 -fopenmp -Isrc -Itests tools/topic_eval/topic_eval.cpp \
//     build/src/libmt_data.a build/src/libmt_core.a \
//     $(pkg-config --libs fasttext sentencepiece libzstd zlib libxxhash) -lfmt -o build/topic_eval
// Run: build/topic_eval --corpus python --method fasttext --k 30 [--seed 1] ...
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "data/labelers.h"
#include "data/topics/topic_metrics.h"
#include "data/topics/topic_model.h"
#include "data/topics/topic_words.h"
#include "support/topic_corpora.h"

using namespace mt;

namespace {

// Keyword topics from the chapter titles of the Python docs ("Text
// Processing Services" -> text, processing), words shared by two titles or
// shorter than 4 letters dropped: what a person might type without looking
// at the data.
std::vector<KeywordTopic> chapter_title_keywords(const testing::LabelledCorpus& c) {
  const std::string dir = "/usr/share/doc/python3.11/html/_sources/library/";
  std::map<std::string, std::vector<std::string>> title_words;
  std::map<std::string, int> uses;
  for (const std::string& ch : c.label_names) {
    std::istringstream in(testing::slurp(dir + ch + ".rst.txt"));
    std::string line, prev, title;
    while (std::getline(in, line)) {
      if (!line.empty() && line.find_first_not_of("*=#") == std::string::npos && !prev.empty() &&
          prev.find_first_not_of("*=# ") != std::string::npos) { title = prev; break; }
      prev = line;
    }
    std::vector<std::string> ws;
    topic_words(title, -1, ws);
    std::set<std::string> uniq;
    for (auto& w : ws)
      if (w.size() >= 4 && w != "services" && w != "modules" && w != "with" && w != "python" && w != "tools") uniq.insert(w);
    for (auto& w : uniq) { title_words[ch].push_back(w); ++uses[w]; }
  }
  // A keyword no two pages use cannot seed anything: such chapters get no topic.
  std::map<std::string, int> df;
  std::vector<std::string> ws;
  for (const std::string& t : c.texts) {
    topic_words(t, 16 << 10, ws);
    std::set<std::string> u(ws.begin(), ws.end());
    for (auto& w : u) if (uses.count(w)) ++df[w];
  }
  std::vector<KeywordTopic> out;
  for (const std::string& ch : c.label_names) {
    KeywordTopic t{ch, {}};
    for (auto& w : title_words[ch]) if (uses[w] == 1 && df[w] >= 2) t.keywords.push_back(w);
    if (!t.keywords.empty()) out.push_back(t);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a = {{"corpus", "python"}, {"method", "fasttext"}, {"k", "30"},
                                          {"seed", "1"}, {"features", "lsa"},        {"dim", "64"},          {"epochs", "5"},
                                          {"pooling", "centered"}, {"model", "cbow"},  {"every", "1"},
                                          {"max-bytes", "16384"}, {"iterations", "12"}, {"min-count", "2"},
                                          {"man3-every", "8"},  {"print-names", "0"}};
  for (int i = 1; i + 1 < argc; i += 2) a[std::string(argv[i]).substr(2)] = argv[i + 1];
  const bool python = a["corpus"] == "python";
  testing::LabelledCorpus c = python ? testing::python_docs(std::stoll(a["every"]))
                                     : testing::code_prose(std::stoll(a["every"]), std::stoll(a["man3-every"]));
  std::vector<std::string_view> texts(c.texts.begin(), c.texts.end());

  TopicModelOptions o;
  o.cluster.n_topics = std::stoll(a["k"]);
  o.cluster.iterations = std::stoll(a["iterations"]);
  o.cluster.seed = std::stoull(a["seed"]);
  o.vector_dim = std::stoll(a["dim"]);
  o.epochs = std::stoll(a["epochs"]);
  if (a.count("sup-epochs")) o.supervised_epochs = std::stoll(a["sup-epochs"]);
  o.min_count = std::stoll(a["min-count"]);
  o.max_doc_bytes = std::stoll(a["max-bytes"]);
  o.pooling = a["pooling"] == "mean" ? DocPooling::kMean : a["pooling"] == "idf" ? DocPooling::kIdf : DocPooling::kIdfCentered;
  o.word_model = a["model"] == "sg" ? WordModel::kSkipgram : WordModel::kCbow;
  const std::string method = a["method"];
  o.method = method == "tfidf" ? TopicMethod::kTfidf : method == "seeded" ? TopicMethod::kSeeded
           : method == "supervised" ? TopicMethod::kSupervised : TopicMethod::kKmeans;
  o.features = a["features"] == "fasttext" ? TopicFeatures::kFasttext : a["features"] == "both" ? TopicFeatures::kLsaFasttext : TopicFeatures::kLsa;

  std::vector<int32_t> pred, truth;
  std::vector<std::string> names;
  const auto t0 = std::chrono::steady_clock::now();
  if (o.method == TopicMethod::kSupervised) {
    // Train on the even-indexed documents, score the odd-indexed ones.
    std::vector<std::pair<std::string_view, std::string>> train;
    for (size_t i = 0; i < texts.size(); i += 2) train.emplace_back(texts[i], c.label_names[size_t(c.labels[i])]);
    auto m = TopicModel::fit_supervised(train, o);
    if (!m) { fmt::print(stderr, "{}\n", m.status().message()); return 1; }
    names = m.value()->names();
    std::map<std::string, int32_t> truth_of;
    for (size_t i = 1; i < texts.size(); i += 2) {
      pred.push_back(m.value()->assign(texts[i]));
      if (a.count("train-acc")) pred.back() = m.value()->assign(texts[i - 1]);
      truth.push_back(c.labels[a.count("train-acc") ? i - 1 : i]);
    }
  } else {
    if (o.method == TopicMethod::kSeeded) o.keywords = chapter_title_keywords(c);
    auto r = label_topics(texts, o);
    if (!r) { fmt::print(stderr, "{}\n", r.status().message()); return 1; }
    pred = r->ids;
    names = r->names;
    truth = c.labels;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string extra;
  if (!python) {
    // Code vs prose: clusters holding both, and purity against {code, prose}.
    std::vector<int32_t> kind(truth.size());
    for (size_t i = 0; i < truth.size(); ++i) kind[i] = c.label_names[size_t(truth[i])] == "code" ? 1 : 0;
    std::map<int32_t, std::pair<int64_t, int64_t>> mix;
    for (size_t i = 0; i < pred.size(); ++i) (kind[i] ? mix[pred[i]].first : mix[pred[i]].second)++;
    int64_t mixed = 0, minority = 0;
    for (auto& [k, v] : mix) if (v.first && v.second) { ++mixed; minority += std::min(v.first, v.second); }
    extra = fmt::format(" code/prose purity {:.3f}, mixed clusters {}, docs on the wrong side {}",
                        purity(pred, kind), mixed, minority);
  }
  fmt::print("| {}{} | {} (n={}, {} labels) | {} | {:.3f} | {:.3f} | {:.1f} s |{}\n", method, o.method == TopicMethod::kKmeans || o.method == TopicMethod::kSeeded ? "/" + a["features"] : "", a["corpus"], texts.size(),
             c.label_names.size(), names.size(), nmi(pred, truth), purity(pred, truth), secs, extra);
  if (a["print-names"] == "1") {
    std::map<int32_t, std::map<std::string, int>> comp;
    for (size_t i = 0; i < pred.size(); ++i) comp[pred[i]][c.label_names[size_t(truth[i])]]++;
    for (auto& [k, m] : comp) {
      std::string s;
      for (auto& [l, n] : m) s += fmt::format(" {}:{}", l, n);
      fmt::print("  {:<40} {}\n", names[size_t(k)], s);
    }
  }
  return 0;
}
