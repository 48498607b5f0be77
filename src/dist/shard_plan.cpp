// shard_plan.cpp — unit boundaries from the layout's layer/expert tags.
#include "dist/shard_plan.h"

#include <algorithm>

#include "core/check.h"

namespace mt {

void ShardPlan::cut(ShardUnit& u, int64_t lo, int64_t hi, ShardGroup g) {
  u.lo = lo;
  u.hi = hi;
  u.group = g;
  const int64_t n = g == ShardGroup::kWorld ? shape_.world() : shape_.fsdp;
  u.group_rank = g == ShardGroup::kWorld ? rank_ : coord_.fsdp_rank;
  u.counts.resize(n);
  u.displs.resize(n);
  const int64_t S = hi - lo;
  for (int64_t i = 0; i < n; ++i) {
    u.displs[i] = S * i / n;
    u.counts[i] = S * (i + 1) / n - u.displs[i];
  }
}

ShardPlan::ShardPlan(const ParamLayout& L, const ModelConfig& c, const MeshShape& shape, int64_t rank)
    : shape_(shape), rank_(rank), coord_(mesh_coord(shape, rank)) {
  const int64_t E = c.n_experts;
  expert_count_ = E > 0 ? E / shape.ep : 0;
  first_expert_ = coord_.ep_rank * expert_count_;

  int64_t embed_hi = 0, tail_lo = L.total();
  std::vector<int64_t> dlo(c.n_units(), L.total()), dhi(c.n_units(), 0);
  std::vector<int64_t> xlo(c.n_units(), L.total()), xhi(c.n_units(), 0);
  for (const ParamEntry& e : L.entries()) {
    const int64_t lo = e.offset, hi = e.offset + e.numel;
    if (e.layer < 0) {
      if (e.name == "embed") embed_hi = hi;
      else tail_lo = std::min(tail_lo, lo);
      continue;
    }
    if (e.expert < 0) {
      dlo[e.layer] = std::min(dlo[e.layer], lo);
      dhi[e.layer] = std::max(dhi[e.layer], hi);
    } else if (e.expert >= first_expert_ && e.expert < first_expert_ + expert_count_) {
      xlo[e.layer] = std::min(xlo[e.layer], lo);
      xhi[e.layer] = std::max(xhi[e.layer], hi);
    }
  }
  MT_CHECK(L.find("embed") && L.find("embed")->offset == 0, "layout must start with the embedding");
  cut(embed_, 0, embed_hi, ShardGroup::kWorld);
  dense_.resize(c.n_units());
  experts_.resize(c.n_units());
  int64_t prev = embed_hi;
  for (int64_t l = 0; l < c.n_units(); ++l) {
    MT_CHECK(dlo[l] == prev, "layer {} dense tensors start at {}, expected {}", l, dlo[l], prev);
    cut(dense_[l], dlo[l], dhi[l], ShardGroup::kWorld);
    const auto [llo, lhi] = L.layer_range(l);
    if (xhi[l] > xlo[l]) {
      MT_CHECK(xlo[l] >= dhi[l] && xhi[l] <= lhi, "layer {}: experts must follow the dense tensors", l);
      cut(experts_[l], xlo[l], xhi[l], ShardGroup::kFsdp);
    } else {
      experts_[l].lo = experts_[l].hi = dhi[l];
      MT_CHECK(!c.is_moe(l) || expert_count_ == 0, "layer {}: no experts found", l);
    }
    prev = lhi;
  }
  MT_CHECK(tail_lo == prev, "tail starts at {}, expected {}", tail_lo, prev);
  cut(tail_, tail_lo, L.total(), ShardGroup::kWorld);

  std::vector<ShardUnit*> units = {&embed_};
  for (int64_t l = 0; l < c.n_units(); ++l) {
    units.push_back(&dense_[l]);
    if (experts_[l].size() > 0) units.push_back(&experts_[l]);
  }
  units.push_back(&tail_);
  for (ShardUnit* u : units) {
    u->local = local_size_;
    if (u->mine() == 0) continue;
    const int64_t lo = u->mine_lo(), hi = lo + u->mine();
    if (!owned_.empty() && owned_.back().hi == lo) owned_.back().hi = hi;
    else owned_.push_back({lo, hi, local_size_});
    local_size_ += u->mine();
  }
}

}  // namespace mt
