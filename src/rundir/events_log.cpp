// events_log.cpp — see events_log.h.
#include "rundir/events_log.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <fstream>

namespace mt {

std::string events_path(const std::string& run_dir) { return run_dir + "/events.jsonl"; }

void append_event(const std::string& run_dir, nlohmann::json event, FileSystem& fs) {
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
  const std::string line = event.dump() + "\n";
  const std::string path = events_path(run_dir);
  auto f = fs.new_appendable_file(path);
  Status s = f ? (*f)->append(line.data(), int64_t(line.size())) : f.status();
  if (s && f) s = (*f)->close();
  if (!s) fmt::print(stderr, "# warning: {}: event not logged: {}\n", path, s.message());
}

std::vector<nlohmann::json> read_events(const std::string& run_dir, const std::string& kind) {
  std::vector<nlohmann::json> out;
  std::ifstream in(events_path(run_dir));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("event") || !j["event"].is_string() || !j.contains("time")) continue;
    if (!kind.empty() && j["event"] != kind) continue;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace mt
