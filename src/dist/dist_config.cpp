// dist_config.cpp — declarations of the [dist] keys.
#include "dist/dist_config.h"

#include "core/config_schema.h"

namespace mt {

void declare_keys(ConfigSchema& s, DistConfig& d, const std::string& t) {
  s.add(t + ".ep", &d.ep, "expert-parallel ranks: routed experts split over them (must divide n_experts)").range(1, 1 << 20);
  s.add(t + ".fsdp", &d.fsdp, "FSDP ranks sharing each EP rank's experts").range(0, 1 << 20).note("0 = ranks / ep");
  s.add(t + ".cp", &d.cp,
        "context-parallel ranks: each sequence is cut into 2 cp chunks and consecutive groups of cp ranks share "
        "its tokens (rank i of a group holds chunks i and 2cp-1-i); attention exchanges keys and values (MLA: its latent) between them")
      .range(1, 1 << 20)
      .note("must divide the ranks; train.seq_len (every phase's) a multiple of 2 cp; no gated-delta layers");
  s.add(t + ".timeout_s", &d.timeout_s, "a rank waiting longer in a collective ends the job, naming the silent ranks")
      .above(0).unit("s");
  s.add(t + ".prefetch", &d.prefetch, "gather layer l+1 while layer l computes");
  s.add(t + ".ep_overlap", &d.ep_overlap,
        "keep EP row all-to-alls in flight while the shared experts and the router's backward compute")
      .note("false: each exchange completes when it is posted (same results)");
}

}  // namespace mt
