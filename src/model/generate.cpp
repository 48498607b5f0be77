// generate.cpp — the prefill/decode loop around Decoder::forward.
#include "model/generate.h"

#include <algorithm>

#include "core/check.h"
#include "core/timer.h"

namespace mt {

GenerateResult generate(Decoder& dec, const std::vector<std::vector<int32_t>>& prompts, const GenerateOptions& o) {
  const int64_t P = int64_t(prompts.size()), V = dec.config().vocab_size, R = dec.options().max_rows;
  MT_CHECK(P <= dec.options().batch, "generate: {} prompts, decoder batch {}", P, dec.options().batch);
  MT_CHECK(o.streams.empty() || int64_t(o.streams.size()) == P, "generate: {} streams for {} prompts", o.streams.size(),
           P);
  GenerateResult res;
  res.tokens.resize(size_t(P));
  std::vector<int32_t> next(size_t(P), -1);  // sampled token to feed next, per prompt
  std::vector<std::pair<float, int32_t>> scratch;
  auto pick = [&](int64_t p, const float* logits) {
    const int64_t pos = dec.cache().length(p);  // position of the token being chosen
    const uint64_t stream = o.streams.empty() ? uint64_t(p) : o.streams[size_t(p)];
    next[size_t(p)] = sample_token(logits, V, o.sampling, stream, uint64_t(pos), scratch);
  };
  for (int64_t p = 0; p < P; ++p) {
    MT_CHECK(!prompts[size_t(p)].empty(), "generate: prompt {} is empty", p);
    MT_CHECK(int64_t(prompts[size_t(p)].size()) + o.max_new_tokens <= dec.options().max_len,
             "generate: prompt {} of {} tokens + {} new exceeds max_len {}", p, prompts[size_t(p)].size(),
             o.max_new_tokens, dec.options().max_len);
    dec.cache().reset(p);
  }
  // Prefill: prompts packed into calls of at most R rows.
  double t0 = now_seconds();
  std::vector<int32_t> toks, ids;
  int64_t p = 0, i = 0;
  while (p < P) {
    toks.clear();
    ids.clear();
    while (p < P && int64_t(toks.size()) < R) {
      const auto& pr = prompts[size_t(p)];
      const int64_t take = std::min<int64_t>(R - int64_t(toks.size()), int64_t(pr.size()) - i);
      for (int64_t j = 0; j < take; ++j) {
        toks.push_back(pr[size_t(i + j)]);
        ids.push_back(int32_t(p));
      }
      i += take;
      if (i == int64_t(pr.size())) {
        ++p;
        i = 0;
      }
    }
    dec.forward(toks.data(), ids.data(), int64_t(toks.size()));
    res.prefill_tokens += int64_t(toks.size());
    for (size_t r = 0; r < toks.size(); ++r) {
      const int64_t q = ids[r];
      const bool last_of_prompt = (r + 1 == toks.size() || ids[r + 1] != q) &&
                                  dec.cache().length(q) == int64_t(prompts[size_t(q)].size());
      if (last_of_prompt) pick(q, dec.logits() + int64_t(r) * V);
    }
  }
  res.prefill_seconds = now_seconds() - t0;
  // Decode: every unfinished sequence advances one token per call.
  t0 = now_seconds();
  std::vector<char> done(size_t(P), o.max_new_tokens == 0);
  int64_t generated = 0;
  for (;;) {
    toks.clear();
    ids.clear();
    for (int64_t q = 0; q < P; ++q) {
      if (done[size_t(q)]) continue;
      res.tokens[size_t(q)].push_back(next[size_t(q)]);
      ++generated;
      if (next[size_t(q)] == o.stop_token || int64_t(res.tokens[size_t(q)].size()) == o.max_new_tokens) {
        done[size_t(q)] = 1;
        continue;
      }
      toks.push_back(next[size_t(q)]);
      ids.push_back(int32_t(q));
    }
    if (toks.empty()) break;
    for (size_t r0 = 0; r0 < toks.size(); r0 += size_t(R)) {
      const int64_t n = std::min<int64_t>(R, int64_t(toks.size() - r0));
      dec.forward(toks.data() + r0, ids.data() + r0, n);
      res.decode_tokens += n;
      for (int64_t r = 0; r < n; ++r) pick(ids[r0 + size_t(r)], dec.logits() + r * V);
    }
    if (o.progress) o.progress(generated, P * o.max_new_tokens);
  }
  res.decode_seconds = now_seconds() - t0;
  return res;
}

}  // namespace mt
