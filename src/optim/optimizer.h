// optimizer.h — the trainer's optimizer: per tensor AdamW, Muon, or either
// wrapped by Hyperball (optimizer_config.h decides which), over this rank's
// shard of the flat parameter buffer. One process is a world of one.
//
// State, mirroring the local storage: m (AdamW first moment, or Muon's
// momentum), v (AdamW second moment, only for AdamW-updated elements, stored
// back to back), both fp32 or both bf16 (optim.state_precision), and the
// Hyperball radii R = ||W_0||_F of the wrapped matrices (fp32, replicated on
// every rank).
//
// Sharding. AdamW is elementwise. Hyperball needs two norms per matrix (of
// the update, of the stepped weight): each rank sums squares over its pieces
// and one allreduce (rank order) adds them. Muon needs each whole matrix:
// every Muon matrix has one owner, the rank holding pieces of it with the
// least Newton-Schulz work so far (a pure function of all ranks' shard
// plans, so every rank agrees); the momentum-updated pieces travel to the
// owner in one all-to-all, the owner orthogonalises (and under Hyperball
// normalises) the whole matrix, and a second all-to-all brings the pieces
// back. Keller Jordan's distributed Muon also splits the matrices among the
// ranks; there each rank all-gathers the finished parameters, here only the
// update returns, to the ranks that hold it. See docs/optimizers.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/float_buffer.h"
#include "comm/comm.h"
#include "core/status.h"
#include "kernels/cpu/muon.h"
#include "model/param_layout.h"
#include "optim/adamw_optimizer.h"
#include "optim/optimizer_config.h"

namespace mt {

class Optimizer {
 public:
  using Range = AdamW::Range;
  // ranks_owned[r]: the layout ranges rank r holds (its local storage order);
  // this rank is comm.rank(). `peak_lr` is train.lr (for optim.aux_lr).
  // A non-empty `state_dir` keeps m and v in memory-mapped files there (the
  // disk tier of weight streaming); storage_status() says whether that worked.
  Optimizer(const ParamLayout& layout, const AdamWConfig& adamw, const OptimizerConfig& cfg, double peak_lr,
            std::vector<std::vector<Range>> ranks_owned, Comm& comm, const std::string& state_dir = "");
  // The whole layout in one process.
  Optimizer(const ParamLayout& layout, const AdamWConfig& adamw, const OptimizerConfig& cfg, double peak_lr,
            Comm& comm);
  ~Optimizer();
  const Status& storage_status() const { return storage_; }
  // Removes the state files of a disk store (FloatBuffer::remove_file).
  void remove_state_files();

  // Hyperball radii from the whole initial model (every rank passes the same
  // values). Call once before the first step; restore() overwrites them.
  void init_radii(const float* full_params);

  // Sum of squares of this rank's gradient (thread-count invariant).
  double local_sum_squares(const float* grads) const;
  // One step with the pre-clip global gradient norm (clipping as AdamW's).
  // `lr` is the schedule's for the matrices; AdamW tensors get lr x aux ratio.
  // Collective whenever the configuration uses Hyperball or Muon.
  // A non-null `shadow` (local storage, like params) receives the bf16
  // rounding of every updated parameter, written by the pass that last
  // changes its segment while the segment is still in cache: the optimizer
  // and the shadow refresh are one pass over memory (docs/performance.md).
  // A non-null `spent_grads` (the storage of `grads` itself) is zeroed
  // segment by segment right after the pass reads it, so the next step
  // starts from zero gradients without a pass of its own.
  // A non-empty `on_final` is called with each plain AdamW piece's
  // parameters [p, p + n) once they (and their shadow) hold their final
  // values for this step, by the thread that finished the piece's last
  // segment, while that segment is in its cache (the trainer packs the GEMM
  // copies of those weights then: gemm_pack_final_weights).
  using FinalRange = std::function<void(const float* p, int64_t n)>;
  void update(float* params, const float* grads, double lr, int64_t step, double global_norm, bf16* shadow = nullptr,
              float* spent_grads = nullptr, const FinalRange& on_final = {});
  // One process: clip by the local norm, update, return the norm.
  double step(float* params, const float* grads, double lr, int64_t step);

  int64_t local_size() const { return local_size_; }
  const std::vector<Range>& owned() const { return owned_; }
  const TensorRule& rule(int64_t entry) const { return rules_[size_t(entry)]; }

  // Checkpoint state of the owned piece of layout entry `entry` that starts
  // at local offset `local`: ("adam_m.", m), ("adam_v.", v) for AdamW-based
  // tensors, ("muon_m.", momentum) for Muon-based ones; the pointer (fp32 or
  // bf16, as the state is held; the other is null) is the piece's first
  // element (the piece's count is the caller's).
  struct StateSlot {
    const char* prefix;
    float* data;
    bf16* data_bf16;
  };
  std::vector<StateSlot> state_at(int64_t entry, int64_t local);
  // Radii of the wrapped entries in layout order (empty without Hyperball).
  std::vector<float>& radii() { return radii_; }
  const std::vector<int64_t>& wrapped_entries() const { return wrapped_; }
  StatePrecision state_precision() const { return cfg_.state_precision; }
  // m and v in fp32 over local storage [lo, lo + n) (v is 0 where Muon has
  // none), into out: for hashes, which read the state a chunk at a time so a
  // store larger than memory is never copied whole.
  void read_m(int64_t lo, int64_t n, float* out) const;
  void read_v(int64_t lo, int64_t n, float* out) const;
  // The same over the whole local storage (tests).
  std::vector<float> m_local() const;
  std::vector<float> v_local() const;

  // Bytes of persistent state: m (local size) and v (AdamW-updated elements).
  int64_t state_bytes() const;
  // Elements of the transient buffers of a Muon step on this rank (send and
  // receive buffers, the owner's whole matrices, the Newton-Schulz scratch).
  int64_t muon_workspace_floats() const;

 private:
  struct Piece;
  struct Exchange;
  void build_pieces(const std::string& state_dir);
  void build_exchange(const std::vector<std::vector<Range>>& ranks_owned);
  void muon_exchange();  // send buffer -> owners -> Newton-Schulz -> back
  // update() over moments held as State (float or bf16).
  template <typename State>
  void update_with(State* m, State* v, float* params, const float* grads, double lr, int64_t step, double norm,
                   bf16* shadow, float* spent_grads, const FinalRange& on_final);

  const ParamLayout& layout_;
  AdamWConfig adamw_;
  OptimizerConfig cfg_;
  double aux_ratio_ = 1.0;
  bool aux_scaled_ = false;
  Comm& comm_;
  NewtonSchulzParams ns_;
  std::vector<TensorRule> rules_;      // per layout entry
  std::vector<double> muon_mult_;      // per layout entry: Muon's lr multiplier (muon_lr_multiplier)
  std::vector<int64_t> hb_index_;      // per layout entry: index into radii_, or -1
  std::vector<int64_t> wrapped_;       // the wrapped entries, layout order
  std::vector<Range> owned_;
  int64_t local_size_ = 0;
  std::vector<Piece> pieces_;          // owned range x entry, in local order
  struct Segment {
    int64_t piece, lo, hi;             // [lo, hi) within the piece (fixed cut: thread invariant)
  };
  std::vector<Segment> segments_;
  FloatBuffer m_, v_;         // optim.state_precision = "fp32"
  Bf16Buffer m16_, v16_;      // "bf16"
  Status storage_ = Status::ok();
  std::vector<float> radii_;
  bool any_adamh_ = false, any_muon_ = false;  // over the whole model (same on every rank)
  std::vector<float> send_;            // Muon: this rank's momentum-updated pieces, grouped by owner
  std::unique_ptr<Exchange> x_;
};

}  // namespace mt
