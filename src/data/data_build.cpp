// data_build.cpp — the build config reader and the build pipeline.
#include "data/data_build.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include <omp.h>

#include <atomic>

#include "core/file_io.h"
#include "core/config_schema.h"
#include "core/hash.h"
#include "core/progress.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "data/shard.h"

namespace mt {
namespace fs = std::filesystem;
namespace {

using json = nlohmann::json;

std::string resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute() || base_dir.empty()) return p;
  return (fs::path(base_dir) / p).lexically_normal().string();
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

// out_dir without a trailing separator, so that the build directory of
// "ds/" is "ds.tmp-PID" beside it (inside it, the final rename would fail).
fs::path output_path(const std::string& out_dir) {
  fs::path p = fs::path(out_dir).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

// "<out_dir>.tmp-<pid>": where the build run by process `pid` assembles.
std::string build_dir_of(const std::string& out_dir, int64_t pid) {
  return output_path(out_dir).string() + ".tmp-" + std::to_string(pid);
}

// The pid in a build directory's name ("ds.tmp-1234" -> 1234), or -1 when
// the name is not exactly that pattern. Nothing but digits after the prefix,
// and a pid > 0: kill(0, 0) and kill(-1, 0) would ask about process groups.
int64_t pid_of_build_dir(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = name.substr(prefix.size());
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;  // 9 digits fit a pid_t; longer is not a pid
  const int64_t pid = std::stoll(digits);
  return pid > 0 ? pid : -1;
}

// Removes the build directories of out_dir left by builds that crashed:
// every "<out_dir>.tmp-<pid>" whose process no longer exists. A process is
// gone only when kill(pid, 0) fails with ESRCH; EPERM (another user's
// process) and success (a concurrent build, or a reused pid) keep the
// directory, so the worst a mistake costs is a leftover, never a live
// build's files. The pids are this machine's: two hosts building the same
// out_dir on a shared file system would see each other's builds as gone.
void remove_stale_build_dirs(const std::string& out_dir, const std::function<void(const std::string&)>& say) {
  const fs::path out = output_path(out_dir);
  const std::string prefix = out.filename().string() + ".tmp-";
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::error_code ec;
  std::vector<std::pair<fs::path, int64_t>> stale;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const int64_t pid = pid_of_build_dir(it->path().filename().string(), prefix);
    if (pid < 0 || pid == int64_t(::getpid())) continue;  // our own is cleared by the build itself
    std::error_code st;
    if (!fs::is_directory(it->symlink_status(st))) continue;  // builds make directories; never follow a link
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
    stale.emplace_back(it->path(), pid);
  }
  for (const auto& [dir, pid] : stale) {  // after the scan: removing while iterating is unspecified
    const std::string shown = (out.has_parent_path() ? dir : dir.filename()).string();
    std::error_code rm;
    fs::remove_all(dir, rm);
    if (rm) say(fmt::format("cannot remove stale {} (process {} is gone): {}", shown, pid, rm.message()));
    else say(fmt::format("removed stale {} (process {} is gone)", shown, pid));
  }
}

}  // namespace

namespace {

void declare_input_keys(ConfigSchema& s, InputSpec& in) {
  s.add("path", &in.path, "file or directory (relative to this config file)").required();
  s.add_enum("kind", &in.kind, {"auto", "jsonl", "text", "repo", "repos", "code_jsonl", "rollouts"},
             "auto: a directory's files by extension, *.jsonl[.gz|.zst] as JSONL, else text");
  s.add("text_field", &in.fields.text, "JSONL field holding the text (code_jsonl default: \"content\")");
  s.add("id_field", &in.fields.id, "JSONL field holding a document id");
  s.add("topic_field", &in.fields.topic, "JSONL field holding a topic label");
  s.add("quality_field", &in.fields.quality, "JSONL field holding a quality label");
  s.add("outcome_field", &in.fields.outcome, "rollouts: JSONL field holding success/failure");
  s.add("repo_field", &in.fields.repo, "code_jsonl: field naming the repository");
  s.add("path_field", &in.fields.path, "code_jsonl: field naming the file path");
  s.add("topic", &in.topic, "topic of every document of this input (\"\" = the labeler decides)");
  s.add("quality", &in.quality, "quality level of every document of this input (\"\" = the labeler decides)");
  s.add("extensions", &in.extensions, "directories: only files with these suffixes; empty = all");
  s.add_enum("on_error", &in.on_error, {"fail", "skip"}, "a malformed record stops the build, or is skipped and counted");
  s.add_enum("utf8", &in.utf8, {"strict", "repair"}, "invalid UTF-8: an error, or replaced by U+FFFD and counted");
}

}  // namespace

void declare_keys(ConfigSchema& s, DataBuildConfig& c) {
  s.add_table_array<InputSpec>("input", &c.inputs, declare_input_keys, "one [[input]] table per source, read in order")
      .required();
  s.add("code.max_file_bytes", &c.code.max_file_bytes, "larger source files are skipped (\"oversized\")").min(1).unit("bytes");
  s.add("code.max_repo_bytes", &c.code.max_repo_bytes, "longer repositories are split at file boundaries").min(1).unit("bytes");
  s.add("tokenizer.model", &c.tokenizer_model, "an existing SentencePiece model file; \"\" = train one on the corpus");
  s.add("tokenizer.vocab_size", &c.tokenizer.vocab_size, "vocabulary of a trained tokenizer (upper bound)")
      .min(256 + kNumSpecials + 8).unit("tokens");
  s.add("tokenizer.sample_bytes", &c.tokenizer.sample_bytes, "text fed to tokenizer training, taken evenly").min(1).unit("bytes");
  s.add("tokenizer.threads", &c.tokenizer.threads, "tokenizer training threads").min(1);
  s.add_enum("topics.source", &c.topic_source, {"auto", "metadata", "cluster"},
             "auto: metadata where present, else clustering");
  s.add("topics.n_topics", &c.topics.n_topics, "clusters when computed").min(1);
  s.add("topics.dims", &c.topics.dims, "hashed feature dimensions").min(16);
  s.add("topics.sample_docs", &c.topics.sample_docs, "k-means is fitted on at most this many documents").min(1);
  s.add("topics.iterations", &c.topics.iterations, "k-means iterations").min(1);
  s.add_enum("quality.source", &c.quality_source, {"auto", "metadata", "perplexity"},
             "auto: metadata where present, else n-gram perplexity");
  s.add("quality.n_quality", &c.n_quality, "levels q0 (worst) .. q{n-1} (best)").min(1);
  s.add("quality.order", &c.ngram_order, "order of the byte n-gram model").range(1, 8);
  s.add("quality.reference", &c.quality_reference, "files whose n-gram model defines \"good\"; empty = the corpus")
      .or_one_string();
  s.add("split.eval_frac", &c.eval_frac, "fraction of documents held out (by document hash)").min(0).below(1);
  s.add("split.seed", &c.seed, "seed of the eval split and of clustering");
}

Result<DataBuildConfig> parse_data_build_config(const std::string& text, const std::string& source,
                                                const std::vector<std::string>& overrides) {
  DataBuildConfig c;
  c.source = source;
  c.text = text;
  ConfigSchema s("data build config");
  declare_keys(s, c);
  ConfigOrigins o;
  MT_RETURN_IF_ERROR(s.load(text, source, overrides, o));
  const std::string base = fs::path(source).parent_path().string();
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    InputSpec& in = c.inputs[i];
    const std::string key = fmt::format("input[{}]", i);
    if (in.kind == InputKind::kCodeJsonl && !o.was_set(key + ".text_field")) in.fields.text = "content";
    if (in.fields.text.empty()) return o.error(key + ".text_field", "must not be empty");
    in.path = resolve(base, in.path);
  }
  c.tokenizer_model = resolve(base, c.tokenizer_model);
  for (std::string& p : c.quality_reference) p = resolve(base, p);
  c.topics.seed = c.seed;
  if (!overrides.empty()) c.text = s.to_toml();  // the manifest records what was built
  return c;
}

Result<DataBuildConfig> load_data_build_config(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_file(path, "data build config");
  if (!text) return text.status();
  return parse_data_build_config(text.value(), path, overrides);
}

Status build_dataset(const DataBuildConfig& cfg, const std::string& out_dir, BuildReport& rep, bool verbose) {
  auto say = [&](const std::string& s) {
    if (verbose) fmt::print(stderr, "# data build: {}\n", s);
  };
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec)))
    return Status::errorf("{}: output exists and is not an empty directory (remove it first)", out_dir);
  remove_stale_build_dirs(out_dir, say);
  const std::string tmp = build_dir_of(out_dir, ::getpid());
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
        std::vector<InputSpec> refs;
        for (const std::string& path : cfg.quality_reference) {
          InputSpec in;  // reference text is read leniently: it only shapes the score
          in.path = path;
          in.on_error = OnError::kSkip;
          in.utf8 = Utf8Policy::kRepair;
          refs.push_back(in);
        }
        MT_RETURN_IF_ERROR(ingest(refs, cfg.code, ref, rs));
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
  MT_RETURN_IF_ERROR(write_file_atomic(tmp + "/tokenizer.model", model));
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
  MT_RETURN_IF_ERROR(write_file_atomic(tmp + "/manifest.json", m.dump(1) + "\n"));
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
