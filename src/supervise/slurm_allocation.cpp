// slurm_allocation.cpp — see slurm_allocation.h.
#include "supervise/slurm_allocation.h"

#include <fmt/format.h>

#include <cstdlib>

namespace mt {
namespace {

// Top-level commas only: those inside brackets separate ranges.
std::vector<std::string> split_outside_brackets(const std::string& s) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(const std::string& list, const std::string& variable) {
  std::vector<std::string> hosts;
  auto bad = [&](const std::string& why) {
    return Status::errorf("{}=\"{}\": {} (expected a Slurm hostlist such as \"gpu[01-03,7],login2\")", variable, list,
                          why);
  };
  for (const std::string& item : split_outside_brackets(list)) {
    if (item.empty()) return bad("an empty host name");
    const size_t open = item.find('[');
    if (open == std::string::npos) {
      if (item.find(']') != std::string::npos) return bad("']' without '['");
      hosts.push_back(item);
      continue;
    }
    const size_t close = item.find(']', open);
    if (close == std::string::npos) return bad("'[' without ']'");
    const std::string prefix = item.substr(0, open), suffix = item.substr(close + 1);
    if (suffix.find_first_of("[]") != std::string::npos) return bad("more than one bracket group in \"" + item + "\"");
    std::string ranges = item.substr(open + 1, close - open - 1);
    size_t at = 0;
    while (at <= ranges.size()) {
      const size_t comma = std::min(ranges.find(',', at), ranges.size());
      const std::string r = ranges.substr(at, comma - at);
      const size_t dash = r.find('-');
      const std::string lo = r.substr(0, dash), hi = dash == std::string::npos ? lo : r.substr(dash + 1);
      if (!all_digits(lo) || !all_digits(hi) || lo.size() > 9 || hi.size() > 9)
        return bad("\"" + r + "\" is not N or N-M");
      const long a = std::strtol(lo.c_str(), nullptr, 10), b = std::strtol(hi.c_str(), nullptr, 10);
      if (b < a) return bad("\"" + r + "\" runs backwards");
      if (b - a > 100000) return bad("\"" + r + "\" is too long a range");
      for (long n = a; n <= b; ++n) hosts.push_back(prefix + fmt::format("{:0{}d}", n, int(lo.size())) + suffix);
      at = comma + 1;
    }
  }
  return hosts;
}

Result<std::vector<int64_t>> expand_tasks_per_node(const std::string& value, const std::string& variable) {
  std::vector<int64_t> counts;
  for (const std::string& item : split_outside_brackets(value)) {
    long long n = 0, times = 1;
    char extra = 0;
    const bool ok =
        (!item.empty() && item.back() == ')' && std::sscanf(item.c_str(), "%lld(x%lld)%c", &n, &times, &extra) == 2) ||
        (std::sscanf(item.c_str(), "%lld%c", &n, &extra) == 1 && all_digits(item));
    if (!ok || n < 1 || times < 1 || times > 100000)
      return Status::errorf("{}=\"{}\": \"{}\" is not N or N(xK) with N, K >= 1", variable, value, item);
    counts.insert(counts.end(), size_t(times), n);
  }
  return counts;
}

const char* process_env(const char* name) { return std::getenv(name); }

bool in_slurm_allocation(const EnvLookup& env) {
  const char* id = env("SLURM_JOB_ID");
  return id && *id;
}

Result<std::vector<Host>> allocation_hosts(int64_t spares, const EnvLookup& env) {
  if (!in_slurm_allocation(env))
    return Status::error("not inside a Slurm allocation: SLURM_JOB_ID is not set (start it inside sbatch or salloc)");
  const char* list = env("SLURM_JOB_NODELIST");
  if (!list || !*list) return Status::error("SLURM_JOB_NODELIST is not set: the allocation names no hosts");
  auto names = expand_hostlist(list, "SLURM_JOB_NODELIST");
  if (!names) return names.status();
  std::vector<int64_t> slots;
  if (const char* tpn = env("SLURM_TASKS_PER_NODE"); tpn && *tpn) {
    auto c = expand_tasks_per_node(tpn, "SLURM_TASKS_PER_NODE");
    if (!c) return c.status();
    if (c->size() != names->size())
      return Status::errorf("SLURM_TASKS_PER_NODE=\"{}\" gives {} counts for the {} hosts of SLURM_JOB_NODELIST=\"{}\"",
                            tpn, c->size(), names->size(), list);
    slots = std::move(c.value());
  } else if (const char* ntpn = env("SLURM_NTASKS_PER_NODE"); ntpn && *ntpn) {
    auto c = expand_tasks_per_node(ntpn, "SLURM_NTASKS_PER_NODE");
    if (!c) return c.status();
    if (c->size() != 1) return Status::errorf("SLURM_NTASKS_PER_NODE=\"{}\": expected one count", ntpn);
    slots.assign(names->size(), c->front());
  } else {
    return Status::error(
        "neither SLURM_TASKS_PER_NODE nor SLURM_NTASKS_PER_NODE is set: ask the allocation for tasks (sbatch -n N or "
        "--ntasks-per-node=N)");
  }
  std::string text;
  for (size_t i = 0; i < names->size(); ++i) text += fmt::format("{} slots={}\n", (*names)[i], slots[i]);
  return parse_hosts(text, "the Slurm allocation (SLURM_JOB_NODELIST)", spares);
}

}  // namespace mt
