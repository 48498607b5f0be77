// domains.h — what the mixture search varies: domains, each a fixed blend of
// buckets. Searching over domains instead of buckets cuts the dimension (and
// so the proxies needed): one domain per bucket, per topic or per quality
// level, or, for mixture reuse (Olmix), only the buckets that changed since
// the last search, with everything else frozen at its previous proportions in
// one virtual domain. A domain weight vector expands to bucket weights by
// w_b = sum_d weight_d * inner_{d,b}.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt::mix {

struct Domain {
  std::string name;
  std::vector<int64_t> buckets;  // indices into the bucket list
  std::vector<double> inner;     // fixed proportions inside the domain, one per bucket, sum 1
};

// One domain per bucket, named after it.
std::vector<Domain> bucket_domains(const std::vector<std::string>& bucket_names);

// Buckets grouped by one part of their "topic<sep>quality" name: part 0 the
// text before the first sep, part 1 the text after it (a name without sep is
// its own group under its full name). Groups appear in order of their first
// bucket; inner = each bucket's share of the group's natural total (uniform
// when the group's natural total is 0). natural: one per bucket (MT_CHECK).
std::vector<Domain> grouped_domains(const std::vector<std::string>& bucket_names, const std::vector<double>& natural,
                                    char sep, int part);

// Mixture reuse (Olmix): every bucket marked changed, and every new bucket
// (previous weight 0), is a domain of its own, in bucket order; the rest form
// one domain named "unchanged", last, whose inner proportions are their
// previous relative weights. Errors: sizes differ, a previous weight negative
// or non-finite, nothing changed or new (reuse the previous mixture as it
// is), or no unchanged bucket with weight left (search from scratch instead).
Result<std::vector<Domain>> reuse_domains(const std::vector<std::string>& bucket_names,
                                          const std::vector<double>& previous, const std::vector<bool>& changed);

// Bucket weights (n_buckets) from domain weights (one per domain).
std::vector<double> expand(const std::vector<Domain>& domains, const std::vector<double>& domain_weights,
                           int64_t n_buckets);

// A domain's cap: the largest weight that keeps every bucket in it under its
// cap, min_b cap_b / inner_b, at most 1. Buckets with inner 0 do not bind.
std::vector<double> domain_caps(const std::vector<Domain>& domains, const std::vector<double>& bucket_caps);

// A domain's centre: the sum of the bucket shares (e.g. natural) in it.
std::vector<double> domain_center(const std::vector<Domain>& domains, const std::vector<double>& bucket_shares);

}  // namespace mt::mix
