// build_labels.cpp — fit_build_labelers: the configured topic model
// (data/topics, docs/data-topics.md) and quality model (data/quality,
// docs/data-quality.md) behind BuildLabelers.
#include "data/build_labels.h"

#include "core/hash.h"
#include "data/data_build.h"
#include "data/ingest.h"

namespace mt {
namespace {

// Reference text read for the quality model: enough to fit it, bounded.
constexpr int64_t kReferenceCap = 32 << 20;

const char* topic_method_name(TopicMethod m) {
  switch (m) {
    case TopicMethod::kKmeans: return "kmeans";
    case TopicMethod::kTfidf: return "tfidf";
    case TopicMethod::kSupervised: return "supervised";
    case TopicMethod::kSeeded: return "seeded";
    default: return "auto";
  }
}

class ConfiguredLabelers final : public BuildLabelers {
 public:
  std::unique_ptr<TopicModel> topics;
  std::string single_topic;  // n_topics = 1, or a sample of one document: nothing to cluster
  std::unique_ptr<QualityModel> quality;
  int64_t reference_docs = 0, sample_docs = 0, topic_sample_docs = 0;

  // Names are file-safe for clustered topics; supervised ones are the user's
  // labels and are made so here (as metadata labels are at ingest).
  std::string topic(std::string_view text) const override {
    if (!topics) return single_topic;
    return sanitize_label(topics->names()[size_t(topics->assign(text))]);
  }

  DocScores score(std::string_view text, std::span<const int32_t> ids, uint64_t hash) const override {
    const QualityScore q = quality->score({text, ids, hash});
    DocScores s;
    s.perplexity = q.perplexity;
    s.classifier = q.classifier;
    return s;
  }

  void combine(std::vector<DocScores>& all) const override {
    std::vector<QualityScore> q(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      q[i].perplexity = all[i].perplexity;
      q[i].classifier = all[i].classifier;
    }
    combine_scores(q, quality->method());
    for (size_t i = 0; i < all.size(); ++i) all[i].combined = q[i].combined;
  }

  nlohmann::json describe() const override {
    nlohmann::json j = nlohmann::json::object();
    if (!single_topic.empty()) j["topic"] = "single";
    if (topics) {
      j["topic"] = topic_method_name(topics->method());
      j["topic_names"] = topics->names();
      j["topic_sample_documents"] = topic_sample_docs;
    }
    if (quality) {
      j["quality"] = quality_method_name(quality->method());
      j["quality_cross_fitted"] = quality->cross_fitted();
      j["quality_reference_documents"] = reference_docs;
      j["quality_sample_documents"] = sample_docs;
    }
    return j;
  }
};

Result<std::unique_ptr<TopicModel>> fit_topics(const DataBuildConfig& cfg, const std::vector<SampleDoc>& sample,
                                               const std::string& scratch) {
  TopicModelOptions opt = cfg.topic_config.model;
  opt.cluster = cfg.topics;
  if (opt.tmp_dir.empty()) opt.tmp_dir = scratch;
  const TopicMethod m = resolve_method(opt);
  if (m == TopicMethod::kTfidf)
    return Status::errorf("{}: topics.method = \"tfidf\" labels a whole corpus at once and cannot label a streamed "
                          "build; use \"kmeans\" (its successor, docs/data-topics.md)",
                          cfg.source);
  if (m == TopicMethod::kSupervised) {
    auto ex = read_labelled_examples(opt.examples);
    if (!ex) return ex.status();
    std::vector<std::pair<std::string_view, std::string>> labelled;
    for (const auto& [text, topic] : ex.value()) labelled.emplace_back(text, topic);
    return TopicModel::fit_supervised(labelled, opt);
  }
  std::vector<std::string_view> texts;
  for (const SampleDoc& d : sample) texts.push_back(d.text);
  return TopicModel::fit(texts, opt);
}

// The reference set for the quality model, read leniently (it only shapes
// the score) and capped.
Result<std::vector<std::string>> read_reference(const DataBuildConfig& cfg) {
  std::vector<InputSpec> refs;
  for (const std::string& path : cfg.quality_reference) {
    InputSpec in;
    in.path = path;
    in.on_error = OnError::kSkip;
    in.utf8 = Utf8Policy::kRepair;
    refs.push_back(in);
  }
  std::vector<Document> docs;
  IngestStats st;
  MT_RETURN_IF_ERROR(ingest(refs, cfg.code, docs, st, cfg.limits));
  if (docs.empty()) return Status::errorf("{}: quality.reference holds no text", cfg.source);
  std::vector<std::string> out;
  int64_t used = 0;
  for (Document& d : docs) {
    if (used >= kReferenceCap) break;
    used += int64_t(d.text.size());
    out.push_back(std::move(d.text));
  }
  return out;
}

Result<std::unique_ptr<QualityModel>> fit_quality(const DataBuildConfig& cfg, const Tokenizer& tok,
                                                  const std::vector<SampleDoc>& sample, const std::string& scratch,
                                                  int64_t& reference_docs) {
  QualityModelOptions opt = cfg.quality_model;
  opt.vocab_size = tok.vocab_size();
  opt.seed = cfg.seed;
  opt.classifier.seed = cfg.seed;
  opt.classifier.tmp_dir = scratch;
  std::vector<std::string> ref_text;
  if (!cfg.quality_reference.empty()) {
    auto r = read_reference(cfg);
    if (!r) return r.status();
    ref_text = std::move(r.value());
  }
  reference_docs = int64_t(ref_text.size());
  // Token ids of both sets (the n-gram model reads tokens).
  std::vector<std::vector<int32_t>> ref_ids(ref_text.size()), sample_ids(sample.size());
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t i = 0; i < int64_t(ref_text.size()); ++i) tok.encode(ref_text[size_t(i)], ref_ids[size_t(i)]);
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t i = 0; i < int64_t(sample.size()); ++i) tok.encode(sample[size_t(i)].text, sample_ids[size_t(i)]);
  std::vector<QualityExample> ref, corpus;
  for (size_t i = 0; i < ref_text.size(); ++i)
    ref.push_back({ref_text[i], ref_ids[i], xxh64(ref_text[i].data(), ref_text[i].size(), cfg.seed)});
  for (size_t i = 0; i < sample.size(); ++i) corpus.push_back({sample[i].text, sample_ids[i], sample[i].hash});
  auto m = QualityModel::fit(ref, corpus, opt);
  if (!m) return Status::errorf("{}: quality: {}", cfg.source, m.status().message());
  return m;
}

}  // namespace

Result<std::unique_ptr<BuildLabelers>> fit_build_labelers(const DataBuildConfig& cfg, const Tokenizer& tok,
                                                          const std::vector<SampleDoc>& topic_sample,
                                                          const std::vector<SampleDoc>& quality_sample,
                                                          bool need_topics, bool need_quality,
                                                          const std::string& scratch_dir) {
  auto l = std::make_unique<ConfiguredLabelers>();
  const TopicMethod tm = resolve_method(cfg.topic_config.model);
  if (need_topics && (tm == TopicMethod::kKmeans || tm == TopicMethod::kAuto) &&
      (cfg.topics.n_topics == 1 || topic_sample.size() < 2)) {
    l->single_topic = "t00";
  } else if (need_topics) {
    auto t = fit_topics(cfg, topic_sample, scratch_dir);
    if (!t) return t.status();
    l->topics = std::move(t.value());
    l->topic_sample_docs = int64_t(topic_sample.size());
  }
  if (need_quality) {
    auto q = fit_quality(cfg, tok, quality_sample, scratch_dir, l->reference_docs);
    if (!q) return q.status();
    l->quality = std::move(q.value());
    l->sample_docs = int64_t(quality_sample.size());
  }
  return std::unique_ptr<BuildLabelers>(std::move(l));
}

}  // namespace mt
