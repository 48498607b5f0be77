// stream_config.cpp — declarations of the [stream] keys.
#include "dist/stream_config.h"

#include "core/config_schema.h"

namespace mt {

void declare_keys(ConfigSchema& s, StreamConfig& c, const std::string& t) {
  s.add(t + ".enabled", &c.enabled,
        "stream layers from the store into compute memory (weights in, gradients out, optimizer at the store)");
  s.add(t + ".compute_memory_bytes", &c.compute_memory_bytes,
        "compute-memory budget: activations plus the streamed layer buffers; the run refuses to start above it")
      .range(0, int64_t(1) << 50).unit("bytes").note("0 = no budget");
  s.add(t + ".prefetch_layers", &c.prefetch_layers, "layers fetched ahead of the one computing")
      .range(0, 64).note("0 = fetch each layer when it is used");
  s.add(t + ".io_threads", &c.io_threads, "background threads copying between the store and compute memory")
      .range(1, 64);
  s.add_enum(t + ".store", &c.store, {"host", "disk"},
             "where parameters, gradients and optimizer state live: host memory, or memory-mapped files");
  s.add(t + ".expert_density", &c.expert_density,
        "sparse streaming: each routed-expert matrix arrives pruned to this fraction of its largest-magnitude "
        "weights; gradients update the dense weights in the store (straight-through)")
      .above(0).max(1).note("1 = dense (bit-identical to in place)");
  s.add(t + ".store_dir", &c.store_dir, "directory of the disk store's files")
      .note(
          "\"\" = RUN_DIR/stream_store (a temporary directory without a run directory); a directory named here "
          "is shared: each run takes its own locked subdirectory");
}

}  // namespace mt
