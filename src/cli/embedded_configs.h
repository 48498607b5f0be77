// embedded_configs.h — the presets under configs/, compiled into the binary
// (name without .toml, e.g. "quickstart", "bench/moe-512").
#pragma once
#include <string>
#include <vector>

namespace mt {
struct EmbeddedConfig {
  std::string name;
  std::string text;
};
const std::vector<EmbeddedConfig>& embedded_configs();
const EmbeddedConfig* find_embedded_config(const std::string& name);
}  // namespace mt
