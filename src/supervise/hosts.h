// hosts.h — the hosts a supervised job may run on, and what the supervisor
// knows of each: in use, spare, failed (until it is back after the recovery
// time), or quarantined (failed twice within the window: never used again
// by this run). The hosts file is OpenMPI's: one host a line, optional
// `slots=N` (ranks on it), `#` comments; the last `spares` hosts start as
// spares.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt {

enum class HostState { kActive, kSpare, kFailed, kQuarantined };
const char* host_state_name(HostState s);

struct Host {
  std::string name;
  int64_t slots = 1;
  HostState state = HostState::kActive;
  std::vector<double> failures;  // times (s since the epoch)
  double back_at = 0;            // kFailed: usable again from this time
};

struct HostPolicy {
  double recovery_s = 300;           // a failed host is back after this long
  double quarantine_window_s = 3600; // a second failure within this quarantines it
};

Result<std::vector<Host>> parse_hosts(const std::string& text, const std::string& source, int64_t spares);

// A failure of host `h` at time `now`: failed, or quarantined on its second
// failure within the window. Returns the new state.
HostState mark_failed(Host& h, double now, const HostPolicy& p);
// Failed hosts whose recovery time has passed become spares; returns their names.
std::vector<std::string> recover_hosts(std::vector<Host>& hosts, double now);
// A spare takes a failed host's place: the first spare becomes active. False if none.
bool activate_spare(std::vector<Host>& hosts, std::string* name);
int64_t active_ranks(const std::vector<Host>& hosts);
int64_t usable_ranks(const std::vector<Host>& hosts);  // active + spare

nlohmann::json hosts_to_json(const std::vector<Host>& hosts);
Result<std::vector<Host>> hosts_from_json(const nlohmann::json& j);

}  // namespace mt
