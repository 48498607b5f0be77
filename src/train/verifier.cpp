// verifier.cpp — the answer checks (see verifier.h).
#include "train/verifier.h"

#include <charconv>
#include <cstdint>
#include <vector>

namespace mt {

namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// A whole decimal integer with an optional sign; false for anything else
// (empty, a trailing word, a value past int64).
bool parse_integer(std::string_view s, int64_t& out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::vector<std::string_view> tokens_of(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

}  // namespace

const char* check_name(CheckKind k) {
  switch (k) {
    case CheckKind::kExact:
      return "exact";
    case CheckKind::kInteger:
      return "integer";
    case CheckKind::kList:
      return "list";
    case CheckKind::kText:
      return "text";
  }
  return "?";
}

Result<CheckKind> parse_check(std::string_view name) {
  for (CheckKind k : {CheckKind::kExact, CheckKind::kInteger, CheckKind::kList, CheckKind::kText})
    if (name == check_name(k)) return k;
  return Status::errorf("\"{}\": expected one of exact, integer, list, text", name);
}

CheckKind default_check(std::string_view family) {
  if (family == "add" || family == "mul" || family == "lineq" || family == "multistep" || family == "calc" ||
      family == "kv")
    return CheckKind::kInteger;
  if (family == "sort" || family == "reverse") return CheckKind::kList;
  if (family == "strings" || family == "copy") return CheckKind::kText;
  return CheckKind::kExact;
}

std::string answer_line(std::string_view completion) {
  return std::string(trim(completion.substr(0, completion.find('\n'))));
}

Verdict verify(CheckKind kind, std::string_view answer, std::string_view completion) {
  Verdict v;
  if (kind == CheckKind::kExact) {
    v.extracted = std::string(completion);
    v.well_formed = true;
    v.correct = completion == answer;
    return v;
  }
  v.extracted = answer_line(completion);
  const std::string_view want = trim(answer.substr(0, answer.find('\n')));
  switch (kind) {
    case CheckKind::kInteger: {
      int64_t got = 0, expected = 0;
      v.well_formed = parse_integer(v.extracted, got);
      v.correct = v.well_formed && parse_integer(want, expected) && got == expected;
      break;
    }
    case CheckKind::kList: {
      const auto got = tokens_of(v.extracted);
      v.well_formed = !got.empty();
      v.correct = v.well_formed && got == tokens_of(want);
      break;
    }
    case CheckKind::kText:
      v.well_formed = !v.extracted.empty();
      v.correct = v.extracted == want;
      break;
    case CheckKind::kExact:
      break;
  }
  return v;
}

}  // namespace mt
