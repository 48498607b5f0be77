// topic_metrics.h — agreement between a clustering and reference labels.
// NMI: mutual information normalised by the arithmetic mean of the two
// entropies (Strehl & Ghosh 2002 use the geometric mean; the arithmetic one is
// scikit-learn's default, so numbers compare with published ones). Purity:
// the fraction of documents whose cluster's majority label is their own
// (Manning et al. 2008, §16.3). Labels are any int32 ids.
#pragma once
#include <cstdint>
#include <vector>

namespace mt {

// In [0, 1]; 1 = the same partition up to renaming. Both partitions trivial
// (one group each) count as 1.
double nmi(const std::vector<int32_t>& clusters, const std::vector<int32_t>& truth);

// In (0, 1]; 1 = no cluster mixes reference labels. Grows with the number of
// clusters (one document per cluster is pure), so compare at equal k.
double purity(const std::vector<int32_t>& clusters, const std::vector<int32_t>& truth);

}  // namespace mt
