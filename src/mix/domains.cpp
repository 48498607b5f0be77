// domains.cpp — see domains.h.
#include "mix/domains.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/check.h"

namespace mt::mix {
namespace {

void check_buckets(const std::vector<Domain>& domains, size_t n_buckets) {
  for (const Domain& d : domains) {
    MT_CHECK(d.buckets.size() == d.inner.size(), "domain '{}': {} buckets, {} inner shares", d.name,
             d.buckets.size(), d.inner.size());
    for (int64_t b : d.buckets)
      MT_CHECK(b >= 0 && size_t(b) < n_buckets, "domain '{}': bucket {} out of {}", d.name, b, n_buckets);
  }
}

}  // namespace

std::vector<Domain> bucket_domains(const std::vector<std::string>& bucket_names) {
  std::vector<Domain> out;
  out.reserve(bucket_names.size());
  for (size_t b = 0; b < bucket_names.size(); ++b) out.push_back({bucket_names[b], {int64_t(b)}, {1.0}});
  return out;
}

std::vector<Domain> grouped_domains(const std::vector<std::string>& bucket_names, const std::vector<double>& natural,
                                    char sep, int part) {
  MT_CHECK(natural.size() == bucket_names.size(), "{} names, {} natural shares", bucket_names.size(),
           natural.size());
  MT_CHECK(part == 0 || part == 1, "part = {}", part);
  std::vector<Domain> out;
  std::map<std::string, size_t> index;
  for (size_t b = 0; b < bucket_names.size(); ++b) {
    const std::string& n = bucket_names[b];
    const size_t at = n.find(sep);
    const std::string key = at == std::string::npos ? n : (part == 0 ? n.substr(0, at) : n.substr(at + 1));
    auto [it, fresh] = index.emplace(key, out.size());
    if (fresh) out.push_back({key, {}, {}});
    out[it->second].buckets.push_back(int64_t(b));
    out[it->second].inner.push_back(natural[b]);
  }
  for (Domain& d : out) {
    double total = 0;
    for (double x : d.inner) total += x;
    for (double& x : d.inner) x = total > 0 ? x / total : 1.0 / double(d.inner.size());
  }
  return out;
}

Result<std::vector<Domain>> reuse_domains(const std::vector<std::string>& bucket_names,
                                          const std::vector<double>& previous, const std::vector<bool>& changed) {
  const size_t n = bucket_names.size();
  if (previous.size() != n || changed.size() != n)
    return Status::errorf("{} buckets but {} previous weights and {} changed flags", n, previous.size(),
                          changed.size());
  std::vector<Domain> out;
  Domain frozen{"unchanged", {}, {}};
  double frozen_total = 0;
  for (size_t b = 0; b < n; ++b) {
    if (!(previous[b] >= 0) || !std::isfinite(previous[b]))
      return Status::errorf("bucket '{}': previous weight {} must be finite and >= 0", bucket_names[b], previous[b]);
    if (changed[b] || previous[b] == 0) {
      out.push_back({bucket_names[b], {int64_t(b)}, {1.0}});
    } else {
      frozen.buckets.push_back(int64_t(b));
      frozen.inner.push_back(previous[b]);
      frozen_total += previous[b];
    }
  }
  if (out.empty())
    return Status::error("mixture reuse: no bucket is changed or new, so the previous mixture stands as it is");
  if (frozen_total <= 0)
    return Status::error(
        "mixture reuse: every bucket with previous weight is marked changed, so nothing is reused; "
        "search all buckets instead");
  for (double& x : frozen.inner) x /= frozen_total;
  out.push_back(std::move(frozen));
  return out;
}

std::vector<double> expand(const std::vector<Domain>& domains, const std::vector<double>& domain_weights,
                           int64_t n_buckets) {
  MT_CHECK(domain_weights.size() == domains.size(), "{} domains, {} weights", domains.size(), domain_weights.size());
  MT_CHECK(n_buckets >= 0, "n_buckets = {}", n_buckets);
  check_buckets(domains, size_t(n_buckets));
  std::vector<double> w(size_t(n_buckets), 0.0);
  for (size_t d = 0; d < domains.size(); ++d)
    for (size_t j = 0; j < domains[d].buckets.size(); ++j)
      w[size_t(domains[d].buckets[j])] += domain_weights[d] * domains[d].inner[j];
  return w;
}

std::vector<double> domain_caps(const std::vector<Domain>& domains, const std::vector<double>& bucket_caps) {
  check_buckets(domains, bucket_caps.size());
  std::vector<double> caps(domains.size(), 1.0);
  for (size_t d = 0; d < domains.size(); ++d)
    for (size_t j = 0; j < domains[d].buckets.size(); ++j)
      if (domains[d].inner[j] > 0)
        caps[d] = std::min(caps[d], bucket_caps[size_t(domains[d].buckets[j])] / domains[d].inner[j]);
  return caps;
}

std::vector<double> domain_center(const std::vector<Domain>& domains, const std::vector<double>& bucket_shares) {
  check_buckets(domains, bucket_shares.size());
  std::vector<double> c(domains.size(), 0.0);
  for (size_t d = 0; d < domains.size(); ++d)
    for (int64_t b : domains[d].buckets) c[d] += bucket_shares[size_t(b)];
  return c;
}

}  // namespace mt::mix
