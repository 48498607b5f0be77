// heartbeat.cpp — see heartbeat.h.
#include "rundir/heartbeat.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file_io.h"

namespace mt {

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void write_heartbeat(const std::string& dir, const Heartbeat& h, FileSystem& fs) {
  static bool warned = false;
  const nlohmann::json j = {{"rank", h.rank},   {"pid", h.pid},   {"host", h.host},     {"step", h.step},
                            {"phase", h.phase}, {"time", h.time}, {"step_s", h.step_s}, {"wait_s", h.wait_s}};
  const std::string path = fmt::format("{}/rank_{}.json", dir, h.rank);
  const Status s = write_file_atomic(path, j.dump(), fs, WriteDurability::kAtomicOnly);
  if (!s && !warned) {
    warned = true;
    fmt::print(stderr, "# warning: cannot write heartbeat: {}\n", s.message());
  }
}

std::vector<Heartbeat> read_heartbeats(const std::string& dir) {
  std::vector<Heartbeat> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("rank_") || !name.ends_with(".json")) continue;
    std::ifstream in(it->path());
    const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    Heartbeat h;
    h.rank = j.value("rank", int64_t(-1));
    h.pid = j.value("pid", int64_t(0));
    h.step = j.value("step", int64_t(0));
    h.host = j.value("host", std::string());
    h.phase = j.value("phase", std::string());
    h.time = j.value("time", 0.0);
    h.step_s = j.value("step_s", -1.0);
    h.wait_s = j.value("wait_s", -1.0);
    out.push_back(h);
  }
  return out;
}

}  // namespace mt
