// gen_tasks.cpp — generative task items: reading, writing, greedy decoding,
// exact match and the accuracy breakdowns.
#include "train/gen_tasks.h"

#include "train/environment.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/check.h"
#include "core/file_io.h"
#include "core/token_flags.h"
#include "model/generate.h"
#include "train/episodes.h"
#include "train/eval_tasks.h"
#include "train/task_file.h"
#include "train/verifier.h"

namespace mt {

namespace {

// Every field an item may have: required ones first, then metadata.
const std::set<std::string>& known_fields() {
  static const std::set<std::string> k = {"id",     "family",       "prompt", "answer", "split", "depth", "tokens",
                                          "prompt_tokens", "needle_token", "check", "env", "state", "goal"};
  return k;
}

// A non-empty string field, or an error naming it.
Status string_field(const nlohmann::json& j, const char* key, std::string& out) {
  if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
    return Status::errorf("\"{}\": expected a non-empty string", key);
  out = j[key].get<std::string>();
  return Status::ok();
}

// An optional integer field of at least `lo`; untouched when absent.
Status integer_field(const nlohmann::json& j, const char* key, int64_t lo, int64_t& out) {
  if (!j.contains(key)) return Status::ok();
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < lo)
    return Status::errorf("\"{}\": expected an integer >= {}", key, lo);
  out = j[key].get<int64_t>();
  return Status::ok();
}

Status parse_item(const nlohmann::json& j, GenItem& it) {
  if (auto f = task_format_of(j); !f || f.value() != TaskFormat::kGenerative)
    return Status::error(f ? "a multiple-choice item (\"context\", \"choices\") in a generative task file: one format "
                             "per file"
                           : f.status().message());
  for (const auto& [key, value] : j.items())
    if (!known_fields().count(key))
      return Status::errorf(
          "\"{}\": unknown field (a generative item has id, family, prompt, answer, and optionally split, check, "
          "depth, tokens, prompt_tokens, needle_token, env, state, goal)",
          key);
  MT_RETURN_IF_ERROR(string_field(j, "id", it.id));
  MT_RETURN_IF_ERROR(string_field(j, "family", it.family));
  MT_RETURN_IF_ERROR(string_field(j, "prompt", it.prompt));
  MT_RETURN_IF_ERROR(string_field(j, "answer", it.answer));
  if (j.contains("split")) {
    if (!j["split"].is_string() || (j["split"] != "train" && j["split"] != "held-out"))
      return Status::error("\"split\": expected \"train\" or \"held-out\"");
    it.split = j["split"].get<std::string>();
  }
  if (j.contains("depth")) {
    if (!j["depth"].is_number() || !(j["depth"].get<double>() >= 0.0 && j["depth"].get<double>() <= 1.0))
      return Status::error("\"depth\": expected a number in [0, 1]");
    it.depth = j["depth"].get<double>();
  }
  if (j.contains("check")) {
    if (!j["check"].is_string()) return Status::error("\"check\": expected one of exact, integer, list, text");
    if (auto k = parse_check(j["check"].get<std::string>()); !k)
      return Status::errorf("\"check\": {}", k.status().message());
    it.check = j["check"].get<std::string>();
  }
  for (const char* key : {"env", "state", "goal"})
    if (j.contains(key) && !j[key].is_string()) return Status::errorf("\"{}\": expected a string", key);
  it.env = j.value("env", "");
  it.state = j.value("state", "");
  it.goal = j.value("goal", "");
  if (!it.env.empty()) {  // checked now, so a bad item fails at load, not in the middle of a run
    if (auto e = make_environment(it.env, it.state, it.goal); !e) return e.status();
  } else if (!it.state.empty() || !it.goal.empty()) {
    return Status::error("\"env\": required with \"state\" or \"goal\"");
  }
  MT_RETURN_IF_ERROR(integer_field(j, "tokens", 1, it.tokens));
  MT_RETURN_IF_ERROR(integer_field(j, "prompt_tokens", 1, it.prompt_tokens));
  MT_RETURN_IF_ERROR(integer_field(j, "needle_token", 0, it.needle_token));
  // A passkey item without them could not be placed in the breakdowns.
  if (it.family == "passkey" && std::isnan(it.depth)) return Status::error("\"depth\": a passkey item needs it");
  if (it.family == "passkey" && it.tokens == 0) return Status::error("\"tokens\": a passkey item needs it");
  return Status::ok();
}

// `j` (the group's key) with the group's figures.
nlohmann::json with_cell(nlohmann::json j, const AccCell& c) {
  j["docs"] = c.docs;
  j["acc"] = c.acc();
  j["acc_stderr"] = c.acc_stderr();
  return j;
}

}  // namespace

CheckKind check_of(const GenItem& it) {
  if (it.check.empty()) return default_check(it.family);
  auto k = parse_check(it.check);
  MT_CHECK(k.is_ok(), "gen item {}: check \"{}\" was not validated", it.id, it.check);
  return k.value();
}

Result<std::vector<GenItem>> read_gen_tasks(const std::string& path) {
  auto text = read_file(path, "task file");
  if (!text) return text.status();
  return parse_gen_tasks(path, text.value());
}

Result<std::vector<GenItem>> parse_gen_tasks(const std::string& path, const std::string& text) {
  std::vector<GenItem> items;
  std::map<std::string, int64_t> line_of;  // id -> the line that has it
  MT_RETURN_IF_ERROR(for_each_task_line(path, text, [&](const nlohmann::json& j, int64_t line) {
    GenItem it;
    it.line = line;
    if (Status s = parse_item(j, it); !s.is_ok()) return Status::errorf("{}:{}: {}", path, line, s.message());
    if (auto [at, fresh] = line_of.emplace(it.id, line); !fresh)
      return Status::errorf("{}:{}: \"id\": \"{}\" is also the id of line {}", path, line, it.id, at->second);
    items.push_back(std::move(it));
    return Status::ok();
  }));
  return items;
}

std::string gen_item_line(const GenItem& it) {
  nlohmann::ordered_json j;
  j["id"] = it.id;
  j["family"] = it.family;
  if (!it.split.empty()) j["split"] = it.split;
  j["prompt"] = it.prompt;
  j["answer"] = it.answer;
  if (!it.check.empty()) j["check"] = it.check;
  if (!std::isnan(it.depth)) j["depth"] = it.depth;
  if (it.tokens > 0) j["tokens"] = it.tokens;
  if (it.prompt_tokens > 0) j["prompt_tokens"] = it.prompt_tokens;
  if (it.needle_token >= 0) j["needle_token"] = it.needle_token;
  if (!it.env.empty()) j["env"] = it.env;
  if (!it.state.empty()) j["state"] = it.state;
  if (!it.goal.empty()) j["goal"] = it.goal;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

double AccCell::acc_stderr() const { return accuracy_stderr(acc(), docs); }

GenResult tally_gen(const std::string& task, const std::vector<GenItem>& items,
                    const std::vector<std::string>& outputs) {
  MT_CHECK(items.size() == outputs.size(), "tally_gen: {} items, {} outputs", items.size(), outputs.size());
  GenResult r;
  r.task = task;
  r.outputs = outputs;
  for (size_t i = 0; i < items.size(); ++i) {
    const GenItem& it = items[i];
    r.family = i == 0 ? it.family : (r.family == it.family ? r.family : "mixed");
    const std::string check = check_name(check_of(it));
    r.check = i == 0 ? check : (r.check == check ? r.check : "mixed");
    const bool hit =
        it.env.empty() ? verify(check_of(it), it.answer, outputs[i]).correct : judge_episode(it, outputs[i]).correct;
    r.correct.push_back(hit ? 1 : 0);
    auto add = [hit](AccCell& c) { ++c.docs, c.hits += hit ? 1 : 0; };
    add(r.all);
    if (!std::isnan(it.depth)) add(r.by_depth[it.depth]);
    if (it.tokens > 0) add(r.by_tokens[it.tokens]);
    if (!std::isnan(it.depth) && it.tokens > 0) add(r.by_cell[{it.tokens, it.depth}]);
  }
  return r;
}

void encode_gen(const TextCodec& codec, const std::vector<GenItem>& items, std::vector<std::vector<int32_t>>& prompts,
                std::vector<int64_t>& answer_tokens, int64_t episode_tokens) {
  for (const GenItem& it : items) {
    const std::vector<int32_t> p = codec.encode(it.prompt), whole = codec.encode(it.prompt + it.answer);
    std::vector<int32_t> s = {codec.end_of_document()};
    s.insert(s.end(), p.begin(), p.end());
    prompts.push_back(std::move(s));
    answer_tokens.push_back(it.env.empty() ? std::max<int64_t>(1, int64_t(whole.size()) - int64_t(p.size()))
                                           : episode_tokens);
  }
}

std::string continuation_text(const TextCodec& codec, const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& generated) {
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  const std::string head = codec.decode(prompt.data(), int64_t(prompt.size()));
  const std::string text = codec.decode(all.data(), int64_t(all.size()));
  if (text.compare(0, head.size(), head) == 0) return text.substr(head.size());
  return codec.decode(generated.data(), int64_t(generated.size()));  // decoding merged across the boundary
}

GenResult score_gen(Decoder& dec, const TextCodec& codec, const std::string& task, const std::vector<GenItem>& items,
                    const std::function<void(int64_t, int64_t)>& progress, int64_t episode_tokens) {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> answer_tokens;
  encode_gen(codec, items, prompts, answer_tokens, episode_tokens);
  const int64_t n = int64_t(items.size()), batch = dec.options().batch;
  std::vector<std::string> outputs(static_cast<size_t>(n));
  std::vector<int64_t> plain, agentic;  // item indices of each kind, decoded in groups of their own
  for (int64_t i = 0; i < n; ++i) (items[size_t(i)].env.empty() ? plain : agentic).push_back(i);
  int64_t done = 0;
  for (size_t a0 = 0; a0 < agentic.size(); a0 += size_t(batch)) {
    const size_t a1 = std::min(agentic.size(), a0 + size_t(batch));
    std::vector<std::unique_ptr<Environment>> envs;
    std::vector<Environment*> env_of;
    std::vector<const std::vector<int32_t>*> contexts;
    for (size_t k = a0; k < a1; ++k) {
      const GenItem& it = items[size_t(agentic[k])];
      auto e = make_environment(it.env, it.state, it.goal);
      MT_CHECK(e.is_ok(), "item {}: {}", it.id, e.status().message());  // validated when read
      envs.push_back(std::move(*e));
      env_of.push_back(envs.back().get());
      contexts.push_back(&prompts[size_t(agentic[k])]);
    }
    EpisodeOptions eo;
    eo.max_new_tokens = episode_tokens;
    eo.stop_token = codec.end_of_document();
    eo.sampling.temperature = 0.0;  // greedy
    const std::vector<uint64_t> streams(a1 - a0, 0);
    const std::vector<Episode> eps = run_episodes(dec, codec, contexts, env_of, streams, eo);
    for (size_t k = a0; k < a1; ++k) {
      std::vector<int32_t> ids;
      for (int32_t t : eps[k - a0].tokens)
        if (token_id(t) != codec.end_of_document()) ids.push_back(token_id(t));
      const std::vector<int32_t>& p = prompts[size_t(agentic[k])];
      outputs[size_t(agentic[k])] = continuation_text(codec, std::vector<int32_t>(p.begin() + 1, p.end()), ids);
    }
    done += int64_t(a1 - a0);
    if (progress) progress(done, n);
  }
  for (size_t b0 = 0; b0 < plain.size(); b0 += size_t(batch)) {
    const int64_t begin = int64_t(b0), end = std::min(int64_t(plain.size()), begin + batch);
    std::vector<std::vector<int32_t>> group;
    for (int64_t k = begin; k < end; ++k) group.push_back(prompts[size_t(plain[size_t(k)])]);
    GenerateOptions g;
    g.max_new_tokens = 1;
    for (int64_t k = begin; k < end; ++k)
      g.max_new_tokens = std::max(g.max_new_tokens, answer_tokens[size_t(plain[size_t(k)])]);
    g.stop_token = -1;             // exactly the answer's length: an end-of-document is a wrong token like any other
    g.sampling.temperature = 0.0;  // greedy
    const GenerateResult r = generate(dec, group, g);
    for (int64_t k = begin; k < end; ++k) {
      const int64_t i = plain[size_t(k)];
      std::vector<int32_t> gen = r.tokens[size_t(k - begin)];
      gen.resize(size_t(answer_tokens[size_t(i)]));
      const std::vector<int32_t> prompt(prompts[size_t(i)].begin() + 1, prompts[size_t(i)].end());
      outputs[size_t(i)] = continuation_text(codec, prompt, gen);
    }
    done += end - begin;
    if (progress) progress(done, n);
  }
  return tally_gen(task, items, outputs);
}

nlohmann::json to_json(const GenResult& r, const std::vector<GenItem>& items) {
  nlohmann::json j = {{"task", r.task},
                      {"family", r.family},
                      {"metric", r.check == "exact" ? "exact_match" : "check"},
                      {"check", r.check},
                      {"docs", r.all.docs},
                      {"acc", r.all.acc()},
                      {"acc_stderr", r.all.acc_stderr()}};
  j["by_depth"] = nlohmann::json::array();
  for (const auto& [depth, c] : r.by_depth) j["by_depth"].push_back(with_cell({{"depth", depth}}, c));
  j["by_tokens"] = nlohmann::json::array();
  for (const auto& [tokens, c] : r.by_tokens) j["by_tokens"].push_back(with_cell({{"tokens", tokens}}, c));
  j["by_tokens_depth"] = nlohmann::json::array();
  for (const auto& [key, c] : r.by_cell)
    j["by_tokens_depth"].push_back(with_cell({{"tokens", key.first}, {"depth", key.second}}, c));
  j["items"] = nlohmann::json::array();
  for (size_t i = 0; i < items.size(); ++i)
    j["items"].push_back({{"id", items[i].id}, {"output", r.outputs[i]}, {"correct", r.correct[i] != 0}});
  return j;
}

std::string format_gen_result(const GenResult& r) {
  std::string s =
      fmt::format("task {:<24} docs {:>5}  acc {:.4f} ± {:.4f}  ({}, {})\n", r.task, r.all.docs, r.all.acc(),
                  r.all.acc_stderr(), r.check == "exact" ? "exact match" : r.check + " check", r.family);
  if (r.by_depth.empty() && r.by_tokens.empty()) return s;
  // Rows: depths; columns: prompt lengths; "all" on both edges. A file
  // without one of the two has only its "all" row or column.
  std::vector<int64_t> cols;
  for (const auto& [t, c] : r.by_tokens) cols.push_back(t);
  s += "  accuracy by needle depth (rows) and prompt length in tokens (columns):\n";
  s += fmt::format("  {:>6}", "depth");
  for (int64_t t : cols) s += fmt::format(" {:>7}", t);
  s += fmt::format(" {:>7}\n", "all");
  auto cell = [](const AccCell* c) {
    return c && c->docs > 0 ? fmt::format(" {:>7.3f}", c->acc()) : fmt::format(" {:>7}", "-");
  };
  for (const auto& [d, row] : r.by_depth) {
    s += fmt::format("  {:>6.2f}", d);
    for (int64_t t : cols) {
      auto it = r.by_cell.find({t, d});
      s += cell(it == r.by_cell.end() ? nullptr : &it->second);
    }
    s += cell(&row) + "\n";
  }
  s += fmt::format("  {:>6}", "all");
  for (int64_t t : cols) s += cell(&r.by_tokens.at(t));
  s += cell(&r.all) + "\n";
  return s;
}

}  // namespace mt
