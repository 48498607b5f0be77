// quality_levels.h — turning quality scores into ranks and levels. Levels are
// cut within groups (a topic or a source) so that a domain whose text simply
// differs from the rest is never taken for good or bad text: every group gets
// the same share of each level. Ties never fall back to input order.
#pragma once
#include <cstdint>
#include <vector>

namespace mt {

// Rank percentile of every score among all of them, in (0, 1): (r + 0.5) / n
// with r the average rank of its tie group (NaN ranks below everything), so
// the result does not depend on the input order.
std::vector<double> rank_percentiles(const std::vector<double>& score);

// Level in [0, n_levels) per document, ranked by score inside its group:
// 0 for the lowest scores, n_levels - 1 for the highest, equal counts per
// level up to rounding. Equal scores are ordered by `tie_key` (e.g. a
// document hash), then by index (equal keys mean identical documents). NaN
// scores rank lowest. Groups are arbitrary ids. Sizes must agree.
std::vector<int32_t> quantile_levels_within(const std::vector<double>& score, const std::vector<int32_t>& group,
                                            const std::vector<uint64_t>& tie_key, int64_t n_levels);

}  // namespace mt
