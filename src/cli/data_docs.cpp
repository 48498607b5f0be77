// data_docs.cpp — reads the buckets' *.docs.jsonl files: one JSON line per
// document in shard order, so line k of a split describes its k-th document.
#include "cli/data_docs.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "data/dataset.h"

namespace mt {
namespace {

using json = nlohmann::json;

// Calls f(bucket, split, index in split, line) for every document line;
// f returns false to stop.
template <typename F>
Status for_each_doc(const Dataset& d, const std::string& bucket, F&& f) {
  bool any = false;
  for (const Bucket& b : d.buckets()) {
    if (!bucket.empty() && b.name != bucket) continue;
    any = true;
    for (const char* split : {"train", "eval"}) {
      const std::string path = d.dir() + "/" + shard_docs_file(b.topic, b.quality, split);
      std::ifstream in(path);
      if (!in)
        return Status::errorf("{}: missing (datasets built before provenance files existed have none; rebuild)",
                              path);
      std::string line;
      for (int64_t k = 0; std::getline(in, line); ++k)
        if (!f(b, std::string(split), k, line)) return Status::ok();
    }
  }
  if (!any) return Status::errorf("{}: no bucket named \"{}\"", d.dir(), bucket);
  return Status::ok();
}

std::string score_text(const json& j) {
  return j.is_number() ? fmt::format("{:.4g}", j.get<double>()) : "-";
}

}  // namespace

ExitCode run_inspect_docs(const std::string& dir, const std::string& bucket, bool as_json, int64_t limit) {
  auto ds = Dataset::open(dir, ShardVerify::kHeadersOnly);
  if (!ds) return fail("data inspect", ds.status());
  int64_t shown = 0;
  if (!as_json)
    fmt::print("{:>8} {:<24} {:<5} {:>7} {:>9} {:>9} {:>9}  {}\n", "id", "bucket", "split", "tokens", "ppl", "classif",
               "combined", "source");
  Status s = for_each_doc(*ds.value(), bucket, [&](const Bucket& b, const std::string& split, int64_t, const std::string& line) {
    if (limit > 0 && shown >= limit) return false;
    ++shown;
    if (as_json) {
      json j = json::parse(line);
      j["bucket"] = b.name;
      j["split"] = split;
      fmt::print("{}\n", j.dump());
      return true;
    }
    const json j = json::parse(line);
    const json& sc = j["scores"];
    std::string where = j["source"].get<std::string>();
    if (j["line"].get<int64_t>() > 0) where += fmt::format(":{}", j["line"].get<int64_t>());
    if (j["part"].get<int64_t>() > 0) where += fmt::format(" part {}", j["part"].get<int64_t>() + 1);
    if (j["text_offset"].get<int64_t>() > 0) where += fmt::format(" from byte {}", j["text_offset"].get<int64_t>());
    fmt::print("{:>8} {:<24} {:<5} {:>7} {:>9} {:>9} {:>9}  {}\n", j["id"].get<int64_t>(), b.name, split,
               j["tokens"].get<int64_t>(), score_text(sc["perplexity"]), score_text(sc["classifier"]),
               score_text(sc["combined"]), where);
    return true;
  });
  if (!s) return fail("data inspect", s);
  return ExitCode::kOk;
}

ExitCode run_show_doc(const std::string& dir, int64_t id, bool as_json) {
  auto ds = Dataset::open(dir, ShardVerify::kHeadersOnly);
  if (!ds) return fail("data show", ds.status());
  const std::string key = fmt::format("{{\"id\":{},", id);  // docs lines start with their id
  json found;
  std::string text, shown;  // shown: with the control tokens written out
  Status s = for_each_doc(*ds.value(), "", [&](const Bucket& b, const std::string& split, int64_t k, const std::string& line) {
    if (line.compare(0, key.size(), key) != 0) return true;
    found = json::parse(line);
    found["bucket"] = b.name;
    found["split"] = split;
    const ShardReader& shard = split == "train" ? *b.train : *b.eval;
    std::vector<int32_t> ids(size_t(shard.doc_length(k)));
    shard.copy(shard.doc_begin(k), int64_t(ids.size()), ids.data());
    const Tokenizer& tok = ds.value()->tokenizer();
    text = tok.decode(ids.data(), int64_t(ids.size()));
    // The control tokens the pipeline inserted (decode drops them): an
    // outcome tag before a rollout, a path header before each file of a repository.
    json marks = json::array();
    size_t run = 0;
    for (size_t i = 0; i <= ids.size(); ++i) {
      int sp = -1;
      for (int k = 0; i < ids.size() && k < kNumSpecials; ++k)
        if (ids[i] == tok.special(Special(k))) sp = k;
      if (i < ids.size() && sp < 0) continue;
      shown += tok.decode(ids.data() + run, int64_t(i - run));
      if (sp >= 0) {
        shown += special_piece(Special(sp));
        marks.push_back({{"at", int64_t(i)}, {"piece", special_piece(Special(sp))}});
      }
      run = i + 1;
    }
    found["specials"] = marks;
    return false;
  });
  if (!s) return fail("data show", s);
  if (found.is_null()) return fail("data show", Status::errorf("{}: no document with id {}", dir, id));
  if (as_json) {
    found["text"] = text;
    fmt::print("{}\n", found.dump(1));
    return ExitCode::kOk;
  }
  fmt::print("document {} in {} ({})\n", id, found["bucket"].get<std::string>(), found["split"].get<std::string>());
  for (const char* k : {"source", "line", "offset", "part", "text_offset", "hash", "topic", "quality", "tokens"})
    fmt::print("  {}: {}\n", k, found[k].is_string() ? found[k].get<std::string>() : found[k].dump());
  fmt::print("  scores: {}\n", found["scores"].dump());
  fmt::print("---\n{}\n", shown);
  return ExitCode::kOk;
}

}  // namespace mt
