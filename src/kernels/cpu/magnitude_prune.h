// magnitude_prune.h — unstructured magnitude pruning of one tensor, for
// sparse weight streaming (docs/streaming.md, after Cerebras' streaming of
// unstructured-sparse weights): keep the `keep` largest |w| and zero the
// rest. Ties at the threshold are kept in index order, so the result is a
// pure function of the values. Also the size of the sparse wire format
// (a presence bitmap plus the kept values) that streaming accounts.
#pragma once
#include <cstdint>

namespace mt {

// Zeroes all but the `keep` largest-magnitude elements of w[0, n), using
// scratch[0, n). Returns the number of nonzeros left (<= keep).
int64_t prune_to_largest(float* w, int64_t n, int64_t keep, float* scratch);

// Bytes of n elements with `nonzeros` kept, as a bitmap of n bits plus the
// kept values in fp32.
inline int64_t sparse_wire_bytes(int64_t n, int64_t nonzeros) { return (n + 7) / 8 + 4 * nonzeros; }

}  // namespace mt
