// inference_model.h — a trained model as `generate`, `eval` and `export`
// use it: the parameters (and aux-loss-free router biases) of a committed
// checkpoint, the run config saved in it, and the text codec the run was
// trained with (the dataset's SentencePiece model, or the byte tokenizer of a
// plain-text run).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/tokenizer.h"
#include "model/param_layout.h"
#include "model/weights.h"
#include "train/run_config.h"

namespace mt {

// Text <-> ids with the run's tokenizer. Every prompt and document starts
// after the end-of-document id, as training documents do.
class TextCodec {
 public:
  // SentencePiece model file, or "" for the byte tokenizer.
  static Result<std::unique_ptr<TextCodec>> open(const std::string& sp_model_path);
  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode(const int32_t* ids, int64_t n) const;
  int32_t end_of_document() const;
  bool is_sentencepiece() const { return sp_ != nullptr; }
  const Tokenizer* sentencepiece() const { return sp_.get(); }
  const std::string& source() const { return source_; }  // file, or "byte tokenizer"

 private:
  std::unique_ptr<Tokenizer> sp_;  // null: bytes
  std::string source_;
};

struct InferenceModel {
  std::string ckpt_dir;                 // the step_XXXXXXXX directory read
  int64_t step = 0;
  RunConfig cfg;  // as saved in the checkpoint; a phased run's model.rope_theta and
                  // train.seq_len are those of the phase its last step ran
  ParamLayout layout;
  ModelOffsets offsets;
  std::vector<float> params;            // flat, layout order
  std::vector<float> router_bias;       // per MoE layer E floats; empty without aux_free_bias
  const float* bias() const { return router_bias.empty() ? nullptr : router_bias.data(); }
};

// DIR is a checkpoint (step_XXXXXXXX), a run directory (its newest valid
// checkpoint) or a run's checkpoints/ directory. Errors name the directory
// and the tensor or key that is missing or wrong.
Result<InferenceModel> load_inference_model(const std::string& dir);
// The same checkpoint's directory and run config from its manifest alone
// (no weights read: layout, params and router_bias stay empty).
Result<InferenceModel> load_checkpoint_config(const std::string& dir);

// A path saved in the run config (e.g. data.dataset), as the run saw it:
// absolute, or relative to the working directory, or (runs started from a
// repository root, checkpoints under RUN/checkpoints) to the run
// directory's parent and grandparent. Returns the first that exists, or an
// error listing where it looked.
Result<std::string> resolve_run_path(const InferenceModel& m, const std::string& saved, const std::string& what);

// The run's tokenizer: `override_path` if set; else the run directory's own
// tokenizer.model (an imported model's); else a fine-tuning run's
// data.sft_tokenizer (as open_codec reads it); else <data.dataset>/tokenizer.model
// (the dataset path as saved, tried relative to the working directory and
// to the run directory's parent); the byte tokenizer for runs without a dataset.
Result<std::unique_ptr<TextCodec>> open_run_codec(const InferenceModel& m, const std::string& override_path);

// A tokenizer named the ways commands that make data for a model take it
// (`tasks make --tokenizer`): "bytes" (the byte tokenizer of plain-text
// runs), a SentencePiece model file, a directory holding tokenizer.model (a
// built dataset, an imported run), or a checkpoint or run directory (its
// run's tokenizer, as open_run_codec finds it; only the manifest is read,
// not the weights).
Result<std::unique_ptr<TextCodec>> open_codec(const std::string& where);

}  // namespace mt
