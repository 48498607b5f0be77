// verifier.h — whether a model's completion answers a task item: the exact
// check RL rewards and evaluation scores come from (rule-based rewards, as in
// DeepSeekMath's GRPO and TRL's accuracy rewards: no learned judge).
//
// The answer is the completion's first line (up to "\n", which ends a
// sampled answer), with spaces and tabs trimmed at both ends. How it is
// compared with the item's answer is the item's check, by default its
// family's:
//   integer  the line is a whole decimal integer (optional sign) equal in
//            value to the answer's: " 0042" is 42, "42 apples" is not 42
//   list     the same whitespace-separated tokens in the same order
//   text     the trimmed line equals the trimmed answer byte for byte
//   exact    the completion equals the answer byte for byte (no trimming,
//            no line cut): the passkey's and every unknown family's check,
//            lm-evaluation-harness' exact_match without stop strings
// A completion that cannot be read as the check's kind (a word where an
// integer belongs) is wrong, and also reported as not well formed: RL runs
// watch that rate separately from accuracy.
#pragma once
#include <string>
#include <string_view>

#include "core/status.h"

namespace mt {

enum class CheckKind { kExact, kInteger, kList, kText };

const char* check_name(CheckKind k);  // "exact", "integer", "list", "text"
// The kind a name stands for; an error lists the names.
Result<CheckKind> parse_check(std::string_view name);
// A family's default check: integer for add, mul, lineq, multistep, calc and kv;
// list for sort and reverse; text for strings and copy; exact otherwise.
CheckKind default_check(std::string_view family);

struct Verdict {
  bool correct = false;
  bool well_formed = false;  // the answer line reads as the check's kind
  std::string extracted;     // the answer line (exact: the whole completion)
};

Verdict verify(CheckKind kind, std::string_view answer, std::string_view completion);

// The first line of a completion with spaces and tabs trimmed.
std::string answer_line(std::string_view completion);

}  // namespace mt
