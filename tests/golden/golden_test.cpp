// golden_test.cpp — the C++ model against an independent float64 PyTorch
// reference (tools/ref/moe_reference.py), tensor by tensor: the fixtures in
// tests/golden/data hold a tiny model's parameters, a batch of tokens, the
// reference losses, every parameter gradient and the capacity drops. We load
// the parameters into the flat buffer, run one fp32 forward_backward and
// compare. moe_d adds two multi-token-prediction modules (DeepSeek-V3 2.2);
// moe_e_position drops by arrival (model.drop_policy = "position");
// moe_f_docs and moe_mla_f_docs pack rows with documents (document masking,
// Transformer::set_document_separator).
// Regenerate the fixtures as described in tools/ref/README.md.
// Legend: B batch, T time, N = B*T tokens, E experts, K top-k.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "support/safetensors_reader.h"

namespace mt {
namespace {

using testing::SafetensorsFile;

// fp32 C++ vs float64 reference: max |cpp - ref| over a tensor, relative to
// the reference tensor's max |ref|.
constexpr double kGradRelTol = 1e-4;
constexpr double kLossRelTol = 1e-5;

// Fixture tensors that are not parameters or gradients.
const std::set<std::string> kExtraTensors = {
    "tokens", "loss", "aux_loss", "z_loss", "total_loss", "dropped", "expert_load", "mtp_loss", "dropped_per_sequence"};

std::string fixture_path(const std::string& name) {
  return std::string(MT_SOURCE_DIR) + "/tests/golden/data/" + name + ".safetensors";
}

// Builds a ModelConfig from the reference's config JSON; unknown keys are
// errors so a new reference switch cannot be silently ignored.
// document_separator is not a model key: the trainer sets it from the data (train.document_mask).
bool config_from_json(const nlohmann::json& j, ModelConfig& c, int32_t& separator, std::string& error) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = *it;
    if (k == "vocab_size") c.vocab_size = v.get<int64_t>();
    else if (k == "d_model") c.d_model = v.get<int64_t>();
    else if (k == "n_layers") c.n_layers = v.get<int64_t>();
    else if (k == "n_heads") c.n_heads = v.get<int64_t>();
    else if (k == "n_kv_heads") c.n_kv_heads = v.get<int64_t>();
    else if (k == "n_kv_heads_local") c.n_kv_heads_local = v.get<int64_t>();
    else if (k == "layer_pattern") c.layer_pattern = v.get<std::string>();
    else if (k == "window") c.window = v.get<int64_t>();
    else if (k == "tied_embeddings") c.tied_embeddings = v.get<bool>();
    else if (k == "qk_norm") c.qk_norm = v.get<bool>();
    else if (k == "rope_theta") c.rope_theta = v.get<double>();
    else if (k == "norm_eps") c.norm_eps = v.get<double>();
    else if (k == "init_std") c.init_std = v.get<double>();
    else if (k == "d_ff") c.d_ff = v.get<int64_t>();
    else if (k == "n_experts") c.n_experts = v.get<int64_t>();
    else if (k == "top_k") c.top_k = v.get<int64_t>();
    else if (k == "d_expert") c.d_expert = v.get<int64_t>();
    else if (k == "n_shared_experts") c.n_shared_experts = v.get<int64_t>();
    else if (k == "n_dense_layers") c.n_dense_layers = v.get<int64_t>();
    else if (k == "router_score") {
      const std::string s = v.get<std::string>();
      if (s != "softmax" && s != "sigmoid") {
        error = "router_score " + s;
        return false;
      }
      c.router_score = s == "softmax" ? RouterScore::kSoftmax : RouterScore::kSigmoid;
    }
    else if (k == "router_renormalize") c.router_renormalize = v.get<bool>();
    else if (k == "capacity_factor") c.capacity_factor = v.get<double>();
    else if (k == "routing_group") c.routing_group = v.get<int64_t>();
    else if (k == "drop_policy") {
      const std::string s = v.get<std::string>();
      if (s != "probs" && s != "position") {
        error = "drop_policy " + s;
        return false;
      }
      c.drop_policy = s == "position" ? DropPolicy::kPosition : DropPolicy::kProbs;
    }
    else if (k == "aux_loss_coef") c.aux_loss_coef = v.get<double>();
    else if (k == "z_loss_coef") c.z_loss_coef = v.get<double>();
    else if (k == "d_latent") c.d_latent = v.get<int64_t>();
    else if (k == "delta_heads") c.delta_heads = v.get<int64_t>();
    else if (k == "delta_key_dim") c.delta_key_dim = v.get<int64_t>();
    else if (k == "delta_value_dim") c.delta_value_dim = v.get<int64_t>();
    else if (k == "delta_chunk") c.delta_chunk = v.get<int64_t>();
    else if (k == "moe_out_norm") c.moe_out_norm = v.get<bool>();
    else if (k == "attention") {
      const std::string s = v.get<std::string>();
      if (s != "gqa" && s != "mla") {
        error = "attention " + s;
        return false;
      }
      c.attention = s == "mla" ? AttentionKind::kMla : AttentionKind::kGqa;
    }
    else if (k == "q_lora_rank") c.q_lora_rank = v.get<int64_t>();
    else if (k == "kv_lora_rank") c.kv_lora_rank = v.get<int64_t>();
    else if (k == "qk_nope_head_dim") c.qk_nope_head_dim = v.get<int64_t>();
    else if (k == "qk_rope_head_dim") c.qk_rope_head_dim = v.get<int64_t>();
    else if (k == "v_head_dim") c.v_head_dim = v.get<int64_t>();
    else if (k == "mtp_depth") c.mtp_depth = v.get<int64_t>();
    else if (k == "mtp_loss_weight") c.mtp_loss_weight = v.get<double>();
    else if (k == "document_separator")
      separator = v.get<int32_t>();
    else {
      error = "unknown config key " + k;
      return false;
    }
  }
  return true;
}

struct Golden {
  SafetensorsFile file;
  ModelConfig c;
  int64_t B = 0, T = 0;
  int32_t separator = -1;  // document masking's end-of-document id, or -1
};

// Loads a fixture; fails the current test (and returns false) on any problem.
bool load_golden(const std::string& name, Golden& g) {
  std::string err;
  auto f = SafetensorsFile::load(fixture_path(name), &err);
  if (!f) {
    ADD_FAILURE() << err;
    return false;
  }
  g.file = std::move(*f);
  const auto& meta = g.file.metadata();
  for (const char* key : {"config", "batch", "seq_len"})
    if (!meta.count(key)) {
      ADD_FAILURE() << name << ": metadata lacks " << key;
      return false;
    }
  if (!config_from_json(nlohmann::json::parse(meta.at("config")), g.c, g.separator, err)) {
    ADD_FAILURE() << name << ": " << err;
    return false;
  }
  g.B = std::stoll(meta.at("batch"));
  g.T = std::stoll(meta.at("seq_len"));
  Status st = g.c.validate(ConfigOrigins(name), g.T);
  if (!st.is_ok()) {
    ADD_FAILURE() << st.message();
    return false;
  }
  return true;
}

// Copies every layout tensor from the fixture into params; fails on missing
// tensors or shape mismatches, and on fixture parameters the layout lacks.
bool load_params(const Golden& g, const ParamLayout& L, std::vector<float>& params) {
  params.assign(L.total(), std::nanf(""));
  bool ok = true;
  for (const ParamEntry& e : L.entries()) {
    if (!g.file.has(e.name) || !g.file.has("grad." + e.name)) {
      ADD_FAILURE() << "fixture lacks parameter or gradient " << e.name;
      ok = false;
      continue;
    }
    for (const std::string& n : {e.name, "grad." + e.name})
      if (g.file.info(n).shape != e.shape || g.file.info(n).dtype != "F32") {
        ADD_FAILURE() << n << ": fixture shape/dtype differs from the layout";
        ok = false;
      }
    std::vector<float> v = g.file.f32(e.name);
    if (int64_t(v.size()) == e.numel) std::copy(v.begin(), v.end(), params.begin() + e.offset);
  }
  for (const auto& [name, info] : g.file.tensors()) {
    if (kExtraTensors.count(name)) continue;
    const std::string p = name.starts_with("grad.") ? name.substr(5) : name;
    if (!L.find(p)) {
      ADD_FAILURE() << "fixture tensor " << name << " has no place in the C++ layout";
      ok = false;
    }
  }
  return ok;
}

double scalar(const Golden& g, const std::string& name) {
  std::vector<float> v = g.file.f32(name);
  return v.empty() ? std::nan("") : double(v[0]);
}

struct TensorError {
  std::string name;
  double rel = 0.0, max_diff = 0.0, ref_max = 0.0;
};

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_golden(GetParam(), g_));
    model_ = std::make_unique<Transformer>(g_.c, g_.B, g_.T, MatmulPrecision::kFp32);
    model_->set_document_separator(g_.separator);
    ASSERT_TRUE(load_params(g_, model_->layout(), params_));
    tokens_ = g_.file.i32("tokens");
    ASSERT_EQ(g_.file.info("tokens").shape, (std::vector<int64_t>{g_.B, model_->tokens_per_sequence()}));
  }

  Golden g_;
  std::unique_ptr<Transformer> model_;
  std::vector<float> params_;
  std::vector<int32_t> tokens_;
};

TEST_P(GoldenTest, LossesAndEveryGradientMatchReference) {
  const ParamLayout& L = model_->layout();
  std::vector<float> grads(L.total(), 0.0f);
  const ForwardStats st = model_->forward_backward(params_.data(), grads.data(), tokens_.data(), 1.0f, nullptr);

  for (const auto& [name, got] : {std::pair<std::string, double>{"loss", st.loss},
                                  {"aux_loss", st.aux_loss},
                                  {"z_loss", st.z_loss},
                                  {"total_loss", st.total_loss},
                                  {"mtp_loss", g_.c.mtp_depth > 0 ? st.mtp_loss : 0.0}}) {
    if (name == "mtp_loss" && g_.c.mtp_depth == 0) continue;
    const double ref = scalar(g_, name);
    EXPECT_NEAR(got, ref, kLossRelTol * std::max(1.0, std::abs(ref))) << GetParam() << " " << name;
  }

  std::vector<TensorError> errs;
  for (const ParamEntry& e : L.entries()) {
    const std::vector<float> ref = g_.file.f32("grad." + e.name);
    ASSERT_EQ(int64_t(ref.size()), e.numel) << e.name;
    TensorError t{e.name};
    for (int64_t i = 0; i < e.numel; ++i) {
      t.ref_max = std::max(t.ref_max, std::abs(double(ref[i])));
      t.max_diff = std::max(t.max_diff, std::abs(double(grads[e.offset + i]) - double(ref[i])));
    }
    t.rel = t.max_diff / std::max(t.ref_max, 1e-6);
    errs.push_back(t);
  }
  std::sort(errs.begin(), errs.end(), [](const TensorError& a, const TensorError& b) { return a.rel > b.rel; });
  std::ostringstream table;
  table << std::scientific << std::setprecision(2);
  for (size_t i = 0; i < std::min<size_t>(5, errs.size()); ++i)
    table << "  " << errs[i].name << ": rel " << errs[i].rel << " (max diff " << errs[i].max_diff
          << ", ref max " << errs[i].ref_max << ")\n";
  std::cout << "[" << GetParam() << "] " << errs.size() << " gradient tensors; worst:\n" << table.str();
  int bad = 0;
  for (const TensorError& t : errs) bad += t.rel > kGradRelTol ? 1 : 0;
  EXPECT_EQ(bad, 0) << bad << " gradient tensors exceed rel " << kGradRelTol << "; worst:\n" << table.str();
}

TEST_P(GoldenTest, CapacityDropsAndExpertLoadMatchReference) {
  // The training objective: its MTP modules route too (expert loads after the layers').
  const ForwardStats st = model_->forward(params_.data(), tokens_.data(), nullptr, Objective::kTraining);
  const std::vector<int32_t> dropped = g_.file.i32("dropped");
  const std::vector<int32_t> load = g_.file.i32("expert_load");
  const int64_t n_moe = model_->n_moe_layers(), E = g_.c.n_experts;
  ASSERT_EQ(int64_t(dropped.size()), n_moe);
  ASSERT_EQ(int64_t(load.size()), n_moe * E);
  EXPECT_EQ(st.dropped, std::accumulate(dropped.begin(), dropped.end(), int64_t(0)));
  // Drops by sequence (fixtures written since the reference counts them).
  if (g_.file.has("dropped_per_sequence")) {
    const std::vector<int32_t> by_seq = g_.file.i32("dropped_per_sequence");
    EXPECT_EQ(st.dropped_per_sequence, std::vector<int64_t>(by_seq.begin(), by_seq.end()));
  }
  EXPECT_EQ(std::accumulate(st.dropped_per_sequence.begin(), st.dropped_per_sequence.end(), int64_t(0)), st.dropped);
  if (g_.c.capacity_factor > 0) EXPECT_GT(st.dropped, 0) << "a capacity fixture that drops nothing checks no drop rule";
  if (g_.c.drop_policy == DropPolicy::kPosition) {
    // The fixture tells the policies apart: dropping by score instead keeps other assignments and misses the loss.
    ModelConfig probs = g_.c;
    probs.drop_policy = DropPolicy::kProbs;
    Transformer other(probs, g_.B, g_.T, MatmulPrecision::kFp32);
    const double loss = other.forward(params_.data(), tokens_.data(), nullptr, Objective::kTraining).total_loss;
    EXPECT_GT(std::abs(loss - scalar(g_, "total_loss")), 100 * kLossRelTol * scalar(g_, "total_loss"));
  }
  if (g_.separator >= 0) {
    EXPECT_NE(model_->document_starts(), nullptr) << "a document fixture whose rows hold one document each";
    // The fixture tells masking apart: attending across the documents misses the loss.
    Transformer unmasked(g_.c, g_.B, g_.T, MatmulPrecision::kFp32);
    const double loss = unmasked.forward(params_.data(), tokens_.data(), nullptr, Objective::kTraining).total_loss;
    EXPECT_GT(std::abs(loss - scalar(g_, "total_loss")), 100 * kLossRelTol * scalar(g_, "total_loss"));
  }
  EXPECT_EQ(st.assignments, n_moe * g_.B * g_.T * g_.c.top_k);
  ASSERT_EQ(int64_t(st.expert_load.size()), n_moe);
  for (int64_t l = 0; l < n_moe; ++l)
    for (int64_t e = 0; e < E; ++e)
      EXPECT_EQ(st.expert_load[l][e], load[l * E + e]) << "MoE layer " << l << " expert " << e;
  // The evaluation path agrees with the reference losses too.
  EXPECT_NEAR(st.loss, scalar(g_, "loss"), kLossRelTol * std::max(1.0, scalar(g_, "loss")));
  EXPECT_NEAR(st.total_loss, scalar(g_, "total_loss"), kLossRelTol * std::max(1.0, scalar(g_, "total_loss")));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest,
                         ::testing::Values("moe_a", "moe_b", "moe_c", "moe_mla_d", "moe_mla_e", "moe_d", "moe_delta",
                                           "moe_e_position", "moe_f_docs", "moe_mla_f_docs"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace mt
