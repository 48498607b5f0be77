// train_task_families_test.cpp — the verifiable task families
// (train/task_families.h): every family's answer passes its own check and
// a recomputation from the prompt; the same options give the same items and
// another seed others; train and held-out files never share a problem,
// whatever the seeds and knobs; no prompt repeats in a file; knobs too
// narrow for --n are refused naming the count; training documents are
// prompt + answer + newline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "train/task_families.h"
#include "train/verifier.h"

namespace mt {
namespace {

std::vector<GenItem> make(const std::string& family, int64_t n, uint64_t seed, TaskSplit split, int64_t knob = 0) {
  FamilyOptions o;
  o.family = family;
  o.n = n;
  o.seed = seed;
  o.split = split;
  if (knob > 0) o.digits = o.length = knob;
  auto items = make_family_items(o);
  EXPECT_TRUE(items.is_ok()) << items.status().message();
  return items.is_ok() ? items.value() : std::vector<GenItem>{};
}

// The answer recomputed from the prompt alone, independently of the generator.
std::string solve(const GenItem& it) {
  const std::string& p = it.prompt;
  long long a = 0, b = 0, c = 0;
  char op = 0;
  if (it.family == "add" || it.family == "mul") {
    EXPECT_EQ(std::sscanf(p.c_str(), "Q: %lld%c%lld=? A:", &a, &op, &b), 3) << p;
    return " " + std::to_string(op == '+' ? a + b : a * b);
  }
  if (it.family == "lineq") {
    EXPECT_EQ(std::sscanf(p.c_str(), "Q: %lldx%c%lld=%lld, x=? A:", &a, &op, &b, &c), 4) << p;
    const long long rhs = op == '+' ? c - b : c + b;
    EXPECT_EQ(rhs % a, 0) << p;
    return " " + std::to_string(rhs / a);
  }
  if (it.family == "multistep") {
    // "Q: a=17; b=a+4; c=b*2; c=? A:"
    size_t at = p.find('=') + 1;
    long long v = std::stoll(p.substr(at));
    for (at = p.find("; ", at); p.compare(at + 4, 1, "?") != 0; at = p.find("; ", at + 1)) {
      const char o = p[at + 5];
      const long long k = p[at + 6] - '0';
      v = o == '+' ? v + k : o == '-' ? v - k : v * k;
    }
    return " " + std::to_string(v);
  }
  if (it.family == "calc") {
    EXPECT_EQ(std::sscanf(p.c_str(), "Q: %lld*%lld=? A:", &a, &b), 2) << p;
    return " " + std::to_string(a * b);
  }
  if (it.family == "kv") {  // "Q: add 7 to k2, then say k2 A:" over the state "k1=.. k2=.."
    int key = 0;
    EXPECT_EQ(std::sscanf(p.c_str(), "Q: add %lld to k%d", &a, &key), 2) << p;
    const std::string k = "k" + std::to_string(key) + "=";
    const size_t at = it.state.find(k);
    EXPECT_NE(at, std::string::npos) << it.state;
    EXPECT_EQ(it.goal, k + std::to_string(std::stoll(it.state.substr(at + k.size())) + a));
    return " " + std::to_string(std::stoll(it.state.substr(at + k.size())) + a);
  }
  const std::string body = p.substr(3, p.size() - 3 - 3);  // between "Q: " and " A:"
  const std::string verb = body.substr(0, body.find(' '));
  std::string rest = body.substr(verb.size() + 1);
  if (it.family == "sort" || it.family == "reverse") {
    rest.erase(std::remove(rest.begin(), rest.end(), ' '), rest.end());
    if (verb == "sort")
      std::sort(rest.begin(), rest.end());
    else
      std::reverse(rest.begin(), rest.end());
    std::string out;
    for (char ch : rest) out += std::string(" ") + ch;
    return out;
  }
  if (it.family == "copy") return " " + rest;
  std::string out;
  if (verb == "upper")
    for (char ch : rest) out += char(std::toupper(static_cast<unsigned char>(ch)));
  else if (verb == "double")
    for (char ch : rest) out += std::string(2, ch);
  else {
    const int k = std::stoi(rest);
    for (char ch : rest.substr(rest.find(' ') + 1)) out += char('a' + (ch - 'a' + k) % 26);
  }
  return " " + out;
}

TEST(TaskFamilies, EveryAnswerIsRightAndPassesItsCheck) {
  for (const std::string& f : task_families()) {
    for (TaskSplit split : {TaskSplit::kTrain, TaskSplit::kHeldOut}) {
      for (const GenItem& it : make(f, 200, 5, split)) {
        EXPECT_EQ(it.answer, solve(it)) << f << ": " << it.prompt;
        EXPECT_TRUE(verify(default_check(f), it.answer, it.answer + "\n").correct) << it.prompt;
        EXPECT_EQ(it.family, f);
        EXPECT_EQ(it.split, split_name(split));
        EXPECT_EQ(problem_is_held_out(problem_key(it)), split == TaskSplit::kHeldOut) << it.prompt;
      }
    }
  }
}

TEST(TaskFamilies, SameOptionsSameItemsAnotherSeedOthers) {
  for (const std::string& f : task_families()) {
    const auto a = make(f, 50, 7, TaskSplit::kTrain), b = make(f, 50, 7, TaskSplit::kTrain);
    const auto c = make(f, 50, 8, TaskSplit::kTrain);
    ASSERT_EQ(a.size(), 50u);
    int same = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].prompt, b[i].prompt);
      EXPECT_EQ(a[i].id, b[i].id);
      same += problem_key(a[i]) == problem_key(c[i]);
    }
    EXPECT_LT(same, 5) << f;
  }
}

TEST(TaskFamilies, SplitsNeverShareAProblemWhateverTheSeedsAndNoPromptRepeats) {
  for (const std::string& f : task_families()) {
    std::set<std::string> train, held_out;
    for (uint64_t seed : {1, 2, 3}) {
      for (int64_t knob : {3, 4, 5}) {  // smaller spaces hold too few held-out problems for 150: below
        for (const GenItem& it : make(f, 150, seed, TaskSplit::kTrain, knob)) train.insert(problem_key(it));
        const auto held = make(f, 150, seed, TaskSplit::kHeldOut, knob);
        std::set<std::string> in_file;
        for (const GenItem& it : held) {
          EXPECT_TRUE(in_file.insert(problem_key(it)).second) << "repeated in one file: " << it.prompt;
          held_out.insert(problem_key(it));
        }
      }
    }
    for (const std::string& p : held_out) EXPECT_EQ(train.count(p), 0u) << f << ": " << p;
    EXPECT_GT(held_out.size(), 300u) << f;
  }
}

TEST(TaskFamilies, KnobsTooNarrowForTheCountAreRefused) {
  FamilyOptions o;
  o.family = "add";
  o.digits = 1;  // 100 sums of two digits, about 20 of them held-out
  o.n = 60;
  o.split = TaskSplit::kHeldOut;
  auto r = make_family_items(o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("n: 60 items asked for"), std::string::npos) << r.status().message();
  o.n = 10;
  EXPECT_TRUE(make_family_items(o).is_ok());
  o.family = "divide";
  EXPECT_NE(make_family_items(o).status().message().find("family: \"divide\""), std::string::npos);
  o.family = "mul";
  o.digits = 10;
  EXPECT_NE(make_family_items(o).status().message().find("digits"), std::string::npos);
  o.family = "multistep";
  o.digits = 2;
  o.steps = 13;
  EXPECT_NE(make_family_items(o).status().message().find("steps"), std::string::npos);
}

TEST(TaskFamilies, DigitsAndLengthSetTheDifficulty) {
  for (const GenItem& it : make("add", 40, 1, TaskSplit::kTrain, 6)) {
    long long a = 0, b = 0;
    ASSERT_EQ(std::sscanf(it.prompt.c_str(), "Q: %lld+%lld", &a, &b), 2);
    EXPECT_TRUE(a >= 100000 && a <= 999999 && b >= 100000 && b <= 999999) << it.prompt;
  }
  for (const GenItem& it : make("reverse", 40, 1, TaskSplit::kTrain, 9))
    EXPECT_EQ(it.answer.size(), 18u) << it.answer;  // nine " x"
  for (const GenItem& it : make("copy", 40, 1, TaskSplit::kTrain, 30)) EXPECT_EQ(it.answer.size(), 31u);
}

TEST(TaskFamilies, DocumentsArePromptAnswerNewline) {
  const auto items = make("sort", 5, 1, TaskSplit::kTrain);
  EXPECT_EQ(task_document(items, 0, 2),
            items[0].prompt + items[0].answer + "\n" + items[1].prompt + items[1].answer + "\n");
  EXPECT_EQ(task_document(items, 4, 9), items[4].prompt + items[4].answer + "\n");
}

}  // namespace
}  // namespace mt
