// decontaminate.h — which evaluation items a training text reproduces, by
// word n-gram overlap (GPT-3 appendix C, lm-evaluation-harness's
// decontamination, Llama 3 §5.1): an index of every n-gram of every item,
// and a match of one text against it. Pure: no files, no dataset. The pass
// over a dataset and the writer of the cleaned copy are in
// decontaminate_dataset.h; the rule is written down in docs/data.md
// ("Decontamination").
//
// Words, not tokens. Text is normalised as lm-eval's Janitor normalises it:
// ASCII letters lower-cased, the 32 ASCII punctuation characters deleted,
// then split at ASCII whitespace; every other byte (UTF-8 included) is kept
// as it is. "Don't PANIC!" is the two words "dont", "panic". The dataset's
// token ids would not do: an item's ids depend on the text around it (its
// first piece merges with the space before it; case and punctuation change
// the pieces), while its normalised words do not; and words make one index
// serve every dataset whatever its tokenizer, with n meaning the same thing
// everywhere (8 as in Llama 3, 13 as in GPT-3 and lm-eval).
//
// The rule. An item is one or more word sequences (a multiple-choice
// document: its context followed by each choice, the literal continuation
// lm-eval scores). A word of a sequence is covered by a text when some
// n-gram of the sequence holding that word occurs in the text; a sequence's
// coverage is the fraction of its words covered, an item's the largest over
// its sequences. A text contains an item when they share at least one
// n-gram and the item's coverage is >= threshold. threshold = 0 is "any
// shared n-gram" (GPT-3's and DataTrove's rule). The fraction is of the
// item, not of the text (Llama 3's "tokens covered by overlapping 8-grams",
// measured per item and document): a question pasted into a long page covers
// most of the question and almost none of the page. A sequence shorter than
// n words has no n-gram; an item whose sequences are all that short can
// never be found, and is counted (too_short) so that a report says so.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace mt {

struct DecontamOptions {
  int64_t n = 8;           // words per n-gram, >= 1 (Llama 3: 8; GPT-3, lm-eval: 13)
  double threshold = 0.5;  // least coverage of an item, in [0, 1]; 0 = any shared n-gram
};

// Errors name the command-line flag (`--n`, `--threshold`) and the value.
Status check_decontam_options(const DecontamOptions& o);

// One evaluation item as text.
struct EvalItem {
  int64_t line = 0;                    // 1-based line in its task file: the item's id
  std::vector<std::string> sequences;  // context + choice, one per choice
};

// One task file.
struct EvalTask {
  std::string name;  // file stem, as `moetrain eval` names the task
  std::string path;  // as given
  std::string hash;  // xxh64 of the file's bytes, 16 hex digits
  std::vector<EvalItem> items;
};

// The normalised words of `text` (the rule above).
std::vector<std::string> normalized_words(std::string_view text);

// A 64-bit hash of every n-gram of normalised words of `text`, in text
// order (none when it has fewer than n words).
std::vector<uint64_t> word_ngram_hashes(std::string_view text, int64_t n);

struct ItemMatch {
  int32_t task = 0;     // index into the tasks the index was built from
  int32_t item = 0;     // index into that task's items
  double coverage = 0;  // in (0, 1]
};

class NgramIndex {
 public:
  // Options must pass check_decontam_options.
  NgramIndex(const std::vector<EvalTask>& tasks, const DecontamOptions& opt);

  // The items `text` contains, ordered by (task, item). Thread-safe.
  std::vector<ItemMatch> match(std::string_view text) const;

  int64_t ngrams() const { return int64_t(postings_.size()); }  // distinct n-grams indexed
  int64_t too_short(int32_t task) const { return too_short_[size_t(task)]; }

 private:
  struct Sequence {
    int64_t words = 0;
    std::vector<uint64_t> grams;  // (words - n + 1) n-gram hashes, in order
  };
  struct Item {
    int32_t task = 0, item = 0;
    std::vector<Sequence> sequences;
  };
  int64_t n_;
  double threshold_;
  std::vector<Item> items_;  // in (task, item) order
  // n-gram -> the items_ holding it, ascending and distinct.
  std::unordered_map<uint64_t, std::vector<int32_t>> postings_;
  std::vector<int64_t> too_short_;  // per task
};

}  // namespace mt
