// dataset_filter.cpp — the copy of a dataset without some of its documents
// (dataset_filter.h).
#include "data/dataset_filter.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/file_io.h"
#include "data/data_build.h"
#include "data/dataset.h"
#include "data/line_reader.h"
#include "data/shard.h"

namespace mt {
namespace {

using json = nlohmann::json;

const char* split_name(int s) { return s ? "eval" : "train"; }

// Copies the kept documents of one split: tokens into a new shard, their
// provenance lines into a new docs file. Returns (tokens, documents) kept.
Result<std::pair<int64_t, int64_t>> copy_split(const Dataset& ds, const Bucket& b, int s, const std::vector<char>& keep,
                                               const std::string& tmp, FileSystem& fs) {
  const ShardReader& in = s ? *b.eval : *b.train;
  const char* split = split_name(s);
  if (int64_t(keep.size()) != in.n_docs())
    return Status::errorf("{} {}: {} keep flags for {} documents", b.name, split, keep.size(), in.n_docs());
  auto w = ShardWriter::open(tmp + "/" + shard_tokens_file(b.topic, b.quality, split),
                             tmp + "/" + shard_index_file(b.topic, b.quality, split), in.token_bytes(),
                             ds.tokenizer().hash(), fs);
  if (!w) return w.status();
  const std::string docs_in = ds.dir() + "/" + shard_docs_file(b.topic, b.quality, split);
  auto lines = LineReader::open(docs_in);
  if (!lines) return lines.status();
  auto docs_out = fs.new_writable_file(tmp + "/" + shard_docs_file(b.topic, b.quality, split));
  if (!docs_out) return docs_out.status();
  std::vector<int32_t> ids;
  std::string line, buf;
  for (int64_t k = 0; k < in.n_docs(); ++k) {
    auto more = lines.value()->next(line);
    if (!more) return more.status();
    if (!more.value()) return Status::errorf("{}: {} lines for the {} documents of the shard", docs_in, k, in.n_docs());
    if (!keep[size_t(k)]) continue;
    ids.resize(size_t(in.doc_length(k)));
    in.copy(in.doc_begin(k), int64_t(ids.size()), ids.data());
    MT_RETURN_IF_ERROR(w.value()->add_document(ids.data(), int64_t(ids.size())));
    buf += line;
    buf += '\n';
    if (buf.size() >= (1 << 16)) {
      MT_RETURN_IF_ERROR(docs_out.value()->append(buf.data(), int64_t(buf.size())));
      buf.clear();
    }
  }
  if (!buf.empty()) MT_RETURN_IF_ERROR(docs_out.value()->append(buf.data(), int64_t(buf.size())));
  MT_RETURN_IF_ERROR(docs_out.value()->close());  // synced with the directory before publishing, as the shards
  const std::pair<int64_t, int64_t> kept{w.value()->n_tokens(), w.value()->n_docs()};
  MT_RETURN_IF_ERROR(w.value()->finish(ShardSync::kDeferSync));
  return kept;
}

Status write_into(const Dataset& ds, const DatasetFilter& f, const std::string& tmp, FileSystem& fs,
                  const std::function<void(const std::string&)>& say) {
  json m = ds.manifest();
  int64_t totals[2][2] = {};  // [split][tokens, documents]
  for (size_t i = 0; i < ds.buckets().size(); ++i) {
    const Bucket& b = ds.buckets()[i];
    MT_RETURN_IF_ERROR(fs.create_dirs(tmp + "/buckets/" + b.topic));
    for (int s = 0; s < 2; ++s) {
      auto kept = copy_split(ds, b, s, f.keep[i][size_t(s)], tmp, fs);
      if (!kept) return kept.status();
      json& js = m["buckets"][i][split_name(s)];
      js["tokens"] = kept.value().first;
      js["documents"] = kept.value().second;
      totals[s][0] += kept.value().first;
      totals[s][1] += kept.value().second;
    }
    if (say) say(fmt::format("bucket {} written ({}/{})", b.name, i + 1, ds.buckets().size()));
  }
  m["totals"]["train_tokens"] = totals[0][0];
  m["totals"]["train_documents"] = totals[0][1];
  m["totals"]["eval_tokens"] = totals[1][0];
  m["totals"]["eval_documents"] = totals[1][1];
  MT_RETURN_IF_ERROR(
      write_file_atomic(tmp + "/" + m["tokenizer"]["file"].get<std::string>(), ds.tokenizer().serialized(), fs));
  for (const auto& [name, content] : f.extra_files)
    MT_RETURN_IF_ERROR(write_file_atomic(tmp + "/" + name, content, fs));
  if (f.edit_manifest) f.edit_manifest(m);
  return write_file_atomic(tmp + "/manifest.json", m.dump(1) + "\n", fs);  // last, as data build writes it
}

}  // namespace

Status write_filtered_dataset(const Dataset& ds, const DatasetFilter& filter, const std::string& out_dir,
                              FileSystem& fs, const std::function<void(const std::string&)>& say) {
  if (filter.keep.size() != ds.buckets().size())
    return Status::errorf("{}: keep flags for {} buckets, the dataset has {}", ds.dir(), filter.keep.size(),
                          ds.buckets().size());
  auto tmp = begin_dataset_dir(out_dir, fs, [&](const std::string& m) {
    if (say) say(m);
  });
  if (!tmp) return tmp.status();
  Status s = write_into(ds, filter, tmp.value(), fs, say);
  if (s) s = publish_dataset_dir(tmp.value(), out_dir, fs);
  if (!s) {
    std::error_code ec;
    std::filesystem::remove_all(tmp.value(), ec);  // a failed write leaves nothing behind
  }
  return s;
}

}  // namespace mt
