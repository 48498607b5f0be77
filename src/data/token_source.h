// token_source.h — the interface the trainer reads sequences through. The
// sequence at global index i is a pure function of (source, i): it does not
// depend on world size, threads or interruptions, so resuming needs only the
// step number. The bucketed-mixture sampler (data pipeline) implements the
// same interface.
#pragma once
#include <cstdint>
#include <string>

namespace mt {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // Writes seq_len + 1 token ids for training sequence `index` into out.
  virtual void sequence(int64_t index, int64_t seq_len, int32_t* out) const = 0;
  // Evaluation (held-out) sequence `index`; false if there is no eval split.
  virtual bool eval_sequence(int64_t index, int64_t seq_len, int32_t* out) const { return false; }
  virtual int64_t vocab_size() const = 0;
  virtual std::string describe() const = 0;
};

}  // namespace mt
