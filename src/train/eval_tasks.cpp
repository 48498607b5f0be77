// eval_tasks.cpp — JSONL task reading, lm-eval-style encoding and scoring.
#include "train/eval_tasks.h"

#include <cmath>
#include <filesystem>

#include "core/file_io.h"
#include "model/score.h"
#include "train/task_file.h"

namespace mt {

Result<std::vector<McDoc>> read_mc_tasks(const std::string& path) {
  auto text = read_file(path, "task file");
  if (!text) return text.status();
  return parse_mc_tasks(path, text.value());
}

Result<std::vector<McDoc>> parse_mc_tasks(const std::string& path, const std::string& text) {
  std::vector<McDoc> docs;
  const Status s = for_each_task_line(path, text, [&](const nlohmann::json& j, int64_t line_no) {
    auto bad = [&](const std::string& why) { return Status::errorf("{}:{}: {}", path, line_no, why); };
    if (auto f = task_format_of(j); f && f.value() == TaskFormat::kGenerative)
      return bad("a generative item (\"prompt\") in a multiple-choice task file: one format per file");
    McDoc d;
    d.line = line_no;
    if (!j.contains("context") || !j["context"].is_string()) return bad("\"context\": expected a string");
    d.context = j["context"].get<std::string>();
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].size() < 2)
      return bad("\"choices\": expected an array of at least 2 strings");
    for (const auto& c : j["choices"]) {
      if (!c.is_string() || c.get<std::string>().empty())
        return bad("\"choices\": every choice must be a non-empty string");
      d.choices.push_back(c.get<std::string>());
    }
    if (!j.contains("answer") || !j["answer"].is_number_integer()) return bad("\"answer\": expected an integer index");
    d.answer = j["answer"].get<int64_t>();
    if (d.answer < 0 || d.answer >= int64_t(d.choices.size()))
      return bad("\"answer\": " + std::to_string(d.answer) + " is not an index into \"choices\"");
    docs.push_back(std::move(d));
    return Status::ok();
  });
  if (!s.is_ok()) return s;
  return docs;
}

std::string mc_task_name(const std::string& path) { return std::filesystem::path(path).stem().string(); }

void encode_mc(const TextCodec& codec, const std::vector<McDoc>& docs, std::vector<std::vector<int32_t>>& seqs,
               std::vector<int64_t>& first) {
  for (const McDoc& d : docs)
    for (const std::string& choice : d.choices) {
      // lm-eval _encode_pair: trailing spaces of the context go to the continuation.
      std::string ctx = d.context, cont = choice;
      const size_t last = ctx.find_last_not_of(" \t\n\r\f\v");  // Python's str.rstrip()
      const size_t keep = last == std::string::npos ? 0 : last + 1;
      cont = ctx.substr(keep) + cont;
      ctx.resize(keep);
      const std::vector<int32_t> whole = codec.encode(ctx + cont), c = codec.encode(ctx);
      std::vector<int32_t> s = {codec.end_of_document()};
      s.insert(s.end(), whole.begin(), whole.end());
      seqs.push_back(std::move(s));
      first.push_back(1 + int64_t(std::min(c.size(), whole.size())));
    }
}

namespace {
int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80 ? 1 : 0;
  return n;
}
}  // namespace

double accuracy_stderr(double p, int64_t n) { return n > 1 ? std::sqrt(p * (1 - p) / double(n - 1)) : 0.0; }

McResult score_mc(Decoder& dec, const TextCodec& codec, const std::string& task, const std::vector<McDoc>& docs,
                  const std::function<void(int64_t, int64_t)>& progress) {
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int64_t> first;
  encode_mc(codec, docs, seqs, first);
  const std::vector<ContinuationScore> sc = score_continuations(dec, seqs, first, progress);
  McResult r;
  r.task = task;
  r.docs = int64_t(docs.size());
  size_t k = 0;
  int64_t hits = 0, hits_norm = 0;
  for (const McDoc& d : docs) {
    std::vector<double> lp;
    int64_t best = 0, best_norm = 0;
    for (size_t c = 0; c < d.choices.size(); ++c, ++k) {
      lp.push_back(sc[k].logprob);
      const double norm = sc[k].logprob / double(code_points(d.choices[c]));
      if (sc[k].logprob > lp[size_t(best)]) best = int64_t(c);
      if (norm > lp[size_t(best_norm)] / double(code_points(d.choices[size_t(best_norm)]))) best_norm = int64_t(c);
    }
    hits += best == d.answer ? 1 : 0;
    hits_norm += best_norm == d.answer ? 1 : 0;
    r.logprobs.push_back(std::move(lp));
  }
  r.acc = double(hits) / double(r.docs);
  r.acc_norm = double(hits_norm) / double(r.docs);
  r.acc_stderr = accuracy_stderr(r.acc, r.docs);
  r.acc_norm_stderr = accuracy_stderr(r.acc_norm, r.docs);
  return r;
}

nlohmann::json to_json(const McResult& r) {
  return {{"task", r.task},         {"docs", r.docs},
          {"acc", r.acc},           {"acc_stderr", r.acc_stderr},
          {"acc_norm", r.acc_norm}, {"acc_norm_stderr", r.acc_norm_stderr},
          {"logprobs", r.logprobs}};
}

}  // namespace mt
