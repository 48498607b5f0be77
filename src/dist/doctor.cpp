// doctor.cpp — see doctor.h.
#include "dist/doctor.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "core/timer.h"
#include "dist/health_check.h"
#include "dist/mpi_comm.h"
#include "dist/ping_pong.h"

namespace mt {
namespace {

// A rank whose wall clock is further than this from rank 0's fails: logs,
// events and checkpoints of one run are compared by timestamp. The barrier
// that aligns the ranks adds its own skew (milliseconds when oversubscribed).
constexpr double kMaxClockOffsetS = 0.25;
// A link slower than this fraction of the median link fails (needs >= 3 links).
constexpr double kSlowLinkFraction = 0.25;

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

void gemm_rows(Comm& world, std::vector<DoctorRow>& rows) {
  const GemmVerdict v = check_gemm_all_ranks(world);
  std::vector<std::string> hashes;
  for (const GemmProbe& p : v.probes) hashes.push_back(hex64(p.hash));
  const std::vector<int> odd = minority_ranks(hashes);
  for (int r = 0; r < int(v.probes.size()); ++r) {
    const GemmProbe& p = v.probes[r];
    rows.push_back({"gemm-reference", r, p.max_error <= kGemmTolerance, p.seconds,
                    fmt::format("max error {:.1e} of sum|AB| (tolerance {:.0e}), {}x{}x{} fp32", p.max_error,
                                kGemmTolerance, kProbeM, kProbeN, kProbeK)});
    const bool agrees = std::find(odd.begin(), odd.end(), r) == odd.end();
    rows.push_back({"gemm-ranks-agree", r, agrees, p.seconds,
                    fmt::format("hash {}{}", hashes[r], agrees ? "" : " differs from the majority's")});
    rows.push_back({"nan-scan", r, p.non_finite == 0, p.seconds, fmt::format("{} NaN/Inf outputs", p.non_finite)});
  }
}

void memory_rows(Comm& world, int64_t bytes, std::vector<DoctorRow>& rows) {
  const MemoryTest m = run_memory_test(bytes);
  const auto all =
      world.allgather_strings(fmt::format("{} {:.17g} {:.17g}", m.mismatches, m.seconds, m.gb_per_s), "doctor memory");
  for (int r = 0; r < int(all.size()); ++r) {
    long long bad = 0;
    double s = 0, gbs = 0;
    std::sscanf(all[r].c_str(), "%lld %lf %lf", &bad, &s, &gbs);
    rows.push_back({"memory", r, bad == 0, s,
                    fmt::format("{} MiB x 4 patterns, {} bad words, {:.1f} GB/s", bytes >> 20, bad, gbs)});
  }
}

// Every pair in a fixed order, one at a time (a barrier between pairs, so
// links do not share the measurement). Each pair's lower rank reports it.
Status link_rows(Comm& world, const DoctorOptions& a, std::vector<DoctorRow>& rows, std::string& slowest) {
  const int P = world.size(), me = world.rank();
  nlohmann::json mine = nlohmann::json::array();
  for (int x = 0; x < P; ++x)
    for (int y = x + 1; y < P; ++y) {
      world.barrier("doctor link");
      if (me != x && me != y) continue;
      const double t0 = now_seconds();
      auto t = ping_pong(world, x, y, a.bandwidth_bytes, 10, a.timeout_s);
      if (!t) return Status::errorf("link {} <-> {}: {}", x, y, t.status().message());
      if (me == x) mine.push_back({x, y, t->latency_s, t->bandwidth_gbs, now_seconds() - t0});
    }
  std::vector<nlohmann::json> links;
  for (const std::string& s : world.allgather_strings(mine.dump(), "doctor links"))
    for (const auto& l : nlohmann::json::parse(s)) links.push_back(l);
  if (links.empty()) return Status::ok();
  std::vector<double> bw;
  for (const auto& l : links) bw.push_back(l[3].get<double>());
  std::vector<double> sorted = bw;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  size_t worst = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    if (bw[i] < bw[worst]) worst = i;
    const bool pass = links.size() < 3 || bw[i] >= kSlowLinkFraction * median;
    rows.push_back({"link", -1, pass, links[i][4].get<double>(),
                    fmt::format("{} <-> {}: latency {:.1f} us, {:.2f} GB/s ({} B messages){}", links[i][0].get<int>(),
                                links[i][1].get<int>(), 1e6 * links[i][2].get<double>(), bw[i], a.bandwidth_bytes,
                                pass ? "" : fmt::format(" < {} x median {:.2f} GB/s", kSlowLinkFraction, median))});
  }
  slowest = fmt::format("{} <-> {} ({:.2f} GB/s)", links[worst][0].get<int>(), links[worst][1].get<int>(), bw[worst]);
  return Status::ok();
}

// Wall-clock offset of every rank from rank 0: the smallest |offset| of a
// few barrier-aligned readings (the barrier's exit skew only adds to it).
void clock_rows(Comm& world, std::vector<DoctorRow>& rows) {
  const double t0 = now_seconds();
  std::vector<double> best(world.size(), INFINITY);
  for (int round = 0; round < 5; ++round) {
    world.barrier("doctor clock");
    const double wall = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const auto all = world.allgather_strings(fmt::format("{:.9f}", wall), "doctor clock");
    const double ref = std::stod(all[0]);
    for (int r = 0; r < world.size(); ++r) {
      const double off = std::stod(all[r]) - ref;
      if (std::fabs(off) < std::fabs(best[r])) best[r] = off;
    }
  }
  const double s = now_seconds() - t0;
  for (int r = 0; r < world.size(); ++r)
    rows.push_back(
        {"clock", r, std::fabs(best[r]) <= kMaxClockOffsetS, s,
         fmt::format("offset from rank 0 {:+.3f} ms (limit {:.0f} ms)", 1e3 * best[r], 1e3 * kMaxClockOffsetS)});
}

void binary_rows(Comm& world, std::vector<DoctorRow>& rows) {
  const double t0 = now_seconds();
  auto h = hash_file("/proc/self/exe");
  const std::string mine = h ? hex64(h.value()) : "unreadable: " + h.status().message();
  const double s = now_seconds() - t0;
  const auto all = world.allgather_strings(fmt::format("{:.6f} {}", s, mine), "doctor binary");
  std::vector<std::string> hashes;
  for (const std::string& x : all) hashes.push_back(x.substr(x.find(' ') + 1));
  const std::vector<int> odd = minority_ranks(hashes);
  for (int r = 0; r < int(all.size()); ++r) {
    const bool agrees = std::find(odd.begin(), odd.end(), r) == odd.end();
    const bool pass = agrees && hashes[r].rfind("unreadable", 0) != 0;
    rows.push_back(
        {"binary", r, pass, std::stod(all[r]),
         fmt::format("xxh64(/proc/self/exe) {}{}", hashes[r], agrees ? "" : " differs from the majority's")});
  }
}

}  // namespace

Result<DoctorReport> run_doctor(Comm& world, const DoctorOptions& opt) {
  DoctorReport rep;
  rep.hosts = world.allgather_strings(hostname(), "doctor hosts");
  set_comm_context("doctor: gemm");
  gemm_rows(world, rep.rows);
  set_comm_context("doctor: memory");
  memory_rows(world, opt.memory_mib << 20, rep.rows);
  set_comm_context("doctor: links");
  MT_RETURN_IF_ERROR(link_rows(world, opt, rep.rows, rep.slowest_link));
  set_comm_context("doctor: clock");
  clock_rows(world, rep.rows);
  binary_rows(world, rep.rows);
  for (const DoctorRow& r : rep.rows)
    if (!r.pass) {
      rep.failures.push_back(r.rank < 0 ? fmt::format("link {}", r.detail.substr(0, r.detail.find(':')))
                                        : fmt::format("rank {} ({})", r.rank, r.check));
      if (r.rank >= 0 &&
          std::find(rep.culprit_ranks.begin(), rep.culprit_ranks.end(), r.rank) == rep.culprit_ranks.end())
        rep.culprit_ranks.push_back(r.rank);
    }
  std::sort(rep.culprit_ranks.begin(), rep.culprit_ranks.end());
  return rep;
}

}  // namespace mt
