// heatmap.h — the topic x quality picture of a dataset for `moetrain data
// inspect`: a self-contained SVG, one cell per bucket, shaded by its share of
// the corpus tokens (the HTML page around it is built with report/html.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mt {

struct BucketCell {
  std::string topic, quality;
  int64_t documents = 0, tokens = 0, eval_tokens = 0;
};

// Rows: topics (sorted), columns: quality labels (sorted); empty cells stay blank.
std::string heatmap_svg(const std::vector<BucketCell>& cells, const std::string& title);

}  // namespace mt
