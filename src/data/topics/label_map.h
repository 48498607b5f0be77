// label_map.h — topic labels that come with the data (a JSONL topic_field,
// a fastText "__label__en") renamed through the config before they become
// bucket names: [[topics.map]] from = "python", to = "code". Several labels
// may map to one topic; a label maps as a whole string, case-sensitive.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mt {

// What happens to a label the table does not list.
enum class UnmappedLabel { kPass, kError };  // config: pass|error

struct LabelMapEntry {
  std::string from;  // the label as the source spells it
  std::string to;    // the topic it becomes
};

class LabelMap {
 public:
  // Errors: an empty `from` or `to`, or a `from` listed twice (even with the
  // same target: the second line is a mistake either way).
  static Result<LabelMap> build(const std::vector<LabelMapEntry>& entries, UnmappedLabel unmapped);

  // The mapped topic; an unlisted label passes through unchanged or is an
  // error naming `where` (e.g. "data.jsonl:12") and the label.
  Result<std::string> apply(std::string_view label, std::string_view where) const;
  bool empty() const { return map_.empty(); }

 private:
  std::map<std::string, std::string, std::less<>> map_;
  UnmappedLabel unmapped_ = UnmappedLabel::kPass;
};

}  // namespace mt
