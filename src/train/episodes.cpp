// episodes.cpp — token-by-token decoding with environment turns (see episodes.h).
#include "train/episodes.h"

#include <algorithm>

#include "core/check.h"
#include "core/token_flags.h"

namespace mt {

EpisodeVerdict judge_episode(const GenItem& item, std::string_view text) {
  EpisodeVerdict j;
  j.answer = verify(check_of(item), item.answer, std::string(final_answer(text)));
  j.calls = count_calls(text);
  auto env = make_environment(item.env, item.state, item.goal);
  MT_CHECK(env.is_ok(), "item {}: {}", item.id, env.status().message());  // validated when read
  for (size_t at = text.find(kToolOpen); at != std::string::npos; at = text.find(kToolOpen, at + 1)) {
    const size_t begin = at + kToolOpen.size(), end = text.find(kToolClose, begin);
    if (end == std::string::npos) break;
    (*env)->call(text.substr(begin, end - begin));
  }
  j.correct = j.answer.correct && (*env)->goal_met();
  return j;
}

std::vector<Episode> run_episodes(Decoder& dec, const TextCodec& codec,
                                  const std::vector<const std::vector<int32_t>*>& contexts,
                                  const std::vector<Environment*>& envs, const std::vector<uint64_t>& streams,
                                  const EpisodeOptions& o) {
  const int64_t P = int64_t(contexts.size()), V = dec.config().vocab_size, R = dec.options().max_rows;
  MT_CHECK(P <= dec.options().batch && int64_t(envs.size()) == P && int64_t(streams.size()) == P,
           "run_episodes: {} contexts, {} environments, {} streams, decoder batch {}", P, envs.size(), streams.size(),
           dec.options().batch);
  std::vector<Episode> out(static_cast<size_t>(P));
  std::vector<std::vector<int32_t>> feed(static_cast<size_t>(P));  // rows to feed each sequence next
  std::vector<char> done(static_cast<size_t>(P), o.max_new_tokens == 0);
  std::vector<std::pair<float, int32_t>> scratch;
  for (int64_t p = 0; p < P; ++p) {
    MT_CHECK(!contexts[size_t(p)]->empty(), "run_episodes: context {} is empty", p);
    MT_CHECK(int64_t(contexts[size_t(p)]->size()) + o.max_new_tokens <= dec.options().max_len,
             "run_episodes: context {} of {} tokens + {} new exceeds max_len {}", p, contexts[size_t(p)]->size(),
             o.max_new_tokens, dec.options().max_len);
    dec.cache().reset(p);
    feed[size_t(p)] = *contexts[size_t(p)];
  }
  std::vector<int32_t> toks, ids, plain;
  for (;;) {
    // One decoder pass over every sequence's pending rows (a context, or a
    // sampled token and any environment answer after it), in chunks of R rows;
    // each sequence then samples from the logits of its last row.
    toks.clear();
    ids.clear();
    for (int64_t p = 0; p < P; ++p)
      if (!done[size_t(p)])
        for (int32_t t : feed[size_t(p)]) {
          toks.push_back(token_id(t));
          ids.push_back(int32_t(p));
        }
    if (toks.empty()) break;
    for (size_t r0 = 0; r0 < toks.size(); r0 += size_t(R)) {
      const int64_t n = std::min<int64_t>(R, int64_t(toks.size() - r0));
      dec.forward(toks.data() + r0, ids.data() + r0, n);
      for (int64_t r = 0; r < n; ++r) {
        const size_t at = r0 + size_t(r);
        if (at + 1 < toks.size() && ids[at + 1] == ids[at]) continue;  // not the sequence's last row
        const int64_t p = ids[at];
        const int64_t pos = dec.cache().length(p);
        const int32_t next =
            sample_token(dec.logits() + r * V, V, o.sampling, streams[size_t(p)], uint64_t(pos), scratch);
        Episode& e = out[size_t(p)];
        std::vector<int32_t>& f = feed[size_t(p)];
        f.assign(1, next);
        e.tokens.push_back(next);
        if (next == o.stop_token || int64_t(e.tokens.size()) >= o.max_new_tokens) {
          done[size_t(p)] = 1;
          continue;
        }
        if (!envs[size_t(p)]) continue;
        plain.clear();
        for (int32_t t : e.tokens) plain.push_back(token_id(t));
        const std::string text = codec.decode(plain.data(), int64_t(plain.size()));
        const auto call = pending_call(text);
        if (!call) continue;
        if (e.calls == o.max_calls) {  // one call too many: the episode ends without an answer
          done[size_t(p)] = 1;
          continue;
        }
        ++e.calls;
        const std::vector<int32_t> answer =
            codec.encode(std::string(kResultOpen) + envs[size_t(p)]->call(*call) + std::string(kResultClose));
        for (int32_t t : answer) {
          if (int64_t(e.tokens.size()) >= o.max_new_tokens) break;
          e.tokens.push_back(without_loss(t));
          f.push_back(without_loss(t));
        }
        if (int64_t(e.tokens.size()) >= o.max_new_tokens) done[size_t(p)] = 1;
      }
    }
  }
  return out;
}

}  // namespace mt
