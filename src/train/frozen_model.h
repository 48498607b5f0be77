// frozen_model.h — a model beside the policy that never trains: RL's
// reference (rl.reference) and distillation's teacher (rl.teacher). Read
// from a checkpoint and refused, naming the key, unless it reads text as
// the policy's data does.
//
// In a world of more than one rank it is laid out like the policy
// (rl.frozen_layout = "sharded", the default): every rank keeps only its
// ShardPlan chunks under the policy's mesh shape, a forward all-gathers one
// unit at a time (dist/fsdp.h) and sends routed rows to their experts'
// owners (dist/expert_parallel.h) — a teacher is usually larger than its
// student, so it needs the sharding at least as much. "replicated" keeps a
// whole copy on every rank: no communication in its forwards, for a model
// small enough. The ranks read the checkpoint one after another, so at most
// one whole copy is in a machine's memory beside the shards.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm.h"
#include "core/status.h"
#include "dist/mesh.h"
#include "model/transformer.h"
#include "train/inference_model.h"
#include "train/rl_config.h"
#include "train/run_config.h"

namespace mt {

struct FrozenModelOptions {
  const char* key = "";  // the config key the checkpoint comes from (errors name it)
  FrozenLayout layout = FrozenLayout::kSharded;
  MeshShape shape;          // the policy's mesh (sharded layout)
  int64_t local_batch = 1;  // rows per forward on this rank
  int64_t seq_len = 0;      // T: a forward's rows are T + 1 tokens
  int32_t separator = -1;   // the end-of-document id (document masking)
};

class FrozenModel {
 public:
  FrozenModel(const FrozenModel&) = delete;
  FrozenModel& operator=(const FrozenModel&) = delete;
  ~FrozenModel();

  // Collective. policy: the run's config; codec: the tokenizer of its data.
  static Result<std::unique_ptr<FrozenModel>> open(const std::string& dir, const RunConfig& policy,
                                                   const TextCodec& codec, Comm& world, const FrozenModelOptions& opt);

  const std::string& dir() const { return dir_; }
  const ModelConfig& model() const { return cfg_.model; }
  bool sharded() const { return shards_ != nullptr; }
  // xxh64 of the whole flat parameters (16 hex digits): who the model is.
  const std::string& params_hash() const { return hash_; }
  int64_t resident_floats() const { return int64_t(params_.size()); }  // parameters this rank holds
  // "whole on every rank", or "sharded ep E x fsdp F: N of M parameters on this rank".
  std::string layout_description() const;

  // Collective when sharded. rows: local_batch rows of T + 1 tokens. Each
  // position's cross-entropy of its next token (what token_losses() gives).
  const std::vector<float>& token_losses(const int32_t* rows);
  // Every position's logits over the vocabulary into out (local_batch x T x V).
  void logits(const int32_t* rows, float* out);
  // Collective when sharded: f(params, router_bias) over the whole model
  // (gathered into a buffer that is freed afterwards): what sampling reads.
  void with_whole_model(const std::function<void(const float* params, const float* bias)>& f);

 private:
  struct Shards;
  FrozenModel() = default;
  ParamProvider& provider();

  std::string dir_, hash_;
  RunConfig cfg_;
  ParamLayout layout_;
  std::vector<float> params_;       // the whole model, or this rank's chunks (sharded)
  std::vector<float> router_bias_;  // per MoE layer E floats; empty without aux_free_bias
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Shards> shards_;  // mesh, plan, dispatcher, FSDP provider (sharded)
  Comm* world_ = nullptr;
};

}  // namespace mt
