// decontaminate_dataset.cpp — the scan of a dataset against evaluation items,
// its report, and the cleaned copy (decontaminate_dataset.h).
#include "data/decontaminate_dataset.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <set>

#include "core/timer.h"
#include "data/dataset.h"
#include "data/dataset_filter.h"
#include "data/line_reader.h"

namespace mt {
namespace {

using json = nlohmann::json;

const char* split_name(int s) { return s ? "eval" : "train"; }

// The ids of a split's documents, from its provenance file (line k is
// document k).
Result<std::vector<int64_t>> read_doc_ids(const Dataset& ds, const Bucket& b, int s) {
  const ShardReader& shard = s ? *b.eval : *b.train;
  const std::string path = ds.dir() + "/" + shard_docs_file(b.topic, b.quality, split_name(s));
  auto r = LineReader::open(path);
  if (!r) return Status::errorf("{}: cannot read the provenance file: {}", path, r.status().message());
  std::vector<int64_t> ids;
  std::string line;
  while (true) {
    auto more = r.value()->next(line);
    if (!more) return more.status();
    if (!more.value()) break;
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer())
      return Status::errorf("{}:{}: \"id\": expected an integer", path, r.value()->line_number());
    ids.push_back(j["id"].get<int64_t>());
  }
  if (int64_t(ids.size()) != shard.n_docs())
    return Status::errorf("{}: {} lines for the {} documents of the shard", path, ids.size(), shard.n_docs());
  return ids;
}

json split_json(const DecontamBucketStats& b, int s) {
  return {{"documents", b.documents[size_t(s)]},
          {"tokens", b.tokens[size_t(s)]},
          {"removed_documents", b.removed_documents[size_t(s)]},
          {"removed_tokens", b.removed_tokens[size_t(s)]}};
}

json tasks_json(const DecontamReport& r) {
  json tasks = json::array();
  for (const DecontamTaskStats& t : r.tasks)
    tasks.push_back({{"name", t.name},
                     {"path", t.path},
                     {"hash", t.hash},
                     {"items", t.items},
                     {"too_short", t.too_short},
                     {"items_matched", t.items_matched},
                     {"documents_matched", t.documents_matched}});
  return tasks;
}

json totals_json(const DecontamReport& r) {
  json t;
  for (int s = 0; s < 2; ++s) {
    int64_t docs = 0, toks = 0, rdocs = 0, rtoks = 0;
    for (const DecontamBucketStats& b : r.buckets) {
      docs += b.documents[size_t(s)];
      toks += b.tokens[size_t(s)];
      rdocs += b.removed_documents[size_t(s)];
      rtoks += b.removed_tokens[size_t(s)];
    }
    t[split_name(s)] = {{"documents", docs}, {"tokens", toks}, {"removed_documents", rdocs}, {"removed_tokens", rtoks}};
  }
  return t;
}

// The rule, in words, for the manifest and the report.
constexpr const char* kMethod =
    "word n-grams: ASCII lower-cased, ASCII punctuation deleted, split at whitespace (lm-eval's Janitor); a "
    "document goes when it shares an n-gram with an item and covers at least `threshold` of the item's words "
    "(context + a choice, the best choice)";

}  // namespace

Result<DecontamReport> scan_for_contamination(const Dataset& ds, const std::vector<EvalTask>& tasks,
                                              const DecontamOptions& opt,
                                              const std::function<void(const std::string&)>& say) {
  MT_RETURN_IF_ERROR(check_decontam_options(opt));
  const double t0 = now_seconds();
  DecontamReport r;
  r.dataset = ds.dir();
  r.fingerprint = ds.fingerprint();
  r.options = opt;
  const NgramIndex index(tasks, opt);
  r.ngrams = index.ngrams();
  for (size_t t = 0; t < tasks.size(); ++t) {
    DecontamTaskStats st{tasks[t].name, tasks[t].path, tasks[t].hash};
    st.items = int64_t(tasks[t].items.size());
    st.too_short = index.too_short(int32_t(t));
    r.tasks.push_back(st);
  }
  if (say) {
    int64_t items = 0;
    for (const EvalTask& t : tasks) items += int64_t(t.items.size());
    say(fmt::format("{} items of {} tasks give {} distinct {}-grams", items, tasks.size(), r.ngrams, opt.n));
  }
  std::set<std::pair<int32_t, int32_t>> items_found;
  for (size_t bi = 0; bi < ds.buckets().size(); ++bi) {
    const Bucket& b = ds.buckets()[bi];
    DecontamBucketStats bs;
    bs.name = b.name;
    std::array<std::vector<char>, 2> dirty;
    for (int s = 0; s < 2; ++s) {
      const ShardReader& shard = s ? *b.eval : *b.train;
      auto ids = read_doc_ids(ds, b, s);
      if (!ids) return ids.status();
      const int64_t n = shard.n_docs();
      std::vector<std::vector<ItemMatch>> found(static_cast<size_t>(n));
      // Each document is decoded and matched on its own; results land by
      // index, so the order (and the report) is the thread count's neither.
      int64_t bytes = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : bytes)
      for (int64_t k = 0; k < n; ++k) {
        std::vector<int32_t> tok(size_t(shard.doc_length(k)));
        shard.copy(shard.doc_begin(k), int64_t(tok.size()), tok.data());
        const std::string text = ds.tokenizer().decode(tok.data(), int64_t(tok.size()));
        bytes += int64_t(text.size());
        found[size_t(k)] = index.match(text);
      }
      r.text_bytes += bytes;
      dirty[size_t(s)].assign(size_t(n), 0);
      bs.documents[size_t(s)] = n;
      bs.tokens[size_t(s)] = shard.n_tokens();
      for (int64_t k = 0; k < n; ++k) {
        if (found[size_t(k)].empty()) continue;
        dirty[size_t(s)][size_t(k)] = 1;
        ++bs.removed_documents[size_t(s)];
        bs.removed_tokens[size_t(s)] += shard.doc_length(k);
        int32_t last_task = -1;
        for (const ItemMatch& m : found[size_t(k)]) {  // ordered by task, then item
          const int64_t line = tasks[size_t(m.task)].items[size_t(m.item)].line;
          r.matches.push_back({ids.value()[size_t(k)], int32_t(bi), s, m.task, line, m.coverage});
          items_found.insert({m.task, m.item});
          if (m.task != last_task) ++r.tasks[size_t(m.task)].documents_matched;
          last_task = m.task;
        }
      }
    }
    if (say && (bs.removed_documents[0] || bs.removed_documents[1]))
      say(fmt::format("{}: {} train and {} eval documents contain task items", b.name, bs.removed_documents[0],
                      bs.removed_documents[1]));
    r.buckets.push_back(bs);
    r.contaminated.push_back(std::move(dirty));
  }
  for (const auto& [task, item] : items_found) ++r.tasks[size_t(task)].items_matched;
  r.seconds = now_seconds() - t0;
  if (say)
    say(fmt::format("scanned {:.1f} MB of text in {:.2f}s ({:.1f} MB/s)", double(r.text_bytes) / 1e6, r.seconds,
                    double(r.text_bytes) / 1e6 / std::max(r.seconds, 1e-9)));
  return r;
}

json report_json(const DecontamReport& r) {
  json j;
  j["dataset"] = r.dataset;
  j["fingerprint"] = r.fingerprint;
  j["n"] = r.options.n;
  j["threshold"] = r.options.threshold;
  j["method"] = kMethod;
  j["ngrams_indexed"] = r.ngrams;
  j["tasks"] = tasks_json(r);
  j["buckets"] = json::array();
  for (const DecontamBucketStats& b : r.buckets)
    j["buckets"].push_back({{"bucket", b.name}, {"train", split_json(b, 0)}, {"eval", split_json(b, 1)}});
  j["totals"] = totals_json(r);
  j["matches"] = json::array();
  for (const DecontamMatch& m : r.matches)
    j["matches"].push_back({{"id", m.doc_id},
                            {"bucket", r.buckets[size_t(m.bucket)].name},
                            {"split", split_name(m.split)},
                            {"task", r.tasks[size_t(m.task)].name},
                            {"file", r.tasks[size_t(m.task)].path},
                            {"item", m.line},
                            {"coverage", m.coverage}});
  j["text_bytes"] = r.text_bytes;
  j["seconds"] = r.seconds;
  return j;
}

Status write_decontaminated(const Dataset& ds, const DecontamReport& r, const std::string& out_dir, FileSystem& fs,
                            const std::function<void(const std::string&)>& say) {
  DatasetFilter f;
  for (const auto& dirty : r.contaminated) {
    std::array<std::vector<char>, 2> keep;
    for (int s = 0; s < 2; ++s)
      for (char d : dirty[size_t(s)]) keep[size_t(s)].push_back(d ? 0 : 1);
    f.keep.push_back(std::move(keep));
  }
  f.extra_files.push_back({"decontamination.json", report_json(r).dump(1) + "\n"});
  f.edit_manifest = [&r](json& m) {
    json pass;
    pass["source"] = {{"dataset", r.dataset}, {"fingerprint", r.fingerprint}};
    pass["n"] = r.options.n;
    pass["threshold"] = r.options.threshold;
    pass["method"] = kMethod;
    pass["tasks"] = tasks_json(r);
    pass["totals"] = totals_json(r);  // scanned and removed, per split
    pass["buckets"] = json::array();
    for (const DecontamBucketStats& b : r.buckets)
      if (b.removed_documents[0] || b.removed_documents[1])
        pass["buckets"].push_back({{"bucket", b.name},
                                   {"train_documents", b.removed_documents[0]},
                                   {"train_tokens", b.removed_tokens[0]},
                                   {"eval_documents", b.removed_documents[1]},
                                   {"eval_tokens", b.removed_tokens[1]}});
    pass["report"] = "decontamination.json";
    if (!m.contains("decontamination") || !m["decontamination"].is_array()) m["decontamination"] = json::array();
    m["decontamination"].push_back(pass);
  };
  return write_filtered_dataset(ds, f, out_dir, fs, say);
}

json decontamination_of(const json& manifest) {
  if (!manifest.is_object() || !manifest.contains("decontamination") || !manifest["decontamination"].is_array() ||
      manifest["decontamination"].empty())
    return {{"decontaminated", false}};
  json passes = json::array();
  for (const json& p : manifest["decontamination"]) {
    json q = p;
    q.erase("buckets");  // the per-bucket figures stay in the manifest and the report
    q.erase("method");
    passes.push_back(q);
  }
  return {{"decontaminated", true}, {"passes", passes}};
}

std::string describe_decontamination(const json& manifest) {
  const json d = decontamination_of(manifest);
  if (!d["decontaminated"].get<bool>()) return "not decontaminated";
  std::string out = "decontaminated: ";
  bool first = true;
  for (const json& p : d["passes"]) {
    std::vector<std::string> tasks;
    for (const json& t : p.value("tasks", json::array()))
      tasks.push_back(fmt::format("{} (xxh64 {})", t.value("path", "?"), t.value("hash", "?")));
    int64_t docs = 0, toks = 0;
    for (const char* s : {"train", "eval"})
      if (p.contains("totals") && p["totals"].contains(s)) {
        docs += p["totals"][s].value("removed_documents", int64_t(0));
        toks += p["totals"][s].value("removed_tokens", int64_t(0));
      }
    out += fmt::format("{}n={}, threshold {} against {}; {} documents, {} tokens removed", first ? "" : "; then ",
                       p.value("n", int64_t(0)), p.value("threshold", 0.0), fmt::join(tasks, ", "), docs, toks);
    first = false;
  }
  return out;
}

}  // namespace mt
