// label_map.cpp — see label_map.h.
#include "data/topics/label_map.h"

namespace mt {

Result<LabelMap> LabelMap::build(const std::vector<LabelMapEntry>& entries, UnmappedLabel unmapped) {
  LabelMap m;
  m.unmapped_ = unmapped;
  for (size_t i = 0; i < entries.size(); ++i) {
    const LabelMapEntry& e = entries[i];
    if (e.from.empty() || e.to.empty())
      return Status::errorf("topics.map[{}]: \"from\" and \"to\" must both be non-empty", i);
    if (!m.map_.emplace(e.from, e.to).second)
      return Status::errorf("topics.map[{}]: \"{}\" is mapped twice", i, e.from);
  }
  return m;
}

Result<std::string> LabelMap::apply(std::string_view label, std::string_view where) const {
  auto it = map_.find(label);
  if (it != map_.end()) return it->second;
  if (unmapped_ == UnmappedLabel::kError)
    return Status::errorf("{}: topic label \"{}\" is not in topics.map (topics.unmapped = \"error\")", where, label);
  return std::string(label);
}

}  // namespace mt
