// model_decoder_test.cpp — incremental decoding with the KV cache against the
// training forward: logits at every position, for dense GQA with local and
// global layers, MoE with shared experts, latent MoE, sigmoid routing with
// the aux-loss-free bias, a gated-delta hybrid, multi-head latent attention
// in the absorbed form over the compressed cache (with and without a query
// latent, local and global layers), and a capacity-factor model (decoded
// dropless).
// Fed whole, token by token and in chunks longer than the window (the ring
// wraps), as a ragged batch; with document masking, sequences packed with
// documents against the masked training forward. Also: cache bytes equal the planner's formula,
// a bf16 cache stays close, and results do not depend on the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/threads.h"
#include "model/decoder.h"
#include "model/transformer.h"
#include "plan/model_stats.h"
#include "support/random.h"

namespace mt {
namespace {

// fp32 logits of two summation orders: |decoder - training| <= kTol * max(1, max |logit|).
constexpr double kTol = 5e-6;

ModelConfig base() {
  ModelConfig c;
  c.vocab_size = 53;
  c.d_model = 32;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.n_kv_heads_local = 1;
  c.layer_pattern = "LLG";
  c.window = 3;
  c.d_ff = 40;
  c.init_std = 0.2;
  return c;
}

struct Case {
  std::string name;
  ModelConfig c;
};

// Multi-head latent attention with Dc = 10 > Dn = 6 (the absorbed query is wider than the head),
// Dr = 4, Dv = 5; Dq = 0 projects queries from the input directly.
ModelConfig mla(ModelConfig c, int64_t Dq) {
  c.attention = AttentionKind::kMla;
  c.n_kv_heads_local = 0;
  c.q_lora_rank = Dq;
  c.kv_lora_rank = 10;
  c.qk_nope_head_dim = 6;
  c.qk_rope_head_dim = 4;
  c.v_head_dim = 5;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  v.push_back({"dense_gqa_local_global", base()});
  {
    Case k{"moe_shared", base()};
    k.c.n_experts = 6; k.c.top_k = 2; k.c.d_expert = 16; k.c.n_shared_experts = 1; k.c.n_dense_layers = 1;
    v.push_back(k);
  }
  {
    Case k{"latent_moe_outnorm_qknorm_untied", base()};
    k.c.n_experts = 4; k.c.top_k = 2; k.c.d_expert = 16; k.c.d_latent = 16; k.c.moe_out_norm = true;
    k.c.n_shared_experts = 2; k.c.qk_norm = true; k.c.tied_embeddings = false;
    v.push_back(k);
  }
  {
    Case k{"sigmoid_bias_no_renorm", base()};
    k.c.n_experts = 5; k.c.top_k = 3; k.c.d_expert = 16; k.c.router_score = RouterScore::kSigmoid;
    k.c.router_renormalize = false; k.c.aux_free_bias = true;
    v.push_back(k);
  }
  {
    // Gated-delta layers between local and global attention: the recurrent state in the cache,
    // advanced row by row, against the chunked training kernel (chunk 4 does not divide the text).
    Case k{"hybrid_gated_delta", base()};
    k.c.n_layers = 4; k.c.layer_pattern = "DLDG"; k.c.delta_heads = 2; k.c.delta_key_dim = 8;
    k.c.delta_value_dim = 12; k.c.delta_chunk = 4; k.c.n_experts = 4; k.c.top_k = 2; k.c.d_expert = 16;
    v.push_back(k);
  }
  {
    // MLA with a query latent, one sliding-window and one global layer, MoE with a shared expert.
    Case k{"mla_query_latent_LG", mla(base(), 12)};
    k.c.n_layers = 4; k.c.layer_pattern = "LG"; k.c.n_experts = 4; k.c.top_k = 2; k.c.d_expert = 16;
    k.c.n_shared_experts = 1; k.c.n_dense_layers = 1;
    v.push_back(k);
  }
  {
    Case k{"mla_no_query_latent_LLG", mla(base(), 0)};
    v.push_back(k);
  }
  {
    // Context extension: the decoder's RoPE tables are the training forward's (yarn: ramp and attention factor).
    Case k{"yarn_rope_scaling", base()};
    k.c.rope_scaling = RopeScalingKind::kYarn;
    k.c.rope_factor = 4.0;
    k.c.rope_original_len = 4;
    k.c.rope_theta = 100.0;
    v.push_back(k);
  }
  {
    Case k{"capacity_factor_decodes_dropless", base()};
    k.c.n_experts = 4; k.c.top_k = 2; k.c.d_expert = 16; k.c.capacity_factor = 0.5;
    v.push_back(k);
  }
  return v;
}

struct Model {
  ModelConfig c;
  std::vector<float> params, bias;
};

Model make(const ModelConfig& c) {
  Model m{c, {}, {}};
  ParamLayout L;
  build_layout(c, L);
  m.params.resize(size_t(L.total()));
  init_params(m.params.data(), L, c, 7);
  int64_t moe = 0;
  for (int64_t l = 0; l < c.n_layers; ++l) moe += c.is_moe(l) ? 1 : 0;
  if (c.aux_free_bias) m.bias = testing::randn(moe * c.n_experts, 0.3f, 11, 1);
  return m;
}

std::vector<int32_t> tokens_of(int64_t n, int64_t V, uint64_t stream) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[size_t(i)] = int32_t(testing::rand_u32(5, stream, uint64_t(i)) % uint32_t(V));
  return t;
}

// Training-forward logits (T, V) of one sequence, capacity off (decoder.h);
// separator >= 0: with document masking.
std::vector<float> reference(const Model& m, const std::vector<int32_t>& toks, int32_t separator = -1) {
  ModelConfig c = m.c;
  c.capacity_factor = 0.0;
  const int64_t T = int64_t(toks.size());
  Transformer t(c, 1, T, MatmulPrecision::kFp32);
  t.set_document_separator(separator);
  std::vector<int32_t> in(toks);
  in.push_back(0);  // target slot, unread
  std::vector<float> out(size_t(T * c.vocab_size));
  t.forward_logits(m.params.data(), in.data(), m.bias.empty() ? nullptr : m.bias.data(), out.data());
  return out;
}

// Feeds sequences in steps of chunk[s] tokens each, interleaved as one ragged
// batch per step; returns every position's logits per sequence.
std::vector<std::vector<float>> decode(const Model& m, const std::vector<std::vector<int32_t>>& seqs,
                                       const std::vector<int64_t>& chunk, KvDtype dtype, int32_t separator = -1) {
  const int64_t V = m.c.vocab_size;
  int64_t max_len = 0;
  for (const auto& s : seqs) max_len = std::max<int64_t>(max_len, int64_t(s.size()));
  DecoderOptions opt{int64_t(seqs.size()), max_len, 64, dtype};
  opt.document_separator = separator;
  Decoder dec(m.c, m.params.data(), m.bias.empty() ? nullptr : m.bias.data(), opt);
  std::vector<std::vector<float>> out(seqs.size());
  std::vector<size_t> done(seqs.size(), 0);
  for (;;) {
    std::vector<int32_t> toks, ids;
    for (size_t s = 0; s < seqs.size(); ++s)
      for (int64_t i = 0; i < chunk[s] && done[s] < seqs[s].size(); ++i) {
        toks.push_back(seqs[s][done[s]++]);
        ids.push_back(int32_t(s));
      }
    if (toks.empty()) break;
    dec.forward(toks.data(), ids.data(), int64_t(toks.size()));
    for (size_t r = 0; r < toks.size(); ++r)
      out[size_t(ids[r])].insert(out[size_t(ids[r])].end(), dec.logits() + r * V, dec.logits() + (r + 1) * V);
  }
  return out;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double scale = 1.0, d = 0.0;
  for (float x : b) scale = std::max(scale, double(std::fabs(x)));
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d / scale;
}

TEST(Decoder, IncrementalLogitsEqualTrainingForward) {
  for (const Case& k : cases()) {
    SCOPED_TRACE(k.name);
    const Model m = make(k.c);
    const std::vector<std::vector<int32_t>> seqs = {tokens_of(13, k.c.vocab_size, 1),
                                                    tokens_of(9, k.c.vocab_size, 2),
                                                    tokens_of(11, k.c.vocab_size, 3)};
    std::vector<std::vector<float>> ref;
    for (const auto& s : seqs) ref.push_back(reference(m, s));
    // Whole prompts in one call; token by token; chunks of 5 (> window 3) and 2.
    for (const std::vector<int64_t>& chunk : {std::vector<int64_t>{64, 64, 64}, std::vector<int64_t>{1, 1, 1},
                                              std::vector<int64_t>{5, 2, 4}}) {
      const auto got = decode(m, seqs, chunk, KvDtype::kF32);
      for (size_t s = 0; s < seqs.size(); ++s) EXPECT_LE(max_rel_diff(got[s], ref[s]), kTol) << "seq " << s;
    }
    // A bf16 cache rounds K and V: close, not equal.
    const auto b16 = decode(m, seqs, {4, 4, 4}, KvDtype::kBf16);
    for (size_t s = 0; s < seqs.size(); ++s) EXPECT_LE(max_rel_diff(b16[s], ref[s]), 2e-2) << "seq " << s;
  }
}

TEST(Decoder, DocumentMaskingEqualsTheMaskedTrainingForward) {
  // Sequences packed with documents: separators inside a call, at a call's
  // last row (so the next call starts a document) and twice in a row (a
  // document of one token). A leading separator is the prompt's BOS, seen by
  // the first document (decoder.h): until the first document after it, that
  // sequence reads as the unmasked forward does.
  const int32_t sep = 0;
  for (const Case& k : cases()) {
    if (k.c.capacity_factor > 0.0) continue;
    SCOPED_TRACE(k.name);
    const Model m = make(k.c);
    std::vector<std::vector<int32_t>> seqs = {tokens_of(14, k.c.vocab_size, 6), tokens_of(10, k.c.vocab_size, 7),
                                              tokens_of(12, k.c.vocab_size, 8)};
    for (auto& s : seqs)
      for (int32_t& t : s) t = t == sep ? 1 : t;  // separators only where placed below
    for (size_t i : {4, 5, 10}) seqs[0][i] = sep;
    for (size_t i : {0, 1, 7}) seqs[1][i] = sep;  // the BOS; then a document of one separator from position 1
    for (size_t i : {3, 9}) seqs[2][i] = sep;
    const int64_t V = k.c.vocab_size;
    std::vector<std::vector<float>> ref;
    for (const auto& s : seqs) ref.push_back(reference(m, s, sep));
    const std::vector<float> bos_seen = reference(m, seqs[1]);
    std::copy(bos_seen.begin(), bos_seen.begin() + 2 * V, ref[1].begin());  // positions 0 and 1: one document
    for (const std::vector<int64_t>& chunk :
         {std::vector<int64_t>{64, 64, 64}, std::vector<int64_t>{1, 1, 1}, std::vector<int64_t>{5, 2, 4}}) {
      const auto got = decode(m, seqs, chunk, KvDtype::kF32, sep);
      for (size_t s = 0; s < seqs.size(); ++s) EXPECT_LE(max_rel_diff(got[s], ref[s]), kTol) << "seq " << s;
    }
    // The guard: decoded without masking, the same text reads differently past a document's start.
    const auto unmasked = decode(m, seqs, {64, 64, 64}, KvDtype::kF32);
    EXPECT_GT(max_rel_diff(unmasked[2], ref[2]), 1e-3);
  }
}

TEST(Decoder, CapacityModelDiffersFromTrainingWithDrops) {
  // Guard for the case above: with capacity 0.5 the training forward drops
  // tokens, so decoding (dropless) must differ from it somewhere.
  const Case k = cases().back();
  ASSERT_GT(k.c.capacity_factor, 0.0);
  const Model m = make(k.c);
  const auto toks = tokens_of(13, k.c.vocab_size, 1);
  Transformer t(k.c, 1, 13, MatmulPrecision::kFp32);
  std::vector<int32_t> in(toks);
  in.push_back(0);
  std::vector<float> with_drops(size_t(13 * k.c.vocab_size));
  t.forward_logits(m.params.data(), in.data(), nullptr, with_drops.data());
  EXPECT_GT(t.forward(m.params.data(), in.data(), nullptr).dropped, 0);
  const auto got = decode(m, {toks}, {64}, KvDtype::kF32);
  EXPECT_GT(max_rel_diff(got[0], with_drops), 1e-3);
}

TEST(Decoder, CacheBytesEqualPlannerFormula) {
  ModelConfig c = base();
  c.n_layers = 5;
  c.layer_pattern = "LLGLG";
  c.window = 16;
  // MLA caches Dc + Dr = 14 values per token and layer (model/kv_cache.h kv_cache_elems), GQA 2 Hkv Dh.
  for (const ModelConfig& m : {c, mla(c, 12)}) {
    SCOPED_TRACE(m.mla() ? "mla" : "gqa");
    for (int64_t S : {8, 16, 100}) {
      const auto st = plan::model_stats(m, S);
      for (int64_t B : {1, 3}) {
        KvCache bf(m, B, S, KvDtype::kBf16);
        EXPECT_EQ(double(bf.bytes()), double(B) * st.kv_bytes_per_sequence) << "S=" << S << " B=" << B;
        KvCache f32(m, B, S, KvDtype::kF32);
        EXPECT_EQ(double(f32.bytes()), 2.0 * double(B) * st.kv_bytes_per_sequence);
      }
    }
    // Local layers hold a ring of `window` slots, global layers every position.
    KvCache k(m, 1, 100, KvDtype::kF32);
    EXPECT_EQ(k.capacity(0), 16);
    EXPECT_EQ(k.capacity(2), 100);
  }
  // The MLA figure by hand, bf16, one sequence of 100: 3 local layers x 16 slots + 2 global x 100, 14 values each.
  KvCache k(mla(c, 0), 1, 100, KvDtype::kBf16);
  EXPECT_EQ(k.bytes(), (3 * 16 + 2 * 100) * 14 * 2);
}

TEST(Decoder, ThreadCountInvariant) {
  for (const Case& k : cases()) {
    if (k.name != "latent_moe_outnorm_qknorm_untied" && k.name != "mla_query_latent_LG") continue;
    SCOPED_TRACE(k.name);
    const Model m = make(k.c);
    const std::vector<std::vector<int32_t>> seqs = {tokens_of(10, m.c.vocab_size, 4),
                                                    tokens_of(7, m.c.vocab_size, 5)};
    set_num_threads(1);
    const auto one = decode(m, seqs, {3, 2}, KvDtype::kF32);
    set_num_threads(2);
    const auto two = decode(m, seqs, {3, 2}, KvDtype::kF32);
    for (size_t s = 0; s < seqs.size(); ++s) EXPECT_EQ(one[s], two[s]);
  }
}

}  // namespace
}  // namespace mt
