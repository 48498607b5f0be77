// heatmap.cpp — see heatmap.h. Cells are shaded on sqrt(tokens / the largest
// bucket's) so that small buckets stay visible next to a dominant one.
#include "data/heatmap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "report/svg.h"

namespace mt {

std::string dataset_heatmap_svg(const Dataset& d, const std::string& title) {
  std::set<std::string> topics, quals;
  int64_t total = 0, largest = 1;
  for (const Bucket& b : d.buckets()) {
    topics.insert(b.topic);
    quals.insert(b.quality);
    total += b.train->n_tokens();
    largest = std::max<int64_t>(largest, b.train->n_tokens());
  }
  report::Heatmap h;
  h.title = title;
  h.subtitle = fmt::format("share of train tokens per bucket (topic rows x quality columns); total {} tokens", total);
  h.rows.assign(topics.begin(), topics.end());
  h.columns.assign(quals.begin(), quals.end());
  h.cells.assign(h.rows.size(), std::vector<std::optional<report::Heatmap::Cell>>(h.columns.size()));
  for (const Bucket& b : d.buckets()) {
    const size_t r = size_t(std::find(h.rows.begin(), h.rows.end(), b.topic) - h.rows.begin());
    const size_t c = size_t(std::find(h.columns.begin(), h.columns.end(), b.quality) - h.columns.begin());
    const int64_t tokens = b.train->n_tokens();
    const double share = total > 0 ? double(tokens) / double(total) : 0.0;
    h.cells[r][c] = report::Heatmap::Cell{
        std::sqrt(double(tokens) / double(largest)), fmt::format("{:.1f}%", 100 * share),
        fmt::format("{}/{}: {} docs, {} tokens ({:.2f}%)", b.topic, b.quality, b.train->n_docs(), tokens, 100 * share)};
  }
  return report::render_svg(h);
}

}  // namespace mt
