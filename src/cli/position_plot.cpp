// position_plot.cpp — see position_plot.h.
#include "cli/position_plot.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "report/svg.h"

namespace mt {
namespace {

constexpr size_t kMaxBuckets = 8;

// (geometric middle of the bin, loss) of each bin that holds tokens; and the tokens in all.
std::pair<report::Series, int64_t> series_of(const std::string& name, const nlohmann::json& bins) {
  report::Series s;
  s.name = name;
  s.markers = true;
  int64_t tokens = 0;
  for (const auto& b : bins) {
    const int64_t n = b.value("tokens", int64_t{0});
    if (n <= 0 || !b["loss"].is_number()) continue;
    tokens += n;
    s.points.emplace_back(std::sqrt(b["from"].get<double>() * b["to"].get<double>()), b["loss"].get<double>());
  }
  return {s, tokens};
}

}  // namespace

std::string position_loss_svg(const nlohmann::json& held_out, int64_t trained_seq_len, const std::string& title) {
  report::LineChart c;
  c.title = title;
  c.x = {"tokens of context (position in the document)", report::Scale::kLog, {}, {}, {}};
  c.y = {"held-out loss (nats per token)", report::Scale::kLinear, {}, {}, {}};
  auto [all, n_all] = series_of("all buckets", held_out.value("position_loss", nlohmann::json::array()));
  all.color = "#000";
  std::vector<std::pair<report::Series, int64_t>> buckets;
  const nlohmann::json per_bucket = held_out.value("bucket_position_loss", nlohmann::json::object());
  for (const auto& [name, bins] : per_bucket.items()) buckets.push_back(series_of(name, bins));
  std::stable_sort(buckets.begin(), buckets.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (buckets.size() > kMaxBuckets) buckets.resize(kMaxBuckets);
  for (auto& [s, n] : buckets) {
    s.dashed = true;
    c.series.push_back(std::move(s));
  }
  c.series.push_back(std::move(all));
  // The same tokens with halving context (train/context_loss.h): only the context differs between its points.
  if (held_out.contains("context_loss")) {
    const nlohmann::json& ctx = held_out["context_loss"];
    report::Series same;
    same.name = "same tokens, less context (each window's last " +
                std::to_string(ctx.value("scored_per_window", int64_t{0})) + ")";
    same.markers = true;
    same.color = "#c0392b";
    for (const auto& r : ctx["lengths"])
      if (r["loss"].is_number()) same.points.emplace_back(r["context"].get<double>(), r["loss"].get<double>());
    std::reverse(same.points.begin(), same.points.end());  // shortest context first, left to right
    if (!same.points.empty()) c.series.push_back(std::move(same));
  }
  if (trained_seq_len > 0) c.vlines.push_back({double(trained_seq_len), "trained length"});
  return report::render_svg(c);
}

}  // namespace mt
