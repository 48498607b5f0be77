// data_build.cpp — the build config reader and the build pipeline.
#include "data/data_build.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include <omp.h>

#include <atomic>

#include "core/file_io.h"
#include "core/toml_document.h"
#include "core/hash.h"
#include "core/progress.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "data/shard.h"
#include "data/toml_table.h"

namespace mt {
namespace fs = std::filesystem;
namespace {

using json = nlohmann::json;

std::string resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute() || base_dir.empty()) return p;
  return (fs::path(base_dir) / p).lexically_normal().string();
}

Status parse_input(const toml::table& t, const std::string& source, const std::string& prefix,
                   const std::string& base, InputSpec& in) {
  TomlTable r(t, source, prefix);
  MT_RETURN_IF_ERROR(r.get("path", in.path));
  if (in.path.empty()) return Status::errorf("{}: {}path: required", source, prefix);
  in.path = resolve(base, in.path);
  MT_RETURN_IF_ERROR(r.get_enum("kind", in.kind, {"auto", "jsonl", "text", "repo", "repos", "code_jsonl", "rollouts"}));
  MT_RETURN_IF_ERROR(r.get("text_field", in.fields.text));
  if (in.kind == InputKind::kCodeJsonl && !t.contains("text_field")) in.fields.text = "content";
  MT_RETURN_IF_ERROR(r.get("id_field", in.fields.id));
  MT_RETURN_IF_ERROR(r.get("topic_field", in.fields.topic));
  MT_RETURN_IF_ERROR(r.get("quality_field", in.fields.quality));
  MT_RETURN_IF_ERROR(r.get("outcome_field", in.fields.outcome));
  MT_RETURN_IF_ERROR(r.get("repo_field", in.fields.repo));
  MT_RETURN_IF_ERROR(r.get("path_field", in.fields.path));
  MT_RETURN_IF_ERROR(r.get("topic", in.topic));
  MT_RETURN_IF_ERROR(r.get("quality", in.quality));
  MT_RETURN_IF_ERROR(r.get("extensions", in.extensions));
  MT_RETURN_IF_ERROR(r.get_enum("on_error", in.on_error, {"fail", "skip"}));
  MT_RETURN_IF_ERROR(r.get_enum("utf8", in.utf8, {"strict", "repair"}));
  if (in.fields.text.empty()) return Status::errorf("{}: {}text_field: must not be empty", source, prefix);
  return r.finish();
}

Status write_small_file(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::errorf("{}: cannot create", tmp);
    f.write(content.data(), std::streamsize(content.size()));
    if (!f) return Status::errorf("{}: write failed", tmp);
  }
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::errorf("{}: rename failed: {}", path, ec.message());
  return Status::ok();
}

json stats_json(const IngestStats& s) {
  json j;
  j["files"] = s.files;
  j["records"] = s.records;
  j["documents"] = s.documents;
  j["bytes"] = s.bytes;
  j["utf8_repaired"] = s.utf8_repaired;
  j["dropped"] = s.dropped;
  j["skipped_files"] = s.skipped_files;
  j["first_error"] = s.first_error;
  return j;
}

std::string topic_name(int32_t c, int64_t k) { return k > 100 ? fmt::format("t{:03d}", c) : fmt::format("t{:02d}", c); }

}  // namespace

Result<DataBuildConfig> parse_data_build_config(const std::string& text, const std::string& source) {
  DataBuildConfig c;
  c.source = source;
  c.text = text;
  const std::string base = fs::path(source).parent_path().string();
  auto parsed = parse_toml_document(text, source);
  if (!parsed) return parsed.status();
  toml::table doc = std::move(parsed.value());
  TomlTable top(doc, source, "");
  static const toml::table kEmpty;
  auto sub = [&](std::string_view name) -> const toml::table& {
    const toml::node* n = top.use(name);
    return n && n->is_table() ? *n->as_table() : kEmpty;
  };
  for (const char* name : {"code", "tokenizer", "topics", "quality", "split"}) {
    const toml::node* n = doc.get(name);
    if (n && !n->is_table()) return Status::errorf("{}: {}: expected a table", top.at(*n), name);
  }
  const toml::node* inputs = top.use("input");
  if (!inputs || !inputs->is_array_of_tables() || inputs->as_array()->empty())
    return Status::errorf("{}: at least one [[input]] table is required", source);
  for (size_t i = 0; i < inputs->as_array()->size(); ++i) {
    InputSpec in;
    MT_RETURN_IF_ERROR(parse_input(*(*inputs->as_array())[i].as_table(), source, fmt::format("input[{}].", i), base, in));
    c.inputs.push_back(std::move(in));
  }
  {
    TomlTable r(sub("code"), source, "code.");
    MT_RETURN_IF_ERROR(r.get("max_file_bytes", c.code.max_file_bytes, 1));
    MT_RETURN_IF_ERROR(r.get("max_repo_bytes", c.code.max_repo_bytes, 1));
    MT_RETURN_IF_ERROR(r.finish());
  }
  {
    TomlTable r(sub("tokenizer"), source, "tokenizer.");
    MT_RETURN_IF_ERROR(r.get("model", c.tokenizer_model));
    c.tokenizer_model = resolve(base, c.tokenizer_model);
    MT_RETURN_IF_ERROR(r.get("vocab_size", c.tokenizer.vocab_size, 256 + kNumSpecials + 8));
    MT_RETURN_IF_ERROR(r.get("sample_bytes", c.tokenizer.sample_bytes, 1));
    MT_RETURN_IF_ERROR(r.get("threads", c.tokenizer.threads, 1));
    MT_RETURN_IF_ERROR(r.finish());
  }
  {
    TomlTable r(sub("topics"), source, "topics.");
    MT_RETURN_IF_ERROR(r.get_enum("source", c.topic_source, {"auto", "metadata", "cluster"}));
    MT_RETURN_IF_ERROR(r.get("n_topics", c.topics.n_topics, 1));
    MT_RETURN_IF_ERROR(r.get("dims", c.topics.dims, 16));
    MT_RETURN_IF_ERROR(r.get("sample_docs", c.topics.sample_docs, 1));
    MT_RETURN_IF_ERROR(r.get("iterations", c.topics.iterations, 1));
    MT_RETURN_IF_ERROR(r.finish());
  }
  {
    TomlTable r(sub("quality"), source, "quality.");
    MT_RETURN_IF_ERROR(r.get_enum("source", c.quality_source, {"auto", "metadata", "perplexity"}));
    MT_RETURN_IF_ERROR(r.get("n_quality", c.n_quality, 1));
    MT_RETURN_IF_ERROR(r.get("order", c.ngram_order, 1));
    if (c.ngram_order > 8) return Status::errorf("{}: must be <= 8, got {}", r.where("order"), c.ngram_order);
    std::vector<std::string> refs;
    const toml::node* ref = doc.get("quality") && doc["quality"].as_table() ? doc["quality"].as_table()->get("reference") : nullptr;
    if (ref && ref->is_string()) {
      std::string one;
      MT_RETURN_IF_ERROR(r.get("reference", one));
      refs.push_back(one);
    } else {
      MT_RETURN_IF_ERROR(r.get("reference", refs));
    }
    for (const std::string& p : refs) {
      InputSpec in;
      in.path = resolve(base, p);
      in.on_error = OnError::kSkip;
      in.utf8 = Utf8Policy::kRepair;
      c.quality_reference.push_back(in);
    }
    MT_RETURN_IF_ERROR(r.finish());
  }
  {
    TomlTable r(sub("split"), source, "split.");
    MT_RETURN_IF_ERROR(r.get("eval_frac", c.eval_frac));
    if (!(c.eval_frac >= 0 && c.eval_frac < 1))
      return Status::errorf("{}: must be in [0, 1), got {}", r.where("eval_frac"), c.eval_frac);
    MT_RETURN_IF_ERROR(r.get("seed", c.seed));
    MT_RETURN_IF_ERROR(r.finish());
  }
  c.topics.seed = c.seed;
  MT_RETURN_IF_ERROR(top.finish());
  return c;
}

Result<DataBuildConfig> load_data_build_config(const std::string& path) {
  auto text = read_file(path, "data build config");
  if (!text) return text.status();
  return parse_data_build_config(text.value(), path);
}

Status build_dataset(const DataBuildConfig& cfg, const std::string& out_dir, BuildReport& rep, bool verbose) {
  auto say = [&](const std::string& s) {
    if (verbose) fmt::print(stderr, "# data build: {}\n", s);
  };
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec)))
    return Status::errorf("{}: output exists and is not an empty directory (remove it first)", out_dir);
  const std::string tmp = fs::path(out_dir).lexically_normal().string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp + "/buckets", ec);
  if (ec) return Status::errorf("{}: cannot create: {}", tmp, ec.message());
  struct Cleanup {  // a failed build leaves nothing behind
    std::string dir;
    ~Cleanup() {
      std::error_code e;
      if (!dir.empty()) fs::remove_all(dir, e);
    }
  } cleanup{tmp};

  // 1. Ingest.
  double t0 = now_seconds();
  std::vector<Document> docs;
  MT_RETURN_IF_ERROR(ingest(cfg.inputs, cfg.code, docs, rep.ingest));
  if (docs.empty()) return Status::errorf("{}: the inputs hold no documents", cfg.source);
  rep.seconds_ingest = now_seconds() - t0;
  say(fmt::format("{} documents ({} MB) from {} files", docs.size(), rep.ingest.bytes >> 20, rep.ingest.files));

  // 2. Tokenizer.
  t0 = now_seconds();
  std::string model;
  if (!cfg.tokenizer_model.empty()) {
    auto tk = Tokenizer::load(cfg.tokenizer_model);
    if (!tk) return tk.status();
    model = tk.value()->serialized();
  } else {
    std::vector<std::string_view> texts;
    for (const Document& d : docs) texts.push_back(d.text);
    auto trained = Tokenizer::train(texts, cfg.tokenizer);
    if (!trained) return trained.status();
    model = std::move(trained.value());
  }
  auto tok_r = Tokenizer::from_serialized(model, cfg.tokenizer_model.empty() ? "trained tokenizer" : cfg.tokenizer_model);
  if (!tok_r) return tok_r.status();
  const Tokenizer& tok = *tok_r.value();
  rep.vocab_size = tok.vocab_size();
  rep.seconds_tokenizer = now_seconds() - t0;
  say(fmt::format("tokenizer: {} pieces, hash {}", tok.vocab_size(), hex64(tok.hash())));

  // 3. Labels.
  t0 = now_seconds();
  const int64_t n = int64_t(docs.size());
  std::string topic_how = "metadata", quality_how = "metadata";
  {
    std::vector<int64_t> todo;
    for (int64_t i = 0; i < n; ++i) {
      if (cfg.topic_source == LabelSource::kComputed || docs[i].topic.empty()) todo.push_back(i);
      if (cfg.topic_source == LabelSource::kMetadata && docs[i].topic.empty())
        return Status::errorf("{}: document has no topic (topics.source = \"metadata\")", docs[i].origin);
    }
    if (!todo.empty()) {
      std::vector<std::string_view> texts;
      for (int64_t i : todo) texts.push_back(docs[i].text);
      const std::vector<int32_t> c = cluster_topics(texts, cfg.topics);
      const int64_t k = std::min<int64_t>(cfg.topics.n_topics, int64_t(todo.size()));
      for (size_t j = 0; j < todo.size(); ++j) docs[todo[j]].topic = topic_name(c[j], k);
      topic_how = todo.size() == size_t(n) ? "cluster" : "metadata+cluster";
    }
  }
  {
    std::vector<int64_t> scored, todo;
    for (int64_t i = 0; i < n; ++i) {
      Document& d = docs[i];
      if (cfg.quality_source == LabelSource::kComputed) todo.push_back(i);
      else if (!d.quality.empty()) continue;
      else if (!std::isnan(d.quality_score)) scored.push_back(i);
      else if (cfg.quality_source == LabelSource::kMetadata)
        return Status::errorf("{}: document has no quality label or score (quality.source = \"metadata\")", d.origin);
      else todo.push_back(i);
    }
    auto cut = [&](const std::vector<int64_t>& idx, const std::vector<double>& score) {
      const std::vector<int32_t> lv = quantile_levels(score, cfg.n_quality);
      for (size_t j = 0; j < idx.size(); ++j) docs[idx[j]].quality = fmt::format("q{}", lv[j]);
    };
    if (!scored.empty()) {
      std::vector<double> s;
      for (int64_t i : scored) s.push_back(docs[i].quality_score);
      cut(scored, s);
    }
    if (!todo.empty()) {
      NgramModel lm(int(cfg.ngram_order));
      constexpr int64_t kRefCap = 32 << 20;
      if (!cfg.quality_reference.empty()) {
        std::vector<Document> ref;
        IngestStats rs;
        MT_RETURN_IF_ERROR(ingest(cfg.quality_reference, cfg.code, ref, rs));
        if (ref.empty()) return Status::errorf("{}: quality.reference holds no text", cfg.source);
        int64_t used = 0;
        for (const Document& d : ref) {
          if (used >= kRefCap) break;
          lm.train(std::string_view(d.text).substr(0, size_t(kRefCap - used)));
          used += int64_t(d.text.size());
        }
        quality_how = "perplexity vs reference";
      } else {
        // No reference: the corpus itself, an even share of each document.
        int64_t total = 0;
        for (const Document& d : docs) total += int64_t(d.text.size());
        const double frac = std::min(1.0, double(kRefCap) / double(std::max<int64_t>(total, 1)));
        for (const Document& d : docs) lm.train(std::string_view(d.text).substr(0, size_t(double(d.text.size()) * frac) + 1));
        quality_how = "perplexity vs corpus";
      }
      std::vector<double> s(todo.size());
#pragma omp parallel for schedule(dynamic, 16)
      for (int64_t j = 0; j < int64_t(todo.size()); ++j) s[size_t(j)] = lm.mean_log2prob(docs[todo[size_t(j)]].text);
      cut(todo, s);
      if (!scored.empty() || todo.size() < size_t(n)) quality_how = "metadata+" + quality_how;
    }
  }
  rep.seconds_labels = now_seconds() - t0;

  // 4. Tokenize (documents are independent; the result does not depend on threads).
  t0 = now_seconds();
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(n));
  {
    // Tokenizing is the slow stage of a build: show a live line (MB/s, ETA).
    ProgressLine progress(stderr, 20);
    std::atomic<int64_t> done_docs{0}, done_bytes{0};
    int64_t total_bytes = 0;
    for (const auto& d : docs) total_bytes += int64_t(d.text.size());
    double last = 0.0;
#pragma omp parallel for schedule(dynamic, 8)
    for (int64_t i = 0; i < n; ++i) {
      encode_document(tok, docs[size_t(i)], ids[size_t(i)]);
      done_bytes += int64_t(docs[size_t(i)].text.size());
      const int64_t d = ++done_docs;
      if (verbose && omp_get_thread_num() == 0 && (now_seconds() - last > 0.25 || d == n)) {
        last = now_seconds();
        const double el = last - t0, mb = double(done_bytes) / 1e6;
        progress.update(d, n, fmt::format("tokenizing | {:.1f} MB/s | ETA {}", mb / std::max(el, 1e-9),
                                          ProgressLine::format_eta(el * (double(total_bytes) / 1e6 - mb) /
                                                                   std::max(mb, 1e-9))));
      }
    }
    progress.finish();
  }
  rep.seconds_tokenize = now_seconds() - t0;

  // 5. Buckets (by name) and the eval split (by document hash, so it does not
  // depend on the order of inputs).
  t0 = now_seconds();
  std::map<std::pair<std::string, std::string>, std::vector<int64_t>> buckets;
  for (int64_t i = 0; i < n; ++i) buckets[{docs[i].topic, docs[i].quality}].push_back(i);
  const int token_bytes = tok.vocab_size() <= 65536 ? 2 : 4;
  json mb = json::array();
  for (const auto& [key, members] : buckets) {
    const auto& [topic, quality] = key;
    fs::create_directories(tmp + "/buckets/" + topic, ec);
    if (ec) return Status::errorf("{}/buckets/{}: cannot create: {}", tmp, topic, ec.message());
    json jb;
    jb["name"] = topic + "/" + quality;
    jb["topic"] = topic;
    jb["quality"] = quality;
    for (const char* split : {"train", "eval"}) {
      const bool want_eval = std::string(split) == "eval";
      std::vector<int32_t> tokens;
      std::vector<int64_t> offsets{0};
      for (int64_t i : members) {
        const std::string& t = docs[i].text;
        const double u = double(xxh64(t.data(), t.size(), cfg.seed) >> 11) / 9007199254740992.0;
        if ((u < cfg.eval_frac) != want_eval) continue;
        tokens.insert(tokens.end(), ids[i].begin(), ids[i].end());
        offsets.push_back(int64_t(tokens.size()));
      }
      const std::string tf = shard_tokens_file(topic, quality, split), xf = shard_index_file(topic, quality, split);
      MT_RETURN_IF_ERROR(
          write_shard(tmp + "/" + tf, tmp + "/" + xf, tokens, offsets, token_bytes, tok.hash(), ShardSync::kDeferSync));
      jb[split] = {{"tokens", int64_t(tokens.size())}, {"documents", int64_t(offsets.size() - 1)},
                   {"tokens_file", tf}, {"index_file", xf}};
      (want_eval ? rep.eval_tokens : rep.train_tokens) += int64_t(tokens.size());
      (want_eval ? rep.eval_docs : rep.train_docs) += int64_t(offsets.size() - 1);
    }
    mb.push_back(jb);
  }
  rep.buckets = int64_t(buckets.size());
  MT_RETURN_IF_ERROR(write_small_file(tmp + "/tokenizer.model", model));
  json m;
  m["format"] = "moetrain-dataset";
  m["version"] = kDatasetVersion;
  m["tokenizer"] = {{"file", "tokenizer.model"}, {"hash", hex64(tok.hash())}, {"vocab_size", tok.vocab_size()},
                    {"kind", "sentencepiece-bpe-byte-fallback"}};
  json specials;
  for (int s = 0; s < kNumSpecials; ++s) specials[special_piece(Special(s))] = tok.special(Special(s));
  m["tokenizer"]["specials"] = specials;
  m["token_bytes"] = token_bytes;
  m["buckets"] = mb;
  m["labels"] = {{"topic", topic_how}, {"quality", quality_how}, {"n_quality", cfg.n_quality},
                 {"n_topics", cfg.topics.n_topics}};
  m["split"] = {{"eval_frac", cfg.eval_frac}, {"seed", cfg.seed}};
  m["totals"] = {{"train_tokens", rep.train_tokens}, {"eval_tokens", rep.eval_tokens},
                 {"train_documents", rep.train_docs}, {"eval_documents", rep.eval_docs}};
  m["ingest"] = stats_json(rep.ingest);
  m["build_config"] = cfg.text;
  MT_RETURN_IF_ERROR(write_small_file(tmp + "/manifest.json", m.dump(1) + "\n"));
  rep.seconds_write = now_seconds() - t0;

  // Everything is durable before the rename publishes it.
  if (int fd = ::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    const int rc = ::syncfs(fd);
    ::close(fd);
    if (rc != 0) return Status::errorf("{}: syncfs failed", tmp);
  }
  if (fs::exists(out_dir, ec)) fs::remove(out_dir, ec);  // empty, checked above
  fs::rename(tmp, out_dir, ec);
  if (!ec) cleanup.dir.clear();
  if (ec) return Status::errorf("{}: cannot move the finished dataset into place: {}", out_dir, ec.message());
  say(fmt::format("{} buckets, {} train + {} eval tokens -> {}", rep.buckets, rep.train_tokens, rep.eval_tokens,
                  out_dir));
  return Status::ok();
}

}  // namespace mt
