// build_labels.cpp — fit_build_labelers: the configured topic and quality
// methods behind BuildLabelers.
#include "data/build_labels.h"

#include "data/data_build.h"
#include "data/labelers.h"

namespace mt {
namespace {

class InterimLabelers final : public BuildLabelers {
 public:
  NgramModel lm;
  std::string topic(std::string_view) const override { return "t00"; }
  DocScores score(std::string_view text, std::span<const int32_t>, uint64_t) const override {
    DocScores s;
    s.perplexity = lm.mean_log2prob(text);
    return s;
  }
  void combine(std::vector<DocScores>& all) const override {
    for (DocScores& s : all) s.combined = s.perplexity;
  }
  nlohmann::json describe() const override { return {{"topic", "cluster"}, {"quality", "perplexity"}}; }
};

}  // namespace

Result<std::unique_ptr<BuildLabelers>> fit_build_labelers(const DataBuildConfig& cfg, const Tokenizer&,
                                                          const std::vector<SampleDoc>&,
                                                          const std::vector<SampleDoc>& quality_sample, bool,
                                                          bool need_quality, const std::string&) {
  auto l = std::make_unique<InterimLabelers>();
  if (need_quality && !cfg.quality_reference.empty()) {
    std::vector<InputSpec> refs;
    for (const std::string& path : cfg.quality_reference) {
      InputSpec in;  // reference text is read leniently: it only shapes the score
      in.path = path;
      in.on_error = OnError::kSkip;
      in.utf8 = Utf8Policy::kRepair;
      refs.push_back(in);
    }
    std::vector<Document> ref;
    IngestStats rs;
    MT_RETURN_IF_ERROR(ingest(refs, cfg.code, ref, rs));
    if (ref.empty()) return Status::errorf("{}: quality.reference holds no text", cfg.source);
    for (const Document& d : ref) l->lm.train(d.text);
  } else if (need_quality) {
    for (const SampleDoc& d : quality_sample) l->lm.train(d.text);
  }
  return std::unique_ptr<BuildLabelers>(std::move(l));
}

}  // namespace mt
