// expert_parallel.h — expert parallelism as an ExpertDispatcher: the E
// routed experts are split into ep contiguous blocks of El = E / ep, EP rank
// j computing experts [j*El, (j+1)*El) for the tokens of every rank of its
// EP group. Per MoE layer and micro-batch:
//   dispatch      with static capacity (capacity_factor > 0): one fixed-size
//                 all-to-all, each peer's block holding its El row counts and
//                 El full-capacity slots; dropless: a counts all-to-all
//                 first (El per peer), then the rows (variable sizes).
//                 a.xe segments -> expert-major rows on the owner
//   combine       expert outputs travel back the same way into a.ye
//   dispatch_grad output gradients follow the forward's routes (no counts)
//   combine_grad  input gradients come back into s.dxe
// Each all-to-all of rows is non-blocking: *_start packs and posts it, the
// MoE block computes its shared experts (forward, gradient dispatch) or its
// router's backward (gradient combine) and *_finish waits and unpacks, so a
// rank that reaches the exchange first works instead of waiting for its
// peers. The dropless counts exchange is small and stays blocking.
// Only real rows travel (padding stays home); the owner lays each expert's
// rows out source rank by source rank, in token order, padded to
// kExpertRowAlign with zero rows, so its GEMMs look like the one-process ones.
// Buffers: with capacity_factor > 0 every buffer is sized once from the
// static capacity bound and never grows; dropless runs grow them to the
// high-water mark. Once the counts are known, the other three all-to-alls
// move real rows only.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/comm.h"
#include "model/config.h"
#include "model/parallel_hooks.h"

namespace mt {

// kOff (dist.ep_overlap = false) completes each exchange inside its start:
// the same data and results, only without the overlap (to measure it).
enum class EpOverlap { kOn, kOff };

class EpDispatcher final : public ExpertDispatcher {
 public:
  // ep: this rank's EP group; tokens: B*T tokens of one local micro-batch.
  EpDispatcher(Comm& ep, const ModelConfig& c, int64_t batch, int64_t seq_len, EpOverlap overlap = EpOverlap::kOn);

  void dispatch_start(int64_t layer, FfnActs& a, int64_t Din) override;
  ExpertRows dispatch_finish(int64_t layer, FfnActs& a, int64_t Din) override;
  void combine_start(int64_t layer, FfnActs& a, int64_t Din) override;
  void combine_finish(int64_t layer, FfnActs& a, int64_t Din) override;
  void dispatch_grad_start(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) override;
  ExpertRows dispatch_grad_finish(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) override;
  void combine_grad_start(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) override;
  void combine_grad_finish(int64_t layer, const FfnActs& a, FfnScratch& s, int64_t Din) override;
  void progress() override;

  // Rows bound used to size the buffers (the static-capacity bound, or the
  // dropless starting size).
  int64_t row_bound() const { return row_bound_; }

 private:
  struct LayerState {
    std::vector<int64_t> send_rows;  // (P, El): rows sent to rank p for its expert i
    std::vector<int64_t> recv_rows;  // (P, El): rows from rank s for local expert i
    std::vector<int64_t> begin;      // (El + 1): expert-major row offsets (padded)
    std::vector<float> x, h, z;      // saved for the backward: (rows, Din), (rows, 2F), (rows, F)
    int64_t rows = 0;
  };
  // Local segments (rows of `src` in FfnActs layout) -> send buffer -> post
  // to the peers; then, once it lands, -> expert-major `dst` (zero padding rows).
  void post_to_experts(LayerState& st, const FfnActs& a, const float* src, int64_t Din, const char* what);
  void unpack_to_experts(const LayerState& st, float* dst, int64_t Din);
  // Expert-major `src` -> post to the peers; then -> local segments of `dst`.
  void post_from_experts(LayerState& st, const float* src, int64_t Din, const char* what);
  void unpack_from_experts(const LayerState& st, const FfnActs& a, float* dst, int64_t Din);
  // Posts the exchange (completing it at once under EpOverlap::kOff), then
  // waits for it (the one `what` names).
  void post(const char* what);
  void wait_posted(const char* expected);
  ExpertRows rows_of(LayerState& st);
  void set_begin(LayerState& st);  // expert-major offsets from recv_rows
  // Capacity mode: counts and rows in one fixed-size all-to-all.
  void post_fixed(LayerState& st, const FfnActs& a, int64_t Din);
  void unpack_fixed(LayerState& st, int64_t Din);

  Comm& ep_;
  EpOverlap overlap_;
  int64_t P_, me_, E_, El_, F_, align_;
  int64_t slot_rows_ = 0;  // capacity mode: rows of one expert from one peer, at most (0 = dropless)
  int64_t row_bound_ = 0;
  std::vector<LayerState> layers_;
  std::vector<float> send_, recv_, y_, dy_, dx_, dz_, dh_;
  std::vector<int64_t> scounts_, sdispls_, rcounts_, rdispls_;  // live until the exchange lands
  std::unique_ptr<Request> posted_;     // null also when the exchange completed at once (LocalComm)
  const char* posted_what_ = nullptr;  // names the exchange in flight; null when none is
};

}  // namespace mt
