// topic_model.cpp — fitting and assignment for the unsupervised and
// keyword-seeded topics, and label_topics (the build's one call). The
// supervised classifier lives in topic_supervised.cpp.
#include "data/topics/topic_model.h"

#include <algorithm>

#include <fasttext/fasttext.h>

#include "core/check.h"
#include "data/topics/keyword_seeds.h"
#include "data/topics/lsa_embedder.h"
#include "data/topics/spherical_kmeans.h"
#include "data/topics/topic_names.h"

namespace mt {

TopicModel::TopicModel() = default;
TopicModel::~TopicModel() = default;

TopicMethod resolve_method(const TopicModelOptions& opt) {
  if (opt.method != TopicMethod::kAuto) return opt.method;
  if (!opt.examples.empty()) return TopicMethod::kSupervised;
  if (!opt.keywords.empty()) return TopicMethod::kSeeded;
  return TopicMethod::kKmeans;
}

namespace {

Result<std::unique_ptr<DocVectors>> fit_fasttext(const std::vector<std::string_view>& sample,
                                                 const TopicModelOptions& opt) {
  DocEmbedderOptions eo;
  eo.dim = opt.vector_dim;
  eo.epochs = opt.epochs;
  eo.min_count = opt.min_count;
  eo.max_doc_bytes = opt.max_doc_bytes;
  eo.model = opt.word_model;
  eo.pooling = opt.pooling;
  eo.seed = opt.cluster.seed;
  eo.tmp_dir = opt.tmp_dir;
  auto e = DocEmbedder::train(sample, eo);
  if (!e) return e.status();
  return std::unique_ptr<DocVectors>(new DocEmbedder(std::move(e.value())));
}

Result<std::unique_ptr<DocVectors>> fit_lsa(const std::vector<std::string_view>& sample, const TopicModelOptions& opt) {
  LsaOptions lo;
  lo.dim = opt.vector_dim;
  lo.max_doc_bytes = opt.max_doc_bytes;
  lo.seed = opt.cluster.seed;
  auto e = LsaEmbedder::fit(sample, lo);
  if (!e) return e.status();
  return std::unique_ptr<DocVectors>(std::move(e.value()));
}

Result<std::unique_ptr<DocVectors>> fit_doc_vectors(const std::vector<std::string_view>& sample,
                                                    const TopicModelOptions& opt) {
  if (opt.features == TopicFeatures::kFasttext) return fit_fasttext(sample, opt);
  auto lsa = fit_lsa(sample, opt);
  if (!lsa || opt.features == TopicFeatures::kLsa) return lsa;
  auto ft = fit_fasttext(sample, opt);
  if (!ft) return ft.status();
  return std::unique_ptr<DocVectors>(new ConcatVectors(std::move(lsa.value()), std::move(ft.value())));
}

}  // namespace

std::vector<int64_t> evenly_spaced(int64_t n, int64_t m) {
  m = std::max<int64_t>(0, std::min(n, m));
  std::vector<int64_t> pick(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) pick[size_t(i)] = int64_t((__int128)i * n / m);
  return pick;
}

Result<std::unique_ptr<TopicModel>> TopicModel::fit(const std::vector<std::string_view>& docs,
                                                    const TopicModelOptions& opt) {
  const TopicMethod method = resolve_method(opt);
  if (method != TopicMethod::kKmeans && method != TopicMethod::kSeeded)
    return Status::error("topics.method: TopicModel::fit takes \"kmeans\" or \"seeded\" (tfidf: label_topics; "
                         "supervised: fit_supervised)");
  if (docs.empty()) return Status::error("topics: no documents to fit topics on");
  std::vector<std::string_view> sample;
  for (int64_t i : evenly_spaced(int64_t(docs.size()), std::max<int64_t>(opt.cluster.sample_docs, 1)))
    sample.push_back(docs[size_t(i)]);

  auto vectors = fit_doc_vectors(sample, opt);
  if (!vectors) return vectors.status();
  std::unique_ptr<TopicModel> m(new TopicModel());
  m->method_ = method;
  m->max_doc_bytes_ = opt.max_doc_bytes;
  m->embed_ = std::move(vectors.value());
  const int64_t n = int64_t(sample.size()), D = m->embed_->dim();
  std::vector<float> x_ND(static_cast<size_t>(n * D));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < n; ++i) m->embed_->embed(sample[size_t(i)], x_ND.data() + i * D);

  if (method == TopicMethod::kKmeans) {
    const int64_t k = std::min<int64_t>(opt.cluster.n_topics, n);
    KmeansResult km = spherical_kmeans(x_ND.data(), n, D, k, opt.cluster.iterations, opt.cluster.seed);
    m->cent_KD = std::move(km.cent_KD);
    m->names_ = name_clusters(sample, km.assign, k, opt.max_doc_bytes);
    m->empty_topic_ = 0;
  } else {
    auto seeds = keyword_seeds(sample, x_ND.data(), *m->embed_, opt);
    if (!seeds) return seeds.status();
    const int64_t k = int64_t(seeds->names.size());
    KmeansResult km = spherical_kmeans(x_ND.data(), n, D, k, opt.cluster.iterations, opt.cluster.seed, seeds->cent_KD);
    m->cent_KD = std::move(km.cent_KD);
    m->names_ = std::move(seeds->names);
    m->empty_topic_ = opt.other == OtherTopic::kCluster ? int32_t(k - 1) : 0;
  }
  return m;
}

int32_t TopicModel::assign(std::string_view text) const {
  if (method_ == TopicMethod::kSupervised) return predict_supervised(text);
  const int64_t D = embed_->dim();
  std::vector<float> x(static_cast<size_t>(D));
  embed_->embed(text, x.data());
  if (std::all_of(x.begin(), x.end(), [](float v) { return v == 0.0f; })) return empty_topic_;
  return nearest_centroid(x.data(), cent_KD.data(), int64_t(names_.size()), D);
}

Result<TopicLabels> label_topics(const std::vector<std::string_view>& texts, const TopicModelOptions& opt) {
  TopicLabels out;
  const int64_t n = int64_t(texts.size());
  const TopicMethod method = resolve_method(opt);
  if (n == 0) return out;
  if (method == TopicMethod::kTfidf) {
    out.ids = cluster_topics(texts, opt.cluster);
    const int64_t k = std::min<int64_t>(opt.cluster.n_topics, n);
    out.names = name_clusters(texts, out.ids, k, opt.max_doc_bytes);
    return out;
  }
  std::unique_ptr<TopicModel> model;
  if (method == TopicMethod::kSupervised) {
    auto ex = read_labelled_examples(opt.examples);
    if (!ex) return ex.status();
    std::vector<std::pair<std::string_view, std::string>> labelled;
    for (const auto& [t, l] : ex.value()) labelled.emplace_back(t, l);
    auto m = TopicModel::fit_supervised(labelled, opt);
    if (!m) return m.status();
    model = std::move(m.value());
  } else {
    auto m = TopicModel::fit(texts, opt);
    if (!m) return m.status();
    model = std::move(m.value());
  }
  out.ids.assign(size_t(n), 0);
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < n; ++i) out.ids[size_t(i)] = model->assign(texts[size_t(i)]);
  out.names = model->names();
  return out;
}

}  // namespace mt
