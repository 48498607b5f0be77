// gguf_model.h — a checkpoint as a GGUF file for llama.cpp, on an
// architecture llama.cpp already runs: grouped-query attention MoE models as
// "glm4moe" (per-head QK-norm optional, softmax or sigmoid routing with the
// selection bias and optional renormalisation, shared experts, leading dense
// layers, NeoX RoPE = moetrain's rotate-half), multi-head latent attention
// models as "deepseek2" (its RoPE rotates interleaved pairs, so the RoPE rows
// of the query and key projections are permuted: pair i of moetrain,
// (x[i], x[i + Dr/2]), becomes (x[2i], x[2i + 1])). Why not qwen2moe:
// llama.cpp's qwen2moe never renormalises the top-k gates and always gates
// its shared expert with sigmoid(w.x), which no weights make a constant.
// What the chosen architecture cannot run is refused, naming the model.* key.
// Legend: D model, H heads, Dh head dim, F expert hidden, S shared experts,
// E experts, V vocab; MLA: Dq, Dc, Dn, Dr, Dv (model/config.h).
#pragma once
#include <string>

#include "core/status.h"
#include "export/gguf_file.h"
#include "model/config.h"

namespace mt {

class TextCodec;
struct InferenceModel;

enum class GgufArch { kGlm4Moe, kDeepseek2 };
const char* gguf_arch_name(GgufArch a);

// The llama.cpp architecture `c` maps onto, or the feature it cannot run,
// e.g. "model.layer_pattern = \"LG\": llama.cpp's glm4moe has no
// sliding-window (L) layers".
Result<GgufArch> gguf_arch_for(const ModelConfig& c);

// The whole file: general.*, the architecture's hyperparameters, the
// tokenizer (export/gguf_tokenizer.h) and the tensors stored as `type`. F16,
// BF16 and Q8_0 apply to matrices (Q8_0 to those whose rows are a multiple
// of 32 long, the others stay F32, as llama.cpp's own quantizer does); norms,
// the router and the selection bias stay F32.
Result<GgufFile> to_gguf(const InferenceModel& m, const TextCodec& codec, GgmlType type);

}  // namespace mt
