// inference_model.cpp — checkpoint to parameters, and the run's tokenizer.
#include "train/inference_model.h"

#include "train/phase_schedule.h"

#include <filesystem>

#include "ckpt/checkpoint.h"
#include "ckpt/manifest.h"
#include "core/file_io.h"
#include "data/byte_tokenizer.h"

namespace fs = std::filesystem;

namespace mt {

Result<std::unique_ptr<TextCodec>> TextCodec::open(const std::string& sp_model_path) {
  std::unique_ptr<TextCodec> c(new TextCodec());
  if (sp_model_path.empty()) {
    c->source_ = "byte tokenizer";
    return c;
  }
  auto t = Tokenizer::load(sp_model_path);
  if (!t) return t.status();
  c->sp_ = std::move(t.value());
  c->source_ = sp_model_path;
  return c;
}

std::vector<int32_t> TextCodec::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  if (sp_) {
    sp_->encode(text, ids);
  } else {
    for (unsigned char ch : text) ids.push_back(int32_t(ch));
  }
  return ids;
}

std::string TextCodec::decode(const int32_t* ids, int64_t n) const {
  return sp_ ? sp_->decode(ids, n) : ByteTokenizer::decode(ids, n);
}

int32_t TextCodec::end_of_document() const {
  return sp_ ? sp_->special(Special::kEndOfDocument) : ByteTokenizer::kEndOfDocument;
}

namespace {

// A run in phases: the model as its last step trained it (a longer
// context's sequence length and RoPE base), for eval, generate, export and
// fine-tuning.
Status apply_last_phase(InferenceModel& m) {
  if (m.cfg.phases.empty() || m.step == 0) return Status::ok();
  auto sched = PhaseSchedule::make(m.cfg);
  if (!sched) return sched.status();
  const PhaseSpan& ph = sched->phases()[sched->phase_at(std::min(m.step, sched->total_steps()) - 1)];
  m.cfg.model = ph.model;  // its RoPE base and scaling
  m.cfg.train.seq_len = ph.seq_len;
  return Status::ok();
}

}  // namespace

Result<InferenceModel> load_inference_model(const std::string& dir) {
  auto ck_dir = resolve_checkpoint_dir(dir);
  if (!ck_dir) return ck_dir.status();
  auto loaded = read_checkpoint(ck_dir.value());
  if (!loaded) return loaded.status();
  const LoadedCheckpoint& ck = loaded.value();
  auto cfg = parse_run_config(ck.config_toml, ck.dir + "/manifest.json", {});
  if (!cfg) return cfg.status();
  InferenceModel m;
  m.ckpt_dir = ck.dir;
  m.step = ck.step;
  m.cfg = cfg.value();
  MT_RETURN_IF_ERROR(apply_last_phase(m));
  m.offsets = build_layout(m.cfg.model, m.layout);
  m.params.resize(size_t(m.layout.total()));
  for (const auto& e : m.layout.entries())
    MT_RETURN_IF_ERROR(load_into(ck, e.name, e.shape, m.params.data() + e.offset));
  if (m.cfg.model.aux_free_bias) {
    int64_t moe = 0;
    // The trainer's biases: the layers', then the MTP modules' (which generation never reads).
    for (int64_t u = 0; u < m.cfg.model.n_units(); ++u) moe += m.cfg.model.is_moe(u) ? 1 : 0;
    m.router_bias.resize(size_t(moe * m.cfg.model.n_experts));
    MT_RETURN_IF_ERROR(load_into(ck, "router_bias", {int64_t(m.router_bias.size())}, m.router_bias.data()));
  }
  return m;
}

Result<std::unique_ptr<TextCodec>> open_run_codec(const InferenceModel& m, const std::string& override_path) {
  if (!override_path.empty()) return TextCodec::open(override_path);
  // A run directory's own tokenizer (what `moetrain import` writes) comes first.
  std::error_code ec;
  const fs::path own = fs::path(m.ckpt_dir).parent_path().parent_path() / "tokenizer.model";
  if (fs::exists(own, ec)) return TextCodec::open(own.string());
  // A fine-tuning run's tokenizer is its examples' (the model it started from).
  if (const std::string& sft = m.cfg.data.sft_tokenizer; !sft.empty()) {
    if (sft == "bytes") return TextCodec::open("");
    auto where = resolve_run_path(m, sft, "data.sft_tokenizer");
    if (!where) return Status::errorf("{}: pass --tokenizer FILE", where.status().message());
    return open_codec(where.value());
  }
  const std::string& ds = m.cfg.data.dataset;
  if (ds.empty()) {
    if (m.cfg.data.plain.format != "text")
      return Status::errorf("{}: the run read pre-tokenized data (data.format = \"{}\"): pass --tokenizer FILE",
                            m.ckpt_dir, m.cfg.data.plain.format);
    return TextCodec::open("");
  }
  auto dir = resolve_run_path(m, ds, "data.dataset");
  if (!dir) return Status::errorf("{}: pass --tokenizer FILE", dir.status().message());
  const std::string path = (fs::path(dir.value()) / "tokenizer.model").string();
  if (!fs::exists(path, ec)) return Status::errorf("{}: the run's tokenizer is missing: pass --tokenizer FILE", path);
  return TextCodec::open(path);
}

Result<std::unique_ptr<TextCodec>> open_codec(const std::string& where) {
  if (where == "bytes") return TextCodec::open("");
  std::error_code ec;
  if (fs::is_regular_file(where, ec)) return TextCodec::open(where);
  if (fs::is_regular_file(fs::path(where) / "tokenizer.model", ec))
    return TextCodec::open((fs::path(where) / "tokenizer.model").string());
  auto m = load_checkpoint_config(where);
  if (!m)
    return Status::errorf(
        "{} (expected \"bytes\", a SentencePiece model, a directory with tokenizer.model, or a checkpoint or run "
        "directory)",
        m.status().message());
  return open_run_codec(m.value(), "");
}

Result<InferenceModel> load_checkpoint_config(const std::string& where) {
  auto dir = resolve_checkpoint_dir(where);
  if (!dir) return dir.status();
  const std::string manifest_path = dir.value() + "/" + kManifestFileName;
  auto text = read_file(manifest_path, "checkpoint manifest");
  if (!text) return text.status();
  auto manifest = decode_manifest(text.value(), manifest_path);
  if (!manifest) return manifest.status();
  auto cfg = parse_run_config(manifest.value().config_toml, manifest_path, {});
  if (!cfg) return cfg.status();
  InferenceModel m;
  m.ckpt_dir = dir.value();
  m.step = manifest.value().step;
  m.cfg = cfg.value();
  MT_RETURN_IF_ERROR(apply_last_phase(m));
  return m;
}

Result<std::string> resolve_run_path(const InferenceModel& m, const std::string& saved, const std::string& what) {
  std::error_code ec;
  std::vector<fs::path> tried = {fs::path(saved)};
  // step_X -> checkpoints -> RUN -> the directory the run was started from (usually).
  const fs::path run = fs::path(m.ckpt_dir).parent_path().parent_path();
  if (fs::path(saved).is_relative()) {
    tried.push_back(run.parent_path() / saved);
    tried.push_back(run.parent_path().parent_path() / saved);
  }
  std::string list;
  for (const fs::path& p : tried) {
    if (fs::exists(p, ec)) return p.lexically_normal().string();
    list += (list.empty() ? "" : ", ") + p.string();
  }
  return Status::errorf("{}: {} = \"{}\" not found (looked at {})", m.ckpt_dir, what, saved, list);
}

}  // namespace mt
