// heatmap.h — the topic x quality picture of a dataset for `moetrain data
// inspect`: one cell per bucket (topics in rows, quality labels in columns,
// both sorted), shaded by its share of the train tokens, drawn with
// report/svg.h (a report::Heatmap) as a self-contained SVG.
#pragma once
#include <string>

#include "data/dataset.h"

namespace mt {

std::string dataset_heatmap_svg(const Dataset& d, const std::string& title);

}  // namespace mt
