// failure_sim.cpp — see failure_sim.h. An event loop over checkpoint
// segments: each segment draws the time to the next interruption
// (exponential, memoryless, so a fresh draw per segment is exact) and, when
// the job runs shrunk and rejoins at once, the next rack return.
#include "plan/failure_sim.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

#include "core/check.h"

namespace mt::plan {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

class Sim {
 public:
  explicit Sim(const FailureSimInputs& in) : in_(in), rates_(failure_rates(in.job)) {
    lambda_ = rates_.interruptions_per_h / 3600.0;
    const double rack_rate = in.job.rack_mtbf_h > 0 ? 1.0 / in.job.rack_mtbf_h : 0.0;
    rack_share_ = rates_.interruptions_per_h > 0
                      ? double(std::max<int64_t>(in.job.units_used, 1)) * rack_rate / rates_.interruptions_per_h
                      : 0.0;
    const auto& causes = failure_causes();
    for (size_t i = 0; i < causes.size(); ++i) cum_.push_back((cum_.empty() ? 0 : cum_.back()) + weight(i));
    total_units_ = in.job.units_used + in.job.spare_units;
    // Rejoin at once when a restart costs less than staying shrunk until the next interruption.
    rejoin_at_once_ = rates_.policy == Shortage::kShrink && lambda_ > 0 &&
                      in.job.restart_s < rates_.shrink_fraction / lambda_;
  }

  FailureSimResult run() {
    const double work = in_.work_s, tau = std::max(in_.checkpoint_interval_s, 1e-9), d = in_.checkpoint_write_s;
    const double limit = in_.max_wall_factor * std::max(work, 1.0);
    point(0, 0);
    while (done_ < work) {
      if (t_ > limit) {
        r_.finished = false;
        break;
      }
      const double s = speed();
      const double need = (work - done_) / s;  // wall seconds of compute left at this speed
      const bool last = need <= tau;
      const double comp = last ? need : tau, seg = comp + (last ? 0.0 : d);
      const double e = next_interruption();
      const double back = shortage_ > 0 && rejoin_at_once_ ? next_return() - t_ : kInf;
      if (e < seg && e <= back) {
        t_ += e;
        const double lost = std::min(e, comp) * s;
        point(t_, (done_ + lost) / work);
        point(t_, done_ / work);
        interruption(lost);
        restart();
        continue;
      }
      if (back < seg) {  // a rack is back: checkpoint what was done and restart with every replica
        t_ += back;
        done_ += std::min(back, comp) * s;
        point(t_, done_ / work);
        ++r_.planned_restarts;
        restart();
        continue;
      }
      t_ += seg;
      done_ += comp * s;
      if (!last) r_.checkpoint_s += d;
      if (last || t_ - last_point_ >= work / 1500.0) point(t_, std::min(done_ / work, 1.0));
    }
    end_shrunk();
    r_.wall_s = t_;
    return r_;
  }

 private:
  double weight(size_t i) const { return i < in_.cause_weights.size() ? std::max(in_.cause_weights[i], 0.0) : 0.0; }
  double uniform() { return counter_uniform(in_.seed, draws_++); }
  double exponential(double rate) { return rate > 0 ? -std::log1p(-uniform()) / rate : kInf; }
  double next_interruption() { return exponential(lambda_); }
  double next_return() const { return repairs_.empty() ? kInf : repairs_.top(); }
  int64_t healthy() const { return total_units_ - int64_t(repairs_.size()); }
  void release() {
    while (!repairs_.empty() && repairs_.top() <= t_) repairs_.pop();
  }
  double speed() const { return std::max(1.0 - double(shortage_) * rates_.shrink_fraction, 1e-9); }

  void point(double t, double frac) {
    r_.progress.push_back({t, frac});
    last_point_ = t;
  }

  // One interruption at t_: its cause, and the rack it may take out.
  void interruption(double lost) {
    SimInterruption ev;
    ev.t_s = t_;
    ev.lost_s = lost;
    r_.lost_s += lost;
    double repair_h = 0;
    if (uniform() < rack_share_) {
      ev.cause = -1;
      ev.unit_lost = true;
      repair_h = in_.job.rack_repair_h;
    } else if (!cum_.empty() && cum_.back() > 0) {
      const double u = uniform() * cum_.back();
      ev.cause = int(std::upper_bound(cum_.begin(), cum_.end(), u) - cum_.begin());
      ev.cause = std::min(ev.cause, int(cum_.size()) - 1);
      const bool absorbed = uniform() < rates_.absorbed;
      if (failure_causes()[size_t(ev.cause)].takes_node && !absorbed) {
        ev.unit_lost = true;
        repair_h = in_.job.repair_h;
      }
    }
    if (ev.unit_lost) {
      release();
      repairs_.push(t_ + repair_h * 3600.0);
      ++r_.units_lost;
      ev.spare_used = healthy() >= in_.job.units_used;
      r_.spares_used += ev.spare_used;
    }
    r_.interruptions.push_back(ev);
  }

  // Waits for racks while the job cannot run, then restarts (interruptible); sets the shortage it runs with.
  void restart() {
    end_shrunk();
    shortage_ = 0;
    for (;;) {
      release();
      const int64_t short_units = std::max<int64_t>(0, in_.job.units_used - healthy());
      const bool can_shrink = rates_.policy == Shortage::kShrink &&
                              double(short_units) * rates_.shrink_fraction < 1.0;
      if (short_units > 0 && !can_shrink) {
        const double until = next_return();
        r_.periods.push_back({t_, until, false, 0.0});
        r_.waiting_s += until - t_;
        t_ = until;
        continue;
      }
      const double e = next_interruption();
      if (e < in_.job.restart_s) {
        t_ += e;
        r_.restarting_s += e;
        interruption(0.0);
        continue;
      }
      t_ += in_.job.restart_s;
      r_.restarting_s += in_.job.restart_s;
      shortage_ = short_units;
      shrunk_from_ = t_;
      return;
    }
  }

  // Closes the running-shrunk stretch (if any) at t_.
  void end_shrunk() {
    if (shortage_ > 0 && t_ > shrunk_from_) {
      r_.periods.push_back({shrunk_from_, t_, true, speed()});
      r_.shrunk_s += t_ - shrunk_from_;
    }
    shrunk_from_ = t_;
  }

  const FailureSimInputs& in_;
  const FailureRates rates_;
  double lambda_ = 0, rack_share_ = 0;
  std::vector<double> cum_;
  int64_t total_units_ = 0;
  bool rejoin_at_once_ = false;
  std::priority_queue<double, std::vector<double>, std::greater<double>> repairs_;  // return times
  uint64_t draws_ = 0;
  double t_ = 0, done_ = 0, last_point_ = 0, shrunk_from_ = 0;
  int64_t shortage_ = 0;
  FailureSimResult r_;
};

}  // namespace

double counter_uniform(uint64_t seed, uint64_t i) {
  const uint64_t x = splitmix64(splitmix64(seed) ^ (i * 0xd1b54a32d192ed03ull));
  return double(x >> 11) * 0x1.0p-53;
}

FailureSimResult simulate_failures(const FailureSimInputs& in) {
  MT_CHECK(in.work_s >= 0 && in.checkpoint_interval_s > 0 && in.job.units_used >= 1,
           "work {} s, checkpoint interval {} s, {} racks", in.work_s, in.checkpoint_interval_s, in.job.units_used);
  return Sim(in).run();
}

}  // namespace mt::plan
