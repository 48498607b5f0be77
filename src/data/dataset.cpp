// dataset.cpp — reading and cross-checking a dataset directory.
#include "data/dataset.h"
#include "core/file_io.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/hash.h"

namespace mt {
namespace {

using json = nlohmann::json;

Status read_text(const std::string& path, std::string& out) {
  auto text = read_file(path, "file");
  if (!text) return text.status();
  out = std::move(text.value());
  return Status::ok();
}

// Typed access with errors naming file and JSON path.
struct Get {
  const std::string& file;
  Status str(const json& j, const char* key, const std::string& path, std::string& out) const {
    if (!j.is_object() || !j.contains(key) || !j[key].is_string())
      return Status::errorf("{}: {}{}: expected a string", file, path, key);
    out = j[key].get<std::string>();
    return Status::ok();
  }
  Status num(const json& j, const char* key, const std::string& path, int64_t& out) const {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer())
      return Status::errorf("{}: {}{}: expected an integer", file, path, key);
    out = j[key].get<int64_t>();
    return Status::ok();
  }
};

}  // namespace

std::string shard_tokens_file(const std::string& topic, const std::string& quality, const std::string& split) {
  return fmt::format("buckets/{}/{}.{}.tokens", topic, quality, split);
}
std::string shard_index_file(const std::string& topic, const std::string& quality, const std::string& split) {
  return fmt::format("buckets/{}/{}.{}.index", topic, quality, split);
}

std::string shard_docs_file(const std::string& topic, const std::string& quality, const std::string& split) {
  return "buckets/" + topic + "/" + quality + "." + split + ".docs.jsonl";
}

int64_t Dataset::find(const std::string& name) const {
  for (size_t i = 0; i < buckets_.size(); ++i)
    if (buckets_[i].name == name) return int64_t(i);
  return -1;
}

Result<std::unique_ptr<Dataset>> Dataset::open(const std::string& dir, ShardVerify verify) {
  auto ds = std::make_unique<Dataset>();
  ds->dir_ = dir;
  const std::string mpath = dir + "/manifest.json";
  std::string text;
  if (Status s = read_text(mpath, text); !s)
    return Status::errorf("{}: not a dataset directory (no readable manifest.json; build one with `moetrain data "
                          "build`)", dir);
  ds->fingerprint_ = hex64(xxh64(text.data(), text.size()));
  try {
    ds->manifest_ = json::parse(text);
  } catch (const json::exception& e) {
    return Status::errorf("{}: malformed JSON: {}", mpath, e.what());
  }
  const json& m = ds->manifest_;
  Get g{mpath};
  std::string format, tok_file, tok_hash;
  int64_t version = 0, vocab = 0;
  MT_RETURN_IF_ERROR(g.str(m, "format", "", format));
  if (format != "moetrain-dataset") return Status::errorf("{}: format is \"{}\", not \"moetrain-dataset\"", mpath, format);
  MT_RETURN_IF_ERROR(g.num(m, "version", "", version));
  if (version != kDatasetVersion)
    return Status::errorf("{}: dataset version {} (this build reads version {})", mpath, version, kDatasetVersion);
  if (!m.contains("tokenizer")) return Status::errorf("{}: tokenizer: missing", mpath);
  MT_RETURN_IF_ERROR(g.str(m["tokenizer"], "file", "tokenizer.", tok_file));
  MT_RETURN_IF_ERROR(g.str(m["tokenizer"], "hash", "tokenizer.", tok_hash));
  MT_RETURN_IF_ERROR(g.num(m["tokenizer"], "vocab_size", "tokenizer.", vocab));
  auto tok = Tokenizer::load(dir + "/" + tok_file);
  if (!tok) return tok.status();
  ds->tokenizer_ = std::move(tok.value());
  if (hex64(ds->tokenizer_->hash()) != tok_hash)
    return Status::errorf("{}/{}: tokenizer mismatch: file hash {} but the manifest records {}", dir, tok_file,
                          hex64(ds->tokenizer_->hash()), tok_hash);
  if (ds->tokenizer_->vocab_size() != vocab)
    return Status::errorf("{}/{}: vocabulary of {} pieces, the manifest records {}", dir, tok_file,
                          ds->tokenizer_->vocab_size(), vocab);
  if (!m.contains("buckets") || !m["buckets"].is_array()) return Status::errorf("{}: buckets: expected an array", mpath);
  for (size_t i = 0; i < m["buckets"].size(); ++i) {
    const json& b = m["buckets"][i];
    const std::string p = fmt::format("buckets[{}].", i);
    Bucket bucket;
    MT_RETURN_IF_ERROR(g.str(b, "name", p, bucket.name));
    MT_RETURN_IF_ERROR(g.str(b, "topic", p, bucket.topic));
    MT_RETURN_IF_ERROR(g.str(b, "quality", p, bucket.quality));
    if (bucket.name != bucket.topic + "/" + bucket.quality)
      return Status::errorf("{}: {}name \"{}\" is not topic/quality", mpath, p, bucket.name);
    for (const char* split : {"train", "eval"}) {
      const std::string sp = p + split + ".";
      if (!b.contains(split)) return Status::errorf("{}: {}{}: missing", mpath, p, split);
      std::string tf, xf;
      int64_t tokens = 0, docs = 0;
      MT_RETURN_IF_ERROR(g.str(b[split], "tokens_file", sp, tf));
      MT_RETURN_IF_ERROR(g.str(b[split], "index_file", sp, xf));
      MT_RETURN_IF_ERROR(g.num(b[split], "tokens", sp, tokens));
      MT_RETURN_IF_ERROR(g.num(b[split], "documents", sp, docs));
      if (tf != shard_tokens_file(bucket.topic, bucket.quality, split) ||
          xf != shard_index_file(bucket.topic, bucket.quality, split))
        return Status::errorf("{}: {}: shard files must be {} and {}", mpath, sp, shard_tokens_file(bucket.topic, bucket.quality, split),
                              shard_index_file(bucket.topic, bucket.quality, split));
      auto r = ShardReader::open(dir + "/" + tf, dir + "/" + xf, ds->tokenizer_->hash(), vocab, verify);
      if (!r) return r.status();
      if (r.value()->n_tokens() != tokens || r.value()->n_docs() != docs)
        return Status::errorf("{}/{}: holds {} tokens in {} documents, the manifest records {} in {}", dir, tf,
                              r.value()->n_tokens(), r.value()->n_docs(), tokens, docs);
      (std::string(split) == "train" ? bucket.train : bucket.eval) = std::move(r.value());
    }
    if (ds->find(bucket.name) >= 0) return Status::errorf("{}: bucket \"{}\" listed twice", mpath, bucket.name);
    ds->buckets_.push_back(std::move(bucket));
  }
  return ds;
}

int64_t held_out_windows(const Bucket& b, int64_t seq_len) {
  const int64_t L = b.eval->n_tokens() + b.eval->n_docs();
  return L >= seq_len + 1 ? (L - 1) / seq_len : 0;
}

}  // namespace mt
