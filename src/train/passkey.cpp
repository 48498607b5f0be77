// passkey.cpp — passkey items from filler sentences (see passkey.h).
#include "train/passkey.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace mt {

namespace {

// Tokens a part adds to a prompt after a joining space. The tokenizer never
// merges across a space (SentencePiece words; bytes), so these add up to the
// prompt's length; "x" stands for whatever precedes.
int64_t joined_tokens(const TextCodec& codec, const std::string& part) {
  return int64_t(codec.encode("x " + part).size()) - int64_t(codec.encode("x").size());
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : " ") + p;
  return s;
}

// Sentences drawn for one item, with their token counts cached across items.
class Haystack {
 public:
  Haystack(const FillerSentences& f, const TextCodec& codec, uint64_t seed)
      : f_(f), codec_(codec), seed_(seed), tokens_(f.sentences.size(), -1) {}

  // Sentences of stream `stream` (from draw `next` on) until they hold about
  // `target` tokens: a sentence that would overshoot is passed over for the
  // next, up to kMisses in a row; the last is taken only if it overshoots by
  // less than it would otherwise fall short. So the result is within half a
  // sentence of the target.
  //
  // With a cycle (`repeat` sentences drawn for the item), the sentences come
  // from it in turn instead, none passed over; `next` then counts turns.
  std::vector<std::string> fill(int64_t target, uint64_t stream, uint64_t& next, int64_t& got,
                                const std::vector<size_t>& cycle = {}) {
    constexpr int kMisses = 8;
    std::vector<std::string> out;
    got = 0;
    int misses = 0;
    while (got < target) {
      const size_t k =
          cycle.empty() ? size_t(philox_u64(seed_, stream, next++) % f_.sentences.size()) : cycle[next++ % cycle.size()];
      const int64_t t = tokens_of(k);
      if (!cycle.empty()) misses = kMisses;  // a cycle's turn is not skipped
      const bool fits = got + t <= target;
      if (!fits && ++misses < kMisses) continue;
      if (fits || got + t - target <= target - got) {
        out.push_back(f_.sentences[k]);
        got += t;
      } else if (!cycle.empty()) {
        --next;  // the turn not taken is the next part's first: the cycle goes on unbroken across the needle
      }
      if (!fits) break;
      misses = 0;
    }
    return out;
  }

  // `n` sentences of stream `stream` for an item's cycle, from draw `next` on.
  std::vector<size_t> draw_cycle(int64_t n, uint64_t stream, uint64_t& next) {
    std::vector<size_t> cycle;
    for (int64_t i = 0; i < n; ++i) cycle.push_back(size_t(philox_u64(seed_, stream, next++) % f_.sentences.size()));
    return cycle;
  }

 private:
  int64_t tokens_of(size_t k) {
    if (tokens_[k] < 0) tokens_[k] = joined_tokens(codec_, f_.sentences[k]);
    return tokens_[k];
  }

  const FillerSentences& f_;
  const TextCodec& codec_;
  uint64_t seed_;
  std::vector<int64_t> tokens_;  // per sentence; -1 until drawn
};

// Item i's Philox stream for its key (part 0) or its sentences (part 1). The
// split is in the top bit, so a train and a held-out file of the same seed
// draw different filler too, not only different keys.
uint64_t item_stream(const PasskeyOptions& o, int64_t i, uint64_t part) {
  return (o.split == TaskSplit::kHeldOut ? uint64_t(1) << 63 : 0) | (2 * uint64_t(i) + part);
}

// Item i's key: uniform over the D-digit numbers of its split (rejection
// sampling; one draw in five is held-out).
int64_t draw_key(const PasskeyOptions& o, int64_t i) {
  int64_t lo = 1;
  for (int64_t d = 1; d < o.digits; ++d) lo *= 10;
  const uint64_t range = uint64_t(9 * lo);
  for (uint64_t attempt = 0;; ++attempt) {
    MT_CHECK(attempt < 100000, "passkey: no {}-digit key of split {} in {} draws", o.digits, split_name(o.split),
             attempt);
    const int64_t key = lo + int64_t(philox_u64(o.seed, item_stream(o, i, 0), attempt) % range);
    if (passkey_is_held_out(key) == (o.split == TaskSplit::kHeldOut)) return key;
  }
}

Status check(const PasskeyOptions& o) {
  if (o.n < 1) return Status::errorf("n: expected at least 1 item, got {}", o.n);
  if (o.tokens.empty()) return Status::error("tokens: expected at least one prompt length");
  if (o.depths.empty()) return Status::error("depths: expected at least one depth");
  for (double d : o.depths)
    if (!(d >= 0.0 && d <= 1.0)) return Status::errorf("depths: {} is outside [0, 1]", d);
  if (o.digits < 2 || o.digits > 9) return Status::errorf("digits: expected 2 to 9, got {}", o.digits);
  if (o.repeat < 0) return Status::errorf("repeat: expected 0 (no cycle) or more sentences, got {}", o.repeat);
  return Status::ok();
}

}  // namespace

const char* split_name(TaskSplit s) { return s == TaskSplit::kTrain ? "train" : "held-out"; }

bool passkey_is_held_out(int64_t key) {
  // A fixed salt ("pass"), never the seed: the split of a key is the same in every file.
  return dither_mix(uint32_t(key) ^ uint32_t(uint64_t(key) >> 32) ^ 0x70617373u) % 5 == 0;
}

std::string passkey_needle(int64_t key) {
  return fmt::format("The pass key is {0}. Remember it. {0} is the pass key.", key);
}

Result<std::vector<GenItem>> make_passkey_items(const PasskeyOptions& o, const FillerSentences& filler,
                                                const TextCodec& codec) {
  MT_RETURN_IF_ERROR(check(o));
  MT_CHECK(!filler.sentences.empty(), "passkey: an empty filler pool");
  Haystack hay(filler, codec, o.seed);
  const int64_t question_tokens = joined_tokens(codec, kPasskeyQuestion);
  const int width = std::max(6, int(fmt::format("{}", o.n - 1).size()));
  std::vector<GenItem> items;
  for (int64_t i = 0; i < o.n; ++i) {
    const int64_t n_depths = int64_t(o.depths.size());
    const double depth = o.depths[size_t(i % n_depths)];
    const int64_t L = o.tokens[size_t((i / n_depths) % int64_t(o.tokens.size()))];
    const int64_t key = draw_key(o, i);
    const std::string needle = passkey_needle(key);
    const int64_t filler_tokens = L - joined_tokens(codec, needle) - question_tokens;
    if (filler_tokens < 0)
      return Status::errorf("tokens: a prompt of {} tokens is shorter than the needle and question alone ({} tokens)",
                            L, L - filler_tokens);
    uint64_t next = 0;  // draws of this item's sentence stream
    int64_t before_tokens = 0, after_tokens = 0;
    const uint64_t stream = item_stream(o, i, 1);
    const std::vector<size_t> cycle = hay.draw_cycle(o.repeat, stream, next);
    uint64_t turn = 0;  // the cycle's, across both parts
    uint64_t& draws = cycle.empty() ? next : turn;
    const std::vector<std::string> before =
        hay.fill(std::llround(depth * double(filler_tokens)), stream, draws, before_tokens, cycle);
    // What the first part missed by, the second makes up: the length is L within its last sentence.
    const std::vector<std::string> after = hay.fill(filler_tokens - before_tokens, stream, draws, after_tokens, cycle);
    std::vector<std::string> parts = before;
    parts.push_back(needle);
    parts.insert(parts.end(), after.begin(), after.end());
    parts.push_back(kPasskeyQuestion);
    GenItem it;
    it.id = fmt::format("passkey-{}-s{}-{:0{}d}", split_name(o.split), o.seed, i, width);
    it.family = "passkey";
    it.split = split_name(o.split);
    it.prompt = join(parts);
    it.answer = fmt::format(" {}", key);
    it.depth = depth;
    it.tokens = L;
    it.prompt_tokens = int64_t(codec.encode(it.prompt).size());
    it.needle_token = before.empty() ? 0 : int64_t(codec.encode(join(before)).size());
    items.push_back(std::move(it));
  }
  return items;
}

}  // namespace mt
