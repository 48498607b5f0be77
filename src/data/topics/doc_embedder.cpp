// doc_embedder.cpp — see doc_embedder.h.
#include "data/topics/doc_embedder.h"

#include <algorithm>
#include <cmath>

#include "data/topics/fasttext_train.h"
#include "data/topics/spherical_kmeans.h"
#include "data/topics/topic_words.h"

namespace mt {

Result<DocEmbedder> DocEmbedder::train(const std::vector<std::string_view>& sample, const DocEmbedderOptions& opt) {
  if (sample.empty()) return Status::error("topics: no documents to train word vectors on");
  std::vector<std::string> lines;
  lines.reserve(sample.size());
  for (std::string_view t : sample) lines.push_back(topic_line(t, opt.max_doc_bytes));

  fasttext::Args a;
  a.model = opt.model == WordModel::kCbow ? fasttext::model_name::cbow : fasttext::model_name::sg;
  a.loss = fasttext::loss_name::ns;
  a.dim = int(opt.dim);
  a.epoch = int(opt.epochs);
  a.minCount = int(opt.min_count);
  a.thread = 1;  // hogwild with more threads is not reproducible
  a.seed = int(opt.seed & 0x7fffffff);
  // Whole words only: subword n-grams would allocate bucket x D floats
  // (2M x 100 by default) and, measured, did not improve topics.
  a.minn = 0;
  a.maxn = 0;
  a.bucket = 0;
  a.wordNgrams = 1;
  auto ft = train_fasttext(lines, a, opt.tmp_dir);
  if (!ft) return ft.status();

  DocEmbedder e;
  e.dim_ = opt.dim;
  e.max_doc_bytes_ = opt.max_doc_bytes;
  e.pooling_ = opt.pooling;
  auto dict = ft.value()->getDictionary();
  const int32_t V = dict->nwords();
  e.words_.resize(size_t(V));
  e.vec_VD.assign(size_t(V) * size_t(opt.dim), 0.0f);
  fasttext::Vector v(opt.dim);
  for (int32_t i = 0; i < V; ++i) {
    e.words_[size_t(i)] = dict->getWord(i);
    e.index_.emplace(e.words_[size_t(i)], i);
    ft.value()->getWordVector(v, e.words_[size_t(i)]);
    float* row = e.vec_VD.data() + int64_t(i) * opt.dim;
    std::copy(v.data(), v.data() + opt.dim, row);
    normalize_row(row, opt.dim);
  }

  // Document frequencies over the sample.
  std::vector<int64_t> df(size_t(V), 0);
  std::vector<std::string> words;
  std::vector<int32_t> ids;
  for (std::string_view t : sample) {
    topic_words(t, opt.max_doc_bytes, words);
    ids.clear();
    for (const std::string& w : words) {
      const int32_t id = e.word_id(w);
      if (id >= 0) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (int32_t id : ids) ++df[size_t(id)];
  }
  const double n = double(sample.size());
  e.idf_V.resize(size_t(V));
  for (int32_t i = 0; i < V; ++i) e.idf_V[size_t(i)] = float(std::log((n + 1) / double(df[size_t(i)] + 1)) + 1.0);

  // The common direction: mean of the (uncentred) sample vectors, summed in
  // sample order.
  e.mean_D.assign(size_t(opt.dim), 0.0f);
  if (opt.pooling == DocPooling::kIdfCentered) {
    std::vector<double> sum(size_t(opt.dim), 0.0);
    std::vector<float> x(static_cast<size_t>(opt.dim));
    for (std::string_view t : sample) {
      topic_words(t, opt.max_doc_bytes, words);
      e.pool(words, x.data());  // mean_D is still zero here
      for (int64_t j = 0; j < opt.dim; ++j) sum[size_t(j)] += x[size_t(j)];
    }
    for (int64_t j = 0; j < opt.dim; ++j) e.mean_D[size_t(j)] = float(sum[size_t(j)] / n);
  }
  return e;
}

int32_t DocEmbedder::word_id(const std::string& w) const {
  auto it = index_.find(w);
  return it == index_.end() ? -1 : it->second;
}

void DocEmbedder::pool(const std::vector<std::string>& words, float* out_D) const {
  std::fill(out_D, out_D + dim_, 0.0f);
  bool any = false;
  for (const std::string& w : words) {
    const int32_t id = word_id(w);
    if (id < 0) continue;
    any = true;
    const float wt = pooling_ == DocPooling::kMean ? 1.0f : idf_V[size_t(id)];
    const float* row = vec_VD.data() + int64_t(id) * dim_;
    for (int64_t j = 0; j < dim_; ++j) out_D[j] += wt * row[j];
  }
  if (!any) return;
  normalize_row(out_D, dim_);
  for (int64_t j = 0; j < dim_; ++j) out_D[j] -= mean_D[size_t(j)];
  normalize_row(out_D, dim_);
}

void DocEmbedder::embed(std::string_view text, float* out_D) const {
  std::vector<std::string> words;
  topic_words(text, max_doc_bytes_, words);
  pool(words, out_D);
}

}  // namespace mt
