// token_ngram.h — a token-level n-gram language model for quality scoring, in
// process and with bounded memory. CCNet (Wenzek et al. 2019) scores documents
// by the perplexity of a KenLM 5-gram over SentencePiece tokens; this is the
// hashed-count analogue over the pipeline's own token ids. The score is the
// mean natural-log probability per token (higher = more like the training text).
// Legend: V vocabulary, N order (context of N-1 tokens), S = 2^log2_slots.
//
// Smoothing: interpolated Witten-Bell down to a uniform distribution over V,
//   P_n(w | h) = (min(c(h,w), c(h)) + T'(h) * P_{n-1}(w | h')) / (c(h) + T'(h)),
//   T'(h) = max(T(h), 1),   P_0(w) = 1 / V,
// where c(h) is the context count and T(h) the number of distinct followers
// seen. Witten-Bell rather than Kneser-Ney because it needs only c(h) and T(h),
// both robust to hashing, while (modified) Kneser-Ney needs count-of-counts per
// order to set its discounts and continuation counts for every lower order,
// which hash collisions distort; Chen & Goodman (1998) measure the two a few
// percent apart in perplexity, and a quality score only needs the ranking.
//
// Why no probability can be 0 (the defect of the byte model in labelers.cpp):
// with hashed counts a seen context can have T(h) = 0 (its new pairs landed in
// slots already taken) and c(h,w) can exceed c(h) (collisions add). Clamping
// the pair count and flooring T at 1 keep every step a convex mix with weight
// >= 1 / (c(h) + 1) on a strictly positive lower order, so
//   P_N(w | h) >= (1/V) * prod_n 1 / (c_n + 1) > 0   for every w and h.
//
// Memory: two tables of S slots, 8 bytes (context count, types) + 4 bytes
// (pair count): 12 * 2^log2_slots bytes per model (48 MiB at the default 22),
// whatever the amount of training text. Counts saturate at 2^32 - 1.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace mt {

struct NgramOptions {
  int64_t order = 3;                 // N, >= 1: tokens of context + 1
  int64_t log2_slots = 22;           // S = 2^log2_slots slots per table, in [0, 32]
  int64_t vocab_size = 0;            // V of the uniform floor; 0 = largest id trained on + 1
  int64_t max_doc_tokens = 1 << 16;  // only a document's first tokens train or score
};

class TokenNgramLm {
 public:
  explicit TokenNgramLm(const NgramOptions& opt);
  // Adds the n-grams of one document (contexts do not cross documents).
  void train(std::span<const int32_t> ids);
  // Mean natural-log probability per token: finite for any ids (negative ids
  // are scored as unseen); NaN for an empty document. Thread-safe (const).
  double mean_logprob(std::span<const int32_t> ids) const;

  int64_t memory_bytes() const;
  // Context slots with a count but no recorded follower type: the state in
  // which the old byte model gave probability 0. For the regression test.
  int64_t zero_type_contexts() const;

 private:
  struct Context {
    uint32_t count = 0;  // c(h): occurrences of the context
    uint32_t types = 0;  // T(h): distinct followers (first sightings of a pair slot)
  };
  int64_t order_;
  uint64_t mask_;
  int64_t max_doc_tokens_;
  int64_t vocab_option_;
  int64_t max_id_ = -1;        // largest id trained on
  std::vector<Context> ctx_;   // (S)
  std::vector<uint32_t> pair_; // (S): c(h, w)
};

// One interpolation step (exposed for the regression test): the probability
// from counts of a context and the lower-order probability `lower` (> 0).
// Strictly positive and finite for any counts, including collision artefacts
// (pair > count, types == 0).
double witten_bell_step(uint32_t pair, uint32_t count, uint32_t types, double lower);

}  // namespace mt
