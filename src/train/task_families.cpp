// task_families.cpp — the built-in verifiable task families (see
// task_families.h).
#include "train/task_families.h"

#include "train/environment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "core/hash.h"
#include "core/rng.h"

namespace mt {

namespace {

// One item's draws: Philox at (seed, stream, 0), (seed, stream, 1), ...
class Draws {
 public:
  Draws(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  uint64_t next() {
    uint32_t w[4];
    philox_block(seed_, stream_, counter_++, w);
    return uint64_t(w[0]) | uint64_t(w[1]) << 32;
  }
  // Uniform in [lo, hi] (the modulo bias of 64 bits over these ranges is below 1e-9).
  int64_t in(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  char letter() { return char('a' + in(0, 25)); }

 private:
  uint64_t seed_, stream_, counter_ = 0;
};

struct Problem {
  Problem() = default;
  Problem(std::string p, std::string a, std::string e = "", std::string s = "", std::string g = "")
      : prompt(std::move(p)), answer(std::move(a)), env(std::move(e)), state(std::move(s)), goal(std::move(g)) {}
  std::string prompt, answer;
  std::string env, state, goal;  // agentic families (train/environment.h)
};

int64_t pow10(int64_t d) {
  int64_t p = 1;
  while (d-- > 0) p *= 10;
  return p;
}

// A number of exactly `digits` digits (0..9 for one digit).
int64_t number(Draws& d, int64_t digits) { return d.in(digits == 1 ? 0 : pow10(digits - 1), pow10(digits) - 1); }

std::string letters(Draws& d, int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s.push_back(d.letter());
  return s;
}

// "kdaz" -> "k d a z"
std::string spaced(const std::string& chars) {
  std::string s;
  for (char c : chars) {
    if (!s.empty()) s.push_back(' ');
    s.push_back(c);
  }
  return s;
}

Problem draw_problem(const FamilyOptions& o, Draws& d) {
  const std::string& f = o.family;
  if (f == "add" || f == "mul") {
    const int64_t a = number(d, o.digits), b = number(d, o.digits);
    const char op = f == "add" ? '+' : '*';
    return {fmt::format("Q: {}{}{}=? A:", a, op, b), fmt::format(" {}", f == "add" ? a + b : a * b)};
  }
  if (f == "lineq") {
    const int64_t a = d.in(2, 9), x = number(d, o.digits), b = d.in(1, pow10(o.digits) - 1);
    const bool minus = d.in(0, 1) == 1;
    return {fmt::format("Q: {}x{}{}={}, x=? A:", a, minus ? '-' : '+', b, minus ? a * x - b : a * x + b),
            fmt::format(" {}", x)};
  }
  if (f == "multistep") {
    int64_t value = number(d, o.digits);
    std::string prompt = fmt::format("Q: a={}", value);
    for (int64_t s = 1; s <= o.steps; ++s) {
      const char op = "+-*"[d.in(0, 2)];
      const int64_t k = d.in(1, 9);
      value = op == '+' ? value + k : op == '-' ? value - k : value * k;
      prompt += fmt::format("; {}={}{}{}", char('a' + s), char('a' + s - 1), op, k);
    }
    return {prompt + fmt::format("; {}=? A:", char('a' + o.steps)), fmt::format(" {}", value)};
  }
  if (f == "sort" || f == "reverse") {
    std::string list = letters(d, o.length);
    std::string out = list;
    if (f == "sort")
      std::sort(out.begin(), out.end());
    else
      std::reverse(out.begin(), out.end());
    return {fmt::format("Q: {} {} A:", f, spaced(list)), fmt::format(" {}", spaced(out))};
  }
  if (f == "strings") {
    const int64_t op = d.in(0, 2);
    const std::string word = letters(d, o.length);
    std::string out;
    if (op == 0) {
      for (char c : word) out += char(std::toupper(static_cast<unsigned char>(c)));
      return {fmt::format("Q: upper {} A:", word), fmt::format(" {}", out)};
    }
    if (op == 1) {
      const int64_t k = d.in(1, 25);
      for (char c : word) out += char('a' + (c - 'a' + k) % 26);
      return {fmt::format("Q: shift {} {} A:", k, word), fmt::format(" {}", out)};
    }
    for (char c : word) out += std::string(2, c);
    return {fmt::format("Q: double {} A:", word), fmt::format(" {}", out)};
  }
  if (f == "calc") {  // a product too long to do in one's head: the calculator is the way
    const int64_t a = number(d, o.digits), b = number(d, o.digits);
    return {fmt::format("Q: {}*{}=? A:", a, b), fmt::format(" {}", a * b), "calculator", "", ""};
  }
  if (f == "kv") {  // a store the model sees only through get/set: read a key, add to it, write it back
    const int64_t keys = 4, key = d.in(1, keys), add = d.in(1, 9);
    std::string state;
    int64_t value = 0;
    for (int64_t k = 1; k <= keys; ++k) {
      const int64_t v = number(d, o.digits);
      if (k == key) value = v;
      state += fmt::format("{}k{}={}", k > 1 ? " " : "", k, v);
    }
    return {fmt::format("Q: add {} to k{}, then say k{} A:", add, key, key), fmt::format(" {}", value + add), "kv",
            state, fmt::format("k{}={}", key, value + add)};
  }
  // copy
  std::string digits;
  for (int64_t i = 0; i < o.length; ++i) digits += char('0' + d.in(0, 9));
  return {fmt::format("Q: repeat {} A:", digits), fmt::format(" {}", digits)};
}

Status check(const FamilyOptions& o) {
  const auto& fams = task_families();
  if (std::find(fams.begin(), fams.end(), o.family) == fams.end())
    return Status::errorf("family: \"{}\" is not one of {}", o.family, fmt::join(fams, ", "));
  if (o.n < 1) return Status::errorf("n: expected at least 1 item, got {}", o.n);
  const bool uses_digits = o.family == "add" || o.family == "mul" || o.family == "lineq" || o.family == "multistep" ||
                           o.family == "calc" || o.family == "kv";
  // Products of two 9-digit numbers and a 9-digit start times 9^12 stay inside int64.
  if (uses_digits && (o.digits < 1 || o.digits > 9)) return Status::errorf("digits: expected 1 to 9, got {}", o.digits);
  if (!uses_digits && (o.length < 1 || o.length > 256))
    return Status::errorf("length: expected 1 to 256, got {}", o.length);
  if (o.family == "multistep" && (o.steps < 1 || o.steps > 12))
    return Status::errorf("steps: expected 1 to 12, got {}", o.steps);
  return Status::ok();
}

}  // namespace

const std::vector<std::string>& task_families() {
  static const std::vector<std::string> f = {"add",     "mul",     "lineq", "multistep", "sort",
                                             "reverse", "strings", "copy",  "calc",      "kv"};
  return f;
}

std::string problem_key(const GenItem& item) {
  return item.state.empty() ? item.prompt : item.prompt + "\n" + item.state;
}

bool problem_is_held_out(std::string_view prompt) {
  // A fixed salt ("task"), never the seed: a problem's split is the same in every file.
  return xxh64(prompt.data(), prompt.size(), 0x7461736bu) % 5 == 0;
}

Result<std::vector<GenItem>> make_family_items(const FamilyOptions& o) {
  MT_RETURN_IF_ERROR(check(o));
  const bool held_out = o.split == TaskSplit::kHeldOut;
  const int width = std::max(6, int(fmt::format("{}", o.n - 1).size()));
  // Draws per item before the knobs are judged too narrow: a space with
  // fewer than n problems of the split runs out of fresh ones.
  constexpr int64_t kAttempts = 2000;
  std::unordered_set<std::string> taken;
  std::vector<GenItem> items;
  for (int64_t i = 0; i < o.n; ++i) {
    Draws d(o.seed, (held_out ? uint64_t(1) << 63 : 0) | uint64_t(i));
    Problem p;
    std::string key;
    for (int64_t attempt = 0;; ++attempt) {
      if (attempt == kAttempts)
        return Status::errorf(
            "n: {} items asked for, but after {} distinct {} problems of split {} no fresh one came in {} draws: "
            "these knobs leave too few (raise --digits, --length or --steps, or lower --n)",
            o.n, i, o.family, split_name(o.split), kAttempts);
      p = draw_problem(o, d);
      // A problem is its prompt and, for an environment with state, the state (kv's prompts repeat).
      key = p.state.empty() ? p.prompt : p.prompt + "\n" + p.state;
      if (problem_is_held_out(key) == held_out && !taken.count(key)) break;
    }
    taken.insert(key);
    GenItem it;
    it.id = fmt::format("{}-{}-s{}-{:0{}d}", o.family, split_name(o.split), o.seed, i, width);
    it.family = o.family;
    it.split = split_name(o.split);
    it.prompt = std::move(p.prompt);
    it.answer = std::move(p.answer);
    it.env = std::move(p.env);
    it.state = std::move(p.state);
    it.goal = std::move(p.goal);
    items.push_back(std::move(it));
  }
  return items;
}

std::string tool_demonstration(const GenItem& it) {
  if (it.env == "calculator") {
    const std::string q = it.prompt.substr(3, it.prompt.find("=?") - 3);  // "Q: 347*829=? A:" -> "347*829"
    return fmt::format(" {}{}{}{}{}{}{}", kToolOpen, q, kToolClose, kResultOpen, it.answer.substr(1), kResultClose,
                       it.answer);
  }
  if (it.env == "kv") {
    // "add N to kK": get kK, set kK to the sum, say it.
    const std::string key = it.goal.substr(0, it.goal.find('='));
    const std::string before = it.state.substr(it.state.find(key + "=") + key.size() + 1);
    return fmt::format(" {}get {}{}{}{}{}{}set {} {}{}{}ok{}{}", kToolOpen, key, kToolClose, kResultOpen,
                       before.substr(0, before.find(' ')), kResultClose, kToolOpen, key, it.answer.substr(1), kToolClose,
                       kResultOpen, kResultClose, it.answer);
  }
  return it.answer;
}

std::string task_document(const std::vector<GenItem>& items, size_t begin, size_t end, double tool_share) {
  std::string s;
  for (size_t i = begin; i < end && i < items.size(); ++i) {
    const GenItem& it = items[i];
    // Which items demonstrate the tool: a fixed hash of the prompt, so the share holds in any file.
    const bool demo = !it.env.empty() &&
                      double(xxh64(it.prompt.data(), it.prompt.size(), 0x746f6f6cu) % 1000000) < tool_share * 1e6;
    s += it.prompt + (demo ? tool_demonstration(it) : it.answer) + "\n";
  }
  return s;
}

}  // namespace mt
