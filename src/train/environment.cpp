// environment.cpp — the calculator and the key-value world (see environment.h).
#include "train/environment.h"

#include <fmt/format.h>

#include <cctype>
#include <sstream>

namespace mt {

namespace {

// Recursive descent over expr := term (('+'|'-') term)*, term := factor
// (('*'|'/') factor)*, factor := '-' factor | integer | '(' expr ')'.
class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}
  std::optional<int64_t> parse() {
    auto v = expr(0);
    skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  std::optional<int64_t> expr(int depth) {
    if (depth > 32) return std::nullopt;
    auto v = term(depth);
    while (v) {
      if (eat('+')) {
        auto r = term(depth);
        if (!r || __builtin_add_overflow(*v, *r, &*v)) return std::nullopt;
      } else if (eat('-')) {
        auto r = term(depth);
        if (!r || __builtin_sub_overflow(*v, *r, &*v)) return std::nullopt;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<int64_t> term(int depth) {
    auto v = factor(depth);
    while (v) {
      if (eat('*')) {
        auto r = factor(depth);
        if (!r || __builtin_mul_overflow(*v, *r, &*v)) return std::nullopt;
      } else if (eat('/')) {
        auto r = factor(depth);
        if (!r || *r == 0 || (*v == INT64_MIN && *r == -1)) return std::nullopt;
        *v /= *r;
      } else {
        break;
      }
    }
    return v;
  }
  std::optional<int64_t> factor(int depth) {
    if (eat('-')) {
      auto v = factor(depth + 1);
      if (!v || *v == INT64_MIN) return std::nullopt;
      return -*v;
    }
    if (eat('(')) {
      auto v = expr(depth + 1);
      if (!v || !eat(')')) return std::nullopt;
      return v;
    }
    skip();
    const size_t start = i_;
    int64_t v = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      if (__builtin_mul_overflow(v, int64_t(10), &v) || __builtin_add_overflow(v, int64_t(s_[i_] - '0'), &v))
        return std::nullopt;
      ++i_;
    }
    if (i_ == start) return std::nullopt;
    return v;
  }
  std::string_view s_;
  size_t i_ = 0;
};

class Calculator final : public Environment {
 public:
  std::string call(std::string_view request) override {
    const auto v = evaluate_expression(request);
    return v ? fmt::format("{}", *v) : "error";
  }
};

// "k1=5 k2=9" -> {k1: "5", k2: "9"}; false on a malformed pair.
bool parse_pairs(const std::string& text, std::map<std::string, std::string>& out) {
  std::istringstream in(text);
  for (std::string pair; in >> pair;) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) return false;
    out[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return true;
}

class KeyValueWorld final : public Environment {
 public:
  KeyValueWorld(std::map<std::string, std::string> store, std::map<std::string, std::string> goal)
      : store_(std::move(store)), goal_(std::move(goal)) {}
  std::string call(std::string_view request) override {
    std::istringstream in{std::string(request)};
    std::string op, key, value, extra;
    in >> op >> key;
    if (op == "get" && !key.empty() && !(in >> extra)) {
      auto it = store_.find(key);
      return it == store_.end() ? "missing" : it->second;
    }
    if (op == "set" && !key.empty() && (in >> value) && !(in >> extra)) {
      store_[key] = value;
      return "ok";
    }
    return "error";
  }
  bool goal_met() const override {
    for (const auto& [k, v] : goal_) {
      auto it = store_.find(k);
      if (it == store_.end() || it->second != v) return false;
    }
    return true;
  }

 private:
  std::map<std::string, std::string> store_, goal_;
};

}  // namespace

std::optional<int64_t> evaluate_expression(std::string_view expr) { return Parser(expr).parse(); }

bool known_environment(const std::string& env) { return env.empty() || env == "calculator" || env == "kv"; }

Result<std::unique_ptr<Environment>> make_environment(const std::string& env, const std::string& state,
                                                      const std::string& goal) {
  if (env == "calculator") return std::unique_ptr<Environment>(new Calculator());
  if (env == "kv") {
    std::map<std::string, std::string> store, want;
    if (!parse_pairs(state, store)) return Status::errorf("\"state\": expected KEY=VALUE pairs, got \"{}\"", state);
    if (!parse_pairs(goal, want)) return Status::errorf("\"goal\": expected KEY=VALUE pairs, got \"{}\"", goal);
    return std::unique_ptr<Environment>(new KeyValueWorld(std::move(store), std::move(want)));
  }
  return Status::errorf("\"env\": \"{}\" is not an environment (calculator, kv)", env);
}

std::optional<std::string> pending_call(std::string_view text) {
  if (text.size() < kToolClose.size() || text.substr(text.size() - kToolClose.size()) != kToolClose)
    return std::nullopt;
  const size_t open = text.rfind(kToolOpen);
  if (open == std::string_view::npos) return std::nullopt;
  const size_t begin = open + kToolOpen.size(), end = text.size() - kToolClose.size();
  if (end < begin) return std::nullopt;
  return std::string(text.substr(begin, end - begin));
}

std::string_view final_answer(std::string_view completion) {
  const size_t at = completion.rfind(kResultClose);
  return at == std::string_view::npos ? completion : completion.substr(at + kResultClose.size());
}

int64_t count_calls(std::string_view text) {
  int64_t n = 0;
  for (size_t at = text.find(kToolOpen); at != std::string_view::npos; at = text.find(kToolOpen, at + 1)) ++n;
  return n;
}

}  // namespace mt
