// param_layout.cpp — append-only layout with name lookup.
#include "model/param_layout.h"

#include <algorithm>

#include "core/check.h"

namespace mt {

int64_t ParamLayout::add(std::string name, std::vector<int64_t> shape, ParamKind kind, int64_t layer,
                         int64_t expert) {
  MT_CHECK(by_name_.find(name) == by_name_.end(), "duplicate parameter {}", name);
  ParamEntry e;
  e.numel = 1;
  for (int64_t s : shape) e.numel *= s;
  e.name = std::move(name);
  e.shape = std::move(shape);
  e.offset = total_;
  e.kind = kind;
  e.layer = layer;
  e.expert = expert;
  total_ += e.numel;
  by_name_[e.name] = entries_.size();
  entries_.push_back(std::move(e));
  return entries_.back().offset;
}

const ParamEntry* ParamLayout::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::pair<int64_t, int64_t> ParamLayout::layer_range(int64_t layer) const {
  int64_t lo = total_, hi = 0;
  for (const auto& e : entries_)
    if (e.layer == layer) {
      lo = std::min(lo, e.offset);
      hi = std::max(hi, e.offset + e.numel);
    }
  return {lo, hi};
}

}  // namespace mt
