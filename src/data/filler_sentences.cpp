// filler_sentences.cpp — corpus documents to a pool of sentences.
#include "data/filler_sentences.h"

#include <cctype>

#include "data/ingest.h"

namespace mt {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int64_t count_words(std::string_view s) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) n += (s[i] != ' ' && (i == 0 || s[i - 1] == ' ')) ? 1 : 0;
  return n;
}

bool mentions_pass_key(std::string_view s) {
  std::string lower(s);
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("pass key") != std::string::npos || lower.find("passkey") != std::string::npos;
}

// Cuts one paragraph (whitespace already single spaces, trimmed) into sentences.
void add_paragraph(const std::string& p, const FillerOptions& o, std::vector<std::string>& out) {
  size_t begin = 0;
  auto keep = [&](size_t end) {
    const std::string_view s(p.data() + begin, end - begin);
    const int64_t words = count_words(s);
    if (words >= o.min_words && words <= o.max_words && !mentions_pass_key(s)) out.emplace_back(s);
  };
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '.' && p[i] != '!' && p[i] != '?') continue;
    size_t end = i + 1;
    while (end < p.size() && (p[end] == '"' || p[end] == '\'' || p[end] == ')' || p[end] == ']')) ++end;
    if (end < p.size() && p[end] != ' ') continue;  // "3.14", "e.g.x", a URL: not a sentence end
    keep(end);
    begin = end + 1;
    i = end;
  }
  // What follows the last sentence end (a heading, a list item, a line of
  // code) is no sentence: left out.
}

}  // namespace

void add_sentences(std::string_view text, const FillerOptions& o, std::vector<std::string>& out) {
  std::string para;
  bool blank_line = true;  // the current line holds only whitespace so far
  int newlines = 0;        // line breaks since the last non-space character
  auto flush = [&] {
    while (!para.empty() && para.back() == ' ') para.pop_back();
    if (!para.empty()) add_paragraph(para, o, out);
    para.clear();
  };
  for (char c : text) {
    if (c == '\n') {
      ++newlines;
      if (blank_line && newlines >= 2) flush();  // a blank line ends the paragraph
      blank_line = true;
    } else if (!is_space(c)) {
      blank_line = false;
      newlines = 0;
    }
    if (is_space(c)) {
      if (!para.empty() && para.back() != ' ') para += ' ';
    } else {
      para += c;
    }
  }
  flush();
}

Result<FillerSentences> read_filler(const std::vector<std::string>& paths, const FillerOptions& o) {
  std::vector<InputSpec> inputs;
  for (const std::string& p : paths) {
    InputSpec in;
    in.path = p;
    in.on_error = OnError::kSkip;
    in.utf8 = Utf8Policy::kRepair;
    inputs.push_back(in);
  }
  auto items = list_ingest_items(inputs);
  if (!items) return items.status();
  FillerSentences f;
  IngestStats stats;
  // Ends an item's reading early once the budget is spent (not an error).
  const Status enough = Status::error("filler: budget reached");
  for (const IngestItem& item : items.value()) {
    if (f.bytes >= o.max_bytes) break;
    const Status s = ingest_item(
        item, inputs[size_t(item.input)], CodeOptions{}, DocLimits{},
        [&](Document&& d) {
          if (f.bytes >= o.max_bytes) return enough;
          ++f.documents;
          f.bytes += int64_t(d.text.size());
          add_sentences(d.text, o, f.sentences);
          return Status::ok();
        },
        stats);
    if (!s.is_ok() && s.message() != enough.message()) return s;
  }
  for (const auto& [reason, n] : stats.dropped) f.skipped_records += reason == "empty" ? 0 : n;
  if (f.sentences.empty()) {
    std::string list;
    for (const std::string& p : paths) list += (list.empty() ? "" : ", ") + p;
    return Status::errorf(
        "{}: no sentence of {} to {} words in {} documents ({} bytes): filler needs prose (sentences ending in . ! "
        "or ? followed by a space)",
        list, o.min_words, o.max_words, f.documents, f.bytes);
  }
  return f;
}

}  // namespace mt
