// stream_config.h — the [stream] keys: weight streaming (ZeRO-Infinity,
// Cerebras MemoryX). Parameters, gradients and optimizer state stay in a
// store (host memory or memory-mapped files on local disk); compute memory
// holds the activations and only the layers in flight, fetched ahead by
// background I/O threads. See docs/streaming.md.
#pragma once
#include <cstdint>
#include <string>

namespace mt {

class ConfigSchema;

enum class StreamStore { kHost, kDisk };

struct StreamConfig {
  bool enabled = false;               // stream the layers instead of computing on the store in place
  int64_t compute_memory_bytes = 0;   // budget of compute memory (activations + layer buffers); 0 = none
  int64_t prefetch_layers = 1;        // layers fetched ahead of the one computing (0 = fetch on use)
  int64_t io_threads = 1;             // background copy threads
  StreamStore store = StreamStore::kHost;
  std::string store_dir;              // disk store: directory of its files ("" = RUN_DIR/stream_store)
  double expert_density = 1.0;        // sparse streaming: fraction of each routed-expert tensor streamed
};

void declare_keys(ConfigSchema& s, StreamConfig& c, const std::string& table = "stream");

}  // namespace mt
