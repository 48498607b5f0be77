// task_families.h — built-in families of verifiable tasks a small model can
// learn, for post-training (RL rewards, distillation prompts, SFT data) and
// for evaluation: each item a prompt, its one right answer and the family
// whose check (train/verifier.h) decides a completion.
//
//   add        Q: 482+917=? A:               -> " 1399"       digits per operand
//   mul        Q: 48*91=? A:                 -> " 4368"       digits per operand
//   lineq      Q: 7x+31=290, x=? A:          -> " 37"         digits of x and of the constant
//   multistep  Q: a=17; b=a+4; c=b*2; c=? A: -> " 42"         digits of a, steps after it
//   sort       Q: sort k d a z A:            -> " a d k z"    length of the letter list
//   reverse    Q: reverse k d a z A:         -> " z a d k"    length
//   strings    Q: upper kdaz A: -> " KDAZ"; Q: shift 2 kdaz A: -> " mfcb";
//              Q: double kdaz A: -> " kkddaazz"               length of the word
//   copy       Q: repeat 4819 A:             -> " 4819"       length in digits
//   calc       Q: 347*829=? A:               -> " 287663"     digits per operand; agentic: a
//              calculator answers <tool>347*829</tool>
//   kv         Q: add 7 to k2, then say k2 A: -> " 64"        digits of the stored values;
//              agentic: a key-value store (k1..k4) the model reads and
//              writes with <tool>get k2</tool>, <tool>set k2 64</tool>;
//              right only if k2 holds 64 at the end (train/environment.h)
//
// The "Q: ... A:" frame and the answer's leading space keep one convention
// for every family (and the passkey's): the answer is the literal
// continuation of the prompt, so a training document is prompt + answer +
// "\n" and the model learns to end an answer with the newline that stops
// sampling.
//
// Items are a pure function of the options: Philox (core/rng.h) at (seed,
// item stream, draw), the split in the stream's top bit. A problem is
// held-out or train by a fixed hash of its key (problem_key: the prompt, and
// kv's store) alone (one in five is
// held-out), never by the seed, so every train file and every held-out file
// made with any seeds and knobs share no item; within a file no prompt
// repeats (a draw already taken is drawn again), and knobs that leave fewer
// distinct problems than --n are refused, naming the count.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "train/gen_tasks.h"
#include "train/passkey.h"

namespace mt {

struct FamilyOptions {
  std::string family;  // one of task_families()
  int64_t n = 100;
  uint64_t seed = 1;
  TaskSplit split = TaskSplit::kHeldOut;
  int64_t digits = 3;  // add, mul, lineq, multistep
  int64_t length = 5;  // sort, reverse, strings, copy
  int64_t steps = 3;   // multistep
};

// The built-in families, in the order above.
const std::vector<std::string>& task_families();

// Whether a problem (its key) belongs to the held-out split (else train).
bool problem_is_held_out(std::string_view key);
// What identifies an item's problem: its prompt, and the environment's
// initial state when it has one (kv asks the same question of many stores).
std::string problem_key(const GenItem& item);

// The items, in order. Errors name the option at fault (an unknown family, a
// knob out of its range, too few distinct problems for --n).
Result<std::vector<GenItem>> make_family_items(const FamilyOptions& o);

// Training text of items: each prompt + answer + "\n", in order. Of agentic
// items, a `tool_share` of them (chosen by a hash of the prompt) demonstrate
// the tool instead — prompt + the calls, the environment's results, the
// answer — e.g. "Q: 347*829=? A: <tool>347*829</tool><result>287663</result> 287663".
std::string task_document(const std::vector<GenItem>& items, size_t begin, size_t end, double tool_share = 1.0);
// An agentic item's answer with its tool calls and results (its answer alone otherwise).
std::string tool_demonstration(const GenItem& item);

}  // namespace mt
