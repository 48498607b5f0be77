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

// out_dir without a trailing separator, so that the build directory of
// "ds/" is "ds.tmp-PID" beside it (inside it, the final rename would fail).
fs::path output_path(const std::string& out_dir) {
  fs::path p = fs::path(out_dir).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
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

}  // namespace

// "<out_dir>.tmp-<pid>": where the build run by process `pid` assembles.
std::string build_dir_of(const std::string& out_dir, int64_t pid) {
  return output_path(out_dir).string() + ".tmp-" + std::to_string(pid);
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

Result<std::string> begin_dataset_dir(const std::string& out_dir, FileSystem& files,
                                      const std::function<void(const std::string&)>& say) {
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec)))
    return Status::errorf("{}: output exists and is not an empty directory (remove it first)", out_dir);
  remove_stale_build_dirs(out_dir, say);
  const std::string tmp = build_dir_of(out_dir, ::getpid());
  fs::remove_all(tmp, ec);  // a previous attempt of this process
  if (Status s = files.create_dirs(tmp + "/buckets"); !s) {
    fs::remove_all(tmp, ec);
    return s;
  }
  return tmp;
}

Status publish_dataset_dir(const std::string& tmp, const std::string& out_dir, FileSystem& files) {
  // Everything is durable before the rename publishes it.
  if (int fd = ::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    const int rc = ::syncfs(fd);
    ::close(fd);
    if (rc != 0) return Status::errorf("{}: syncfs failed", tmp);
  }
  std::error_code ec;
  if (fs::exists(out_dir, ec)) fs::remove(out_dir, ec);  // empty, checked by begin_dataset_dir
  if (Status s = files.rename(tmp, out_dir); !s)
    return Status::errorf("{}: cannot move the finished dataset into place: {}", out_dir, s.message());
  return Status::ok();
}

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
  s.add_enum("quality.source", &c.quality_source, {"auto", "metadata", "computed"},
             "auto: metadata where present, else computed by quality.method");
  s.add("quality.n_quality", &c.n_quality, "levels q0 (worst) .. q{n-1} (best)").min(1);
  s.add("quality.reference", &c.quality_reference,
        "files or directories of \"good\" text (classifier positives, n-gram training); empty = none")
      .or_one_string();
  declare_quality_model_keys(s, c.quality_model);
  declare_topic_model_keys(s, c.topic_config);
  s.add_choice("quality.levels_within", &c.quality_within, {"topic", "input", "corpus"},
                    "levels are cut by rank within each topic (default: a domain is never taken for quality), "
                    "within each [[input]], or over the whole corpus");
  s.add("quality.sample_docs", &c.quality_sample_docs, "corpus documents the quality scorers are fitted on").min(1);
  s.add("limits.max_doc_bytes", &c.limits.max_doc_bytes, "longer documents are split or truncated (counted)")
      .min(1024).unit("bytes");
  s.add_enum("limits.long_docs", &c.limits.long_docs, {"split", "truncate"},
             "split: cut at line breaks into documents of at most max_doc_bytes; truncate: keep the first");
  s.add("dedup.exact", &c.dedup_exact, "drop exact duplicates (text and special tokens) of an earlier document");
  s.add("dedup.near", &c.dedup_near, "drop MinHash near-duplicates of an earlier document");
  s.add("dedup.ngram", &c.minhash.ngram, "words per MinHash shingle").range(1, 64);
  s.add("dedup.bands", &c.minhash.bands, "LSH bands").range(1, 256);
  s.add("dedup.rows", &c.minhash.rows, "hashes per LSH band").range(1, 64);
  s.add("build.batch_bytes", &c.batch_bytes, "text labelled and tokenized in parallel at a time").min(1 << 16).unit("bytes");
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
  c.minhash.seed = c.seed;
  if (!overrides.empty()) c.text = s.to_toml();  // the manifest records what was built
  return c;
}

Result<DataBuildConfig> load_data_build_config(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_file(path, "data build config");
  if (!text) return text.status();
  return parse_data_build_config(text.value(), path, overrides);
}

}  // namespace mt
