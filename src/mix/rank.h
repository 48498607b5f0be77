// rank.h — agreement between predicted and observed losses: what the mixture
// search reports for a fitted regressor on held-out proxies. RegMix (Liu et
// al. 2024) judges its regressors by rank correlation, because the search only
// needs the order of mixtures to be right, not the loss values.
#pragma once
#include <vector>

namespace mt::mix {

// Pearson correlation; NaN when n < 2 or either vector is constant.
// Sizes must match (MT_CHECK).
double pearson(const std::vector<double>& a, const std::vector<double>& b);

// Spearman's rho: Pearson of the ranks, ties given their average rank (the
// convention of scipy.stats.spearmanr). NaN when n < 2 or either is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// 1-based ranks of v, ties sharing their average rank.
std::vector<double> average_ranks(const std::vector<double>& v);

}  // namespace mt::mix
