// hosts.cpp — see hosts.h.
#include "supervise/hosts.h"

#include <fmt/format.h>

#include <sstream>

namespace mt {

const char* host_state_name(HostState s) {
  switch (s) {
    case HostState::kActive: return "active";
    case HostState::kSpare: return "spare";
    case HostState::kFailed: return "failed";
    case HostState::kQuarantined: return "quarantined";
  }
  return "?";
}

Result<std::vector<Host>> parse_hosts(const std::string& text, const std::string& source, int64_t spares) {
  std::vector<Host> hosts;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    Host h;
    h.name = name;
    for (std::string w; words >> w;) {
      long long n = 0;
      char extra = 0;
      if (std::sscanf(w.c_str(), "slots=%lld%c", &n, &extra) != 1 || n < 1 || n > 4096)
        return Status::errorf("{}:{}: expected `slots=N` (N in [1, 4096]) after the host name, got \"{}\"", source,
                              line_no, w);
      h.slots = n;
    }
    for (const Host& o : hosts)
      if (o.name == h.name) return Status::errorf("{}:{}: host {} is listed twice", source, line_no, h.name);
    hosts.push_back(h);
  }
  if (hosts.empty()) return Status::errorf("{}: no hosts", source);
  if (spares < 0 || spares >= int64_t(hosts.size()))
    return Status::errorf("{}: --spares {} must leave at least one of the {} hosts to run on", source, spares,
                          hosts.size());
  for (int64_t i = int64_t(hosts.size()) - spares; i < int64_t(hosts.size()); ++i)
    hosts[size_t(i)].state = HostState::kSpare;
  return hosts;
}

HostState mark_failed(Host& h, double now, const HostPolicy& p) {
  const bool again = !h.failures.empty() && now - h.failures.back() < p.quarantine_window_s;
  h.failures.push_back(now);
  h.state = again ? HostState::kQuarantined : HostState::kFailed;
  h.back_at = now + p.recovery_s;
  return h.state;
}

std::vector<std::string> recover_hosts(std::vector<Host>& hosts, double now) {
  std::vector<std::string> back;
  for (Host& h : hosts)
    if (h.state == HostState::kFailed && now >= h.back_at) {
      h.state = HostState::kSpare;
      back.push_back(h.name);
    }
  return back;
}

bool activate_spare(std::vector<Host>& hosts, std::string* name) {
  for (Host& h : hosts)
    if (h.state == HostState::kSpare) {
      h.state = HostState::kActive;
      if (name) *name = h.name;
      return true;
    }
  return false;
}

int64_t active_ranks(const std::vector<Host>& hosts) {
  int64_t n = 0;
  for (const Host& h : hosts) n += h.state == HostState::kActive ? h.slots : 0;
  return n;
}

int64_t usable_ranks(const std::vector<Host>& hosts) {
  int64_t n = 0;
  for (const Host& h : hosts) n += h.state == HostState::kActive || h.state == HostState::kSpare ? h.slots : 0;
  return n;
}

nlohmann::json hosts_to_json(const std::vector<Host>& hosts) {
  nlohmann::json a = nlohmann::json::array();
  for (const Host& h : hosts)
    a.push_back({{"name", h.name},
                 {"slots", h.slots},
                 {"state", host_state_name(h.state)},
                 {"failures", h.failures},
                 {"back_at", h.back_at}});
  return a;
}

Result<std::vector<Host>> hosts_from_json(const nlohmann::json& j) {
  std::vector<Host> hosts;
  if (!j.is_array()) return Status::error("supervisor state: hosts is not an array");
  for (const auto& e : j) {
    Host h;
    h.name = e.value("name", std::string());
    h.slots = e.value("slots", int64_t(1));
    const std::string s = e.value("state", std::string("active"));
    h.state = s == "spare" ? HostState::kSpare : s == "failed" ? HostState::kFailed
              : s == "quarantined" ? HostState::kQuarantined : HostState::kActive;
    h.failures = e.value("failures", std::vector<double>{});
    h.back_at = e.value("back_at", 0.0);
    hosts.push_back(h);
  }
  return hosts;
}

}  // namespace mt
