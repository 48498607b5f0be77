// events.cpp — see events.h.
#include "train/events.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace mt {

void append_event(const std::string& run_dir, nlohmann::json event) {
  if (run_dir.empty()) return;
  const auto now = std::chrono::system_clock::now();
  const double t = std::chrono::duration<double>(now.time_since_epoch()).count();
  const std::time_t tt = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char utc[32];
  std::strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
  event["time"] = t;
  event["utc"] = utc;
  const std::string path = run_dir + "/events.jsonl";
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) {
    fmt::print(stderr, "# warning: cannot append to {}\n", path);
    return;
  }
  fmt::print(f, "{}\n", event.dump());
  std::fclose(f);
}

}  // namespace mt
