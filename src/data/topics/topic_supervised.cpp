// topic_supervised.cpp — topics from labelled examples: a fastText classifier
// (Joulin et al. 2017, "Bag of Tricks": a linear model over averaged word
// embeddings, softmax over the labels), trained with one thread and a fixed
// seed so the same examples give the same model.
#include <fasttext/fasttext.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/file_io.h"
#include "data/topics/fasttext_train.h"
#include "data/topics/topic_model.h"
#include "data/topics/topic_words.h"

namespace mt {
namespace {
constexpr std::string_view kLabelPrefix = "__label__";
constexpr size_t kChunkWords = 200;
}  // namespace

Result<std::unique_ptr<TopicModel>> TopicModel::fit_supervised(
    const std::vector<std::pair<std::string_view, std::string>>& labelled, const TopicModelOptions& opt) {
  if (labelled.empty()) return Status::error("topics.examples: no labelled examples");
  std::unique_ptr<TopicModel> m(new TopicModel());
  m->method_ = TopicMethod::kSupervised;
  m->max_doc_bytes_ = opt.max_doc_bytes;
  std::map<std::string, int32_t> id_of;
  std::vector<int64_t> count;
  std::vector<std::string> lines, words;
  for (const auto& [text, label] : labelled) {
    if (label.empty()) return Status::error("topics.examples: an example has an empty label");
    auto [it, fresh] = id_of.emplace(label, int32_t(m->names_.size()));
    if (fresh) {
      m->names_.push_back(label);
      count.push_back(0);
    }
    ++count[size_t(it->second)];
    // Labels travel as their ids: a label may hold spaces, fastText's may not.
    // fastText makes one SGD step per line, so a long document is cut into
    // lines of kChunkWords words: measured on the Python docs, whole-document
    // lines (140 steps per epoch) left the classifier predicting one label.
    topic_words(text, opt.max_doc_bytes, words);
    for (size_t b = 0; b < std::max<size_t>(words.size(), 1); b += kChunkWords) {
      std::string line = fmt::format("{}{}", kLabelPrefix, it->second);
      for (size_t j = b; j < std::min(words.size(), b + kChunkWords); ++j) line += " " + words[j];
      lines.push_back(std::move(line));
    }
  }
  m->prior_topic_ = int32_t(std::max_element(count.begin(), count.end()) - count.begin());
  if (m->names_.size() == 1) return m;  // one label: nothing to learn (fastText would refuse)

  fasttext::Args a;
  a.model = fasttext::model_name::sup;
  a.loss = fasttext::loss_name::softmax;
  a.dim = int(opt.vector_dim);
  a.epoch = int(opt.supervised_epochs);
  a.lr = 0.5;  // fastText's suggestion for small supervised sets (its default 0.1 underfits here)
  a.minCount = 1;
  a.thread = 1;
  a.seed = int(opt.cluster.seed & 0x7fffffff);
  a.minn = 0;
  a.maxn = 0;
  a.bucket = 0;
  a.wordNgrams = 1;
  auto ft = train_fasttext(lines, a, opt.tmp_dir);
  if (!ft) return ft.status();
  m->clf_ = std::move(ft.value());
  return m;
}

int32_t TopicModel::predict_supervised(std::string_view text) const {
  if (!clf_) return prior_topic_;
  std::istringstream in(topic_line(text, max_doc_bytes_) + "\n");
  std::vector<std::pair<fasttext::real, std::string>> pred;
  // predictLine is const and keeps its state on the stack: safe to share.
  clf_->predictLine(in, pred, 1, 0.0);
  if (pred.empty()) return prior_topic_;  // no word the classifier knows
  const std::string& l = pred[0].second;
  int32_t id = prior_topic_;
  std::from_chars(l.data() + kLabelPrefix.size(), l.data() + l.size(), id);
  return id;
}

Result<std::vector<std::pair<std::string, std::string>>> read_labelled_examples(const std::string& path) {
  auto text = read_file(path, "labelled examples (topics.examples)");
  if (!text) return text.status();
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(text.value());
  std::string line;
  for (int64_t no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return Status::errorf("{}:{}: expected a JSON object", path, no);
    auto t = j.find("text"), l = j.find("topic");
    if (t == j.end() || !t->is_string()) return Status::errorf("{}:{}: expected a string field \"text\"", path, no);
    if (l == j.end() || !l->is_string()) return Status::errorf("{}:{}: expected a string field \"topic\"", path, no);
    out.emplace_back(t->get<std::string>(), l->get<std::string>());
  }
  if (out.empty()) return Status::errorf("{}: no labelled examples", path);
  return out;
}

}  // namespace mt
