// frozen_model.cpp — a reference or teacher beside the policy (see frozen_model.h).
#include "train/frozen_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/hash.h"
#include "dist/expert_parallel.h"
#include "dist/fsdp.h"
#include "dist/gather_layout.h"
#include "dist/shard_plan.h"
#include "model/parallel_hooks.h"

namespace mt {

struct FrozenModel::Shards {
  MeshShape shape;
  std::unique_ptr<Mesh> mesh;
  std::unique_ptr<ShardPlan> plan;
  std::unique_ptr<EpDispatcher> ep;
  std::unique_ptr<FsdpProvider> fsdp;
};

FrozenModel::~FrozenModel() = default;

namespace {

// The checkpoint, refused naming `key` unless it reads text exactly as the
// policy's data does (the same vocabulary size, the same ids for the same
// text, the same end-of-document id).
Result<InferenceModel> load_checked(const std::string& dir, const char* key, const RunConfig& policy,
                                    const TextCodec& codec) {
  auto m = load_inference_model(dir);
  if (!m) return Status::errorf("{}: {}", key, m.status().message());
  if (m->cfg.model.vocab_size != policy.model.vocab_size)
    return Status::errorf("{}: {} has model.vocab_size {}, the policy {}", key, dir, m->cfg.model.vocab_size,
                          policy.model.vocab_size);
  auto other = open_run_codec(*m, "");
  if (!other) return Status::errorf("{}: the tokenizer of {}: {}", key, dir, other.status().message());
  const std::string probe = "Both models must read text alike: Q: 12 + 34 = ? A: 46\n";
  if ((*other)->encode(probe) != codec.encode(probe) || (*other)->end_of_document() != codec.end_of_document())
    return Status::errorf("{}: {} uses another tokenizer ({}) than the policy's data ({})", key, dir,
                          (*other)->source(), codec.source());
  return m;
}

}  // namespace

Result<std::unique_ptr<FrozenModel>> FrozenModel::open(const std::string& dir, const RunConfig& policy,
                                                       const TextCodec& codec, Comm& world,
                                                       const FrozenModelOptions& opt) {
  std::unique_ptr<FrozenModel> f(new FrozenModel());
  f->dir_ = dir;
  f->world_ = &world;
  const bool shard = opt.layout == FrozenLayout::kSharded && world.size() > 1;
  // The policy's mesh when the model's experts divide among its EP ranks,
  // else FSDP over the whole world.
  MeshShape shape{1, int64_t(world.size())};
  // One rank at a time reads the checkpoint and keeps what it holds.
  Status mine = Status::ok();
  for (int r = 0; r < world.size(); ++r) {
    if (r == world.rank()) {
      auto m = load_checked(dir, opt.key, policy, codec);
      if (!m) {
        mine = m.status();
      } else {
        f->cfg_ = m->cfg;
        f->layout_ = m->layout;
        f->router_bias_ = m->router_bias;
        f->hash_ = hex64(xxh64(m->params.data(), m->params.size() * sizeof(float), 0));
        if (shard) {
          auto s = resolve_mesh(world.size(), opt.shape.ep, opt.shape.fsdp, m->cfg.model.n_experts);
          if (s) shape = *s;
          const ShardPlan plan(m->layout, m->cfg.model, shape, world.rank());
          f->params_.resize(size_t(plan.local_size()));
          for (const OwnedRange& o : plan.owned())
            std::copy(m->params.begin() + o.lo, m->params.begin() + o.hi, f->params_.begin() + o.local);
        } else {
          f->params_ = std::move(m->params);
        }
      }
    }
    if (shard) world.barrier("frozen model load");
  }
  int64_t failed = mine.is_ok() ? 0 : 1;
  if (world.size() > 1) world.allreduce_sum(&failed, 1, "all-reduce (frozen model load)");
  if (!mine) return mine;
  if (failed) return Status::errorf("{}: another rank could not read {}", opt.key, dir);
  f->model_ = std::make_unique<Transformer>(f->cfg_.model, opt.local_batch, opt.seq_len, MatmulPrecision::kFp32);
  f->model_->set_document_separator(opt.separator);
  if (shard) {
    auto s = std::make_unique<Shards>();
    s->shape = shape;
    s->mesh = std::make_unique<Mesh>(world, shape);  // collective
    s->plan = std::make_unique<ShardPlan>(f->layout_, f->cfg_.model, shape, world.rank());
    if (shape.ep > 1)
      s->ep = std::make_unique<EpDispatcher>(s->mesh->ep(), f->cfg_.model, opt.local_batch, f->model_->rows());
    s->fsdp = std::make_unique<FsdpProvider>(*s->mesh, *s->plan, f->cfg_.model.n_units(), f->params_.data(), nullptr,
                                             Prefetch::kNextLayer, s->ep.get());
    f->shards_ = std::move(s);
  }
  return f;
}

std::string FrozenModel::layout_description() const {
  if (!shards_) return world_->size() > 1 ? "whole on every rank" : "whole";
  return fmt::format("sharded ep {} x fsdp {}: {} of {} parameters on this rank", shards_->shape.ep,
                     shards_->shape.fsdp, params_.size(), layout_.total());
}

ParamProvider& FrozenModel::provider() { return *shards_->fsdp; }

const std::vector<float>& FrozenModel::token_losses(const int32_t* rows) {
  const float* bias = router_bias_.empty() ? nullptr : router_bias_.data();
  if (shards_)
    model_->forward(provider(), rows, bias);
  else
    model_->forward(params_.data(), rows, bias);
  return model_->token_losses();
}

void FrozenModel::logits(const int32_t* rows, float* out) {
  const float* bias = router_bias_.empty() ? nullptr : router_bias_.data();
  if (shards_)
    model_->forward_logits(provider(), rows, bias, out);
  else
    model_->forward_logits(params_.data(), rows, bias, out);
}

void FrozenModel::with_whole_model(const std::function<void(const float*, const float*)>& f) {
  const float* bias = router_bias_.empty() ? nullptr : router_bias_.data();
  if (!shards_) return f(params_.data(), bias);
  std::vector<float> whole;
  gather_layout(*world_, layout_, cfg_.model, shards_->shape, params_.data(), whole);
  f(whole.data(), bias);
}

}  // namespace mt
