// shard_plan.h — which elements of the flat parameter layout each rank owns
// (parameters, gradients and AdamW moments alike): a pure function of
// (layout, mesh, rank), so checkpoints and tests can compute any rank's
// plan. FSDP units: the embedding; per layer its dense tensors (attention,
// norms, router, latent projections, shared experts) and its routed experts
// of one EP rank; the tail (final norm, untied head). Dense units and the
// root are cut into world-size contiguous chunks (chunk i of S elements is
// [S*i/n, S*(i+1)/n)), expert units into fsdp-size chunks of the FSDP group
// holding those experts. Every element has exactly one owner. A rank keeps
// its chunks back to back in global order ("local storage").
#pragma once
#include <cstdint>
#include <vector>

#include "dist/mesh.h"
#include "model/config.h"
#include "model/param_layout.h"

namespace mt {

enum class ShardGroup { kWorld, kFsdp };

struct ShardUnit {
  int64_t lo = 0, hi = 0;  // global range [lo, hi) of the whole unit (this EP rank's experts)
  ShardGroup group = ShardGroup::kWorld;
  int64_t group_rank = 0;
  std::vector<int64_t> counts, displs;  // per group rank: its chunk, displs relative to lo
  int64_t local = 0;                    // offset of this rank's chunk in local storage
  int64_t size() const { return hi - lo; }
  int64_t mine() const { return counts.empty() ? 0 : counts[group_rank]; }
  int64_t mine_lo() const { return lo + (displs.empty() ? 0 : displs[group_rank]); }  // global
  bool whole() const { return mine() == size(); }  // group of one: no communication
};

// A run of owned elements: global [lo, hi) stored at local [local, local + hi - lo).
struct OwnedRange {
  int64_t lo = 0, hi = 0, local = 0;
};

class ShardPlan {
 public:
  ShardPlan(const ParamLayout& layout, const ModelConfig& c, const MeshShape& shape, int64_t rank);

  const ShardUnit& embed() const { return embed_; }
  const ShardUnit& tail() const { return tail_; }
  const ShardUnit& dense(int64_t layer) const { return dense_[layer]; }
  const ShardUnit& experts(int64_t layer) const { return experts_[layer]; }  // size 0 on dense layers
  int64_t first_expert() const { return first_expert_; }  // experts of this EP rank: [first, first + count)
  int64_t expert_count() const { return expert_count_; }

  int64_t local_size() const { return local_size_; }
  const std::vector<OwnedRange>& owned() const { return owned_; }  // sorted by lo
  const MeshShape& shape() const { return shape_; }
  int64_t rank() const { return rank_; }

 private:
  void cut(ShardUnit& u, int64_t lo, int64_t hi, ShardGroup g);

  MeshShape shape_;
  int64_t rank_;
  MeshCoord coord_;
  int64_t first_expert_ = 0, expert_count_ = 0;
  ShardUnit embed_, tail_;
  std::vector<ShardUnit> dense_, experts_;
  std::vector<OwnedRange> owned_;
  int64_t local_size_ = 0;
};

}  // namespace mt
