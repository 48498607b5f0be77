// build_pipeline.cpp — `data build` as passes over scratch files, so memory
// does not grow with the text (docs/data.md, "Build pipeline"):
//   1. ingest: each rank reads its share of the ingest items (files,
//      repositories), spills the documents and keeps per document only its
//      keys (exact hash, MinHash bands); the keys are gathered and every rank
//      takes the same keep/drop decisions in input order;
//   2. samples: documents chosen by hash for the tokenizer and the labellers;
//      the tokenizer is trained (rank 0) or loaded, the labellers fitted;
//   3. tokenize: each rank tokenizes, labels and scores its kept documents in
//      parallel batches into a token spill; labels and scores are gathered and
//      quality levels cut (within topics by default);
//   4. write: rank 0 merges the token spills in document order into the
//      bucket shards, the per-document provenance files and the manifest.
// Nothing depends on the number of ranks or threads: the bytes are the same.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include <omp.h>

#include "comm/comm.h"
#include "core/file_io.h"
#include "core/hash.h"
#include "core/progress.h"
#include "core/timer.h"
#include "data/build_labels.h"
#include "data/build_records.h"
#include "data/data_build.h"
#include "data/dataset.h"
#include "data/doc_spill.h"
#include "data/quality/quality_levels.h"
#include "data/shard.h"

namespace mt {
namespace fs = std::filesystem;
namespace {

using json = nlohmann::json;

// Sampled documents are cut to this many bytes: enough to show a topic or a
// style, and it bounds the memory of the samples.
constexpr int64_t kSampleDocBytes = 8 << 10;
constexpr int64_t kReferenceCap = 32 << 20;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The same error on every rank: the failing rank's message (the lowest such
// rank), or ok.
Status agree(Comm& comm, const Status& mine, const char* what) {
  const std::vector<std::string> all = comm.allgather_strings(mine ? std::string() : "E" + mine.message(), what);
  for (const std::string& s : all)
    if (!s.empty()) return Status::error(s.substr(1));
  return Status::ok();
}

// Enough file descriptors for every bucket's writers (four files each).
void raise_open_file_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

class Pipeline {
 public:
  Pipeline(const DataBuildConfig& cfg, const std::string& out_dir, BuildReport& rep, bool verbose, Comm& comm,
           FileSystem& fs)
      : cfg_(cfg), out_(out_dir), rep_(rep), verbose_(verbose && comm.rank() == 0), comm_(comm), fs_(fs) {}

  Status run();

 private:
  void say(const std::string& s) const {
    if (verbose_) fmt::print(stderr, "# data build: {}\n", s);
  }
  std::string spill_path(int rank, const char* what) const {
    return fmt::format("{}/work/rank_{:05d}.{}", tmp_, rank, what);
  }
  Status setup();
  Status ingest_pass();
  Status decide_duplicates(const std::vector<DocKeys>& all);
  Status sample_pass();
  Status tokenizer_stage();
  Status tokenize_pass();
  Status cut_levels();
  Status write_pass();
  Status publish();

  const DataBuildConfig& cfg_;
  const std::string out_;
  BuildReport& rep_;
  const bool verbose_;
  Comm& comm_;
  FileSystem& fs_;  // every file of the dataset is written through it (tests inject failures)
  std::string tmp_;
  std::vector<IngestItem> items_;
  // Pass 1 results, this rank's documents in spill order.
  std::vector<int64_t> my_id_;          // global id of each spilled document, -1 when dropped
  // Global, by id (kept documents in input order).
  std::vector<uint64_t> hash_;          // exact key (low half) per kept document
  std::vector<int64_t> bytes_;
  int64_t n_docs_ = 0;
  bool need_topics_ = false, need_quality_ = false;
  std::vector<SampleDoc> tok_sample_, topic_sample_, quality_sample_;
  std::string model_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<BuildLabelers> labelers_;
  std::vector<DocLabel> labels_;        // by id (rank 0 after the gather)
  std::vector<std::string> quality_;    // final quality label by id
  std::vector<std::string> inputs_path_;
  LabelMap label_map_;
};

// Inputs and labels are checked before anything is created: bad input
// leaves nothing behind (the directory is removed by run() from here on).
Status Pipeline::setup() {
  auto items = list_ingest_items(cfg_.inputs);
  if (!items) return items.status();  // the same on every rank: every rank lists the same inputs
  items_ = std::move(items.value());
  for (const InputSpec& in : cfg_.inputs) inputs_path_.push_back(in.path);
  auto map = LabelMap::build(cfg_.topic_config.map, cfg_.topic_config.unmapped);
  if (!map) return Status::errorf("{}: topics.map: {}", cfg_.source, map.status().message());
  label_map_ = std::move(map.value());
  std::error_code ec;
  Status s;
  std::string tmp;
  if (comm_.rank() == 0) {
    auto dir = begin_dataset_dir(out_, fs_, [&](const std::string& m) { say(m); });
    if (dir) {
      tmp = dir.value();
      s = fs_.create_dirs(tmp + "/work");
      if (!s) fs::remove_all(tmp, ec);  // run()'s clean-up starts after set-up
    } else {
      s = dir.status();
    }
  }
  MT_RETURN_IF_ERROR(agree(comm_, s, "data build (set-up)"));
  tmp_ = comm_.allgather_strings(tmp, "data build (directory)")[0];
  return Status::ok();
}

// Pass 1: ingest this rank's items into its document spill; gather the keys.
Status Pipeline::ingest_pass() {
  const double t0 = now_seconds();
  const int R = comm_.size(), me = comm_.rank();
  std::vector<ItemStats> item_stats;
  std::string keys_payload;
  Packer keys(keys_payload);
  int64_t spilled = 0, read_bytes = 0;
  Status s = [&]() -> Status {
    auto w = RecordWriter::create(spill_path(me, "docs"));
    if (!w) return w.status();
    std::vector<SpilledDoc> batch;
    int64_t batch_bytes = 0;
    auto flush = [&]() -> Status {
      std::vector<DocKeys> k(batch.size());
#pragma omp parallel for schedule(dynamic, 4)
      for (int64_t i = 0; i < int64_t(batch.size()); ++i) {
        const Document& d = batch[size_t(i)].doc;
        DocKeys& dk = k[size_t(i)];
        std::tie(dk.k0, dk.k1) = document_key(d);
        if (cfg_.dedup_near) dk.bands = minhash_band_keys(d.text, cfg_.minhash);
      }
      for (size_t i = 0; i < batch.size(); ++i) {
        const SpilledDoc& sd = batch[i];
        DocKeys& dk = k[i];
        dk.item = sd.item;
        dk.seq = sd.seq;
        dk.input = items_[size_t(sd.item)].input;
        dk.bytes = int64_t(sd.doc.text.size());
        dk.has_topic = !sd.doc.topic.empty();
        dk.has_quality = !sd.doc.quality.empty() || !std::isnan(sd.doc.quality_score);
        pack_keys(keys, dk);
        MT_RETURN_IF_ERROR(w.value()->append(encode_spilled_doc(sd)));
        ++spilled;
      }
      batch.clear();
      batch_bytes = 0;
      return Status::ok();
    };
    ProgressLine progress(stderr, 20);
    for (size_t i = size_t(me); i < items_.size(); i += size_t(R)) {
      const IngestItem& item = items_[i];
      item_stats.push_back({int64_t(i), {}});
      int64_t seq = 0;
      const DocumentSink sink = [&](Document&& d) -> Status {
        if (!label_map_.empty() && !d.topic.empty()) {  // labels from the data, renamed by [[topics.map]]
          auto mapped = label_map_.apply(d.topic, d.origin);
          if (!mapped) return mapped.status();
          d.topic = sanitize_label(mapped.value());
        }
        read_bytes += int64_t(d.text.size());
        batch_bytes += int64_t(d.text.size());
        batch.push_back({int64_t(i), seq++, std::move(d)});
        return batch_bytes >= cfg_.batch_bytes ? flush() : Status::ok();
      };
      MT_RETURN_IF_ERROR(ingest_item(item, cfg_.inputs[size_t(item.input)], cfg_.code, cfg_.limits, sink,
                                     item_stats.back().st));
      if (verbose_) {
        const double el = now_seconds() - t0;
        progress.update(int64_t(i + 1), int64_t(items_.size()),
                        fmt::format("reading | {:.1f} MB | {:.1f} MB/s", double(read_bytes) / 1e6,
                                    double(read_bytes) / 1e6 / std::max(el, 1e-9)));
      }
    }
    MT_RETURN_IF_ERROR(flush());
    progress.finish();
    return w.value()->close();
  }();
  MT_RETURN_IF_ERROR(agree(comm_, s, "data build (ingest)"));

  // Gather keys and statistics; every rank decides the same.
  json st = json::array();
  for (const ItemStats& is : item_stats) st.push_back(item_stats_json(is));
  const std::vector<std::string> all_stats = comm_.allgather_strings(st.dump(), "data build (ingest statistics)");
  std::vector<std::pair<int64_t, json>> by_item;
  for (const std::string& r : all_stats)
    for (const json& j : json::parse(r)) by_item.emplace_back(j["item"].get<int64_t>(), j["stats"]);
  std::sort(by_item.begin(), by_item.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [item, j] : by_item) merge_into(rep_.ingest, j);

  std::vector<std::string> all_keys = comm_.allgather_strings(keys_payload, "data build (document keys)");
  std::string().swap(keys_payload);
  std::vector<DocKeys> keys_all;
  std::vector<int> owner;
  int64_t n_bands = 0;
  for (int r = 0; r < R; ++r) {
    for (Unpacker u(all_keys[size_t(r)]); !u.at_end();) {
      keys_all.push_back(unpack_keys(u));
      owner.push_back(r);
      n_bands += int64_t(keys_all.back().bands.size());
    }
    std::string().swap(all_keys[size_t(r)]);  // each rank's bytes go as soon as they are parsed
  }
  // Input order: by (item, seq); a stable merge of the ranks' runs.
  std::vector<int64_t> order(keys_all.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const DocKeys &x = keys_all[size_t(a)], &y = keys_all[size_t(b)];
    return x.item != y.item ? x.item < y.item : x.seq < y.seq;
  });
  // Decisions in input order; the spill order of each rank is its share of it.
  std::unordered_set<std::pair<uint64_t, uint64_t>, decltype([](const std::pair<uint64_t, uint64_t>& k) {
                       return size_t(k.first ^ mix64(k.second));
                     })> seen;
  FlatKeySet bands;
  bands.reserve(n_bands);  // sized once: no doubling copies at the peak
  std::vector<std::vector<int64_t>> rank_ids(static_cast<size_t>(R));
  for (int64_t o : order) {
    const DocKeys& d = keys_all[size_t(o)];
    const std::string& in_path = inputs_path_[size_t(d.input)];
    int64_t id = -1;
    if (cfg_.dedup_exact && !seen.insert({d.k0, d.k1}).second) {
      ++rep_.ingest.dropped["duplicate"];
      ++rep_.exact_duplicates[in_path];
    } else {
      bool near = false;
      for (uint64_t b : d.bands) near |= !bands.insert(b);
      if (near) {
        ++rep_.ingest.dropped["near_duplicate"];
        ++rep_.near_duplicates[in_path];
      } else {
        id = n_docs_++;
        hash_.push_back(d.k0 ^ mix64(d.k1));
        bytes_.push_back(d.bytes);
        rep_.ingest.documents += 1;
        rep_.ingest.bytes += d.bytes;
        need_topics_ |= cfg_.topic_source == LabelSource::kComputed || !d.has_topic;
        need_quality_ |= cfg_.quality_source == LabelSource::kComputed || !d.has_quality;
      }
    }
    rank_ids[size_t(owner[size_t(o)])].push_back(id);
  }
  my_id_ = std::move(rank_ids[size_t(me)]);
  rep_.seconds_ingest = now_seconds() - t0;
  if (n_docs_ == 0) return Status::errorf("{}: the inputs hold no documents", cfg_.source);
  say(fmt::format("{} documents ({} MB) from {} files; dropped {} exact and {} near duplicates", n_docs_,
                  rep_.ingest.bytes >> 20, rep_.ingest.files, rep_.ingest.dropped["duplicate"],
                  rep_.ingest.dropped["near_duplicate"]));
  if (rep_.ingest.dropped["duplicate"] == 0) rep_.ingest.dropped.erase("duplicate");
  if (rep_.ingest.dropped["near_duplicate"] == 0) rep_.ingest.dropped.erase("near_duplicate");
  return Status::ok();
}

// The documents each sample takes: the lowest hashes under a salt, so the
// choice does not depend on input order or ranks. Returns flags by id.
std::vector<uint8_t> choose_by_hash(const std::vector<uint64_t>& hash, const std::vector<int64_t>& bytes,
                                    uint64_t salt, int64_t max_docs, int64_t max_bytes, int64_t doc_cap) {
  std::vector<int64_t> order(hash.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const uint64_t ha = mix64(hash[size_t(a)] ^ salt), hb = mix64(hash[size_t(b)] ^ salt);
    return ha != hb ? ha < hb : a < b;
  });
  std::vector<uint8_t> chosen(hash.size(), 0);
  int64_t docs = 0, total = 0;
  for (int64_t i : order) {
    if (docs >= max_docs || total >= max_bytes) break;
    chosen[size_t(i)] = 1;
    ++docs;
    total += std::min(bytes[size_t(i)], doc_cap);
  }
  return chosen;
}

// Pass 2: the sampled documents' text, gathered on every rank in id order.
Status Pipeline::sample_pass() {
  constexpr uint64_t kTokSalt = 0x70CE, kTopicSalt = 0x7091C, kQualitySalt = 0x9A11;
  const int64_t inf = std::numeric_limits<int64_t>::max();
  std::vector<uint8_t> tok_pick, topic_pick, quality_pick;
  if (cfg_.tokenizer_model.empty())
    tok_pick = choose_by_hash(hash_, bytes_, kTokSalt, inf, cfg_.tokenizer.sample_bytes, inf);
  if (need_topics_)
    topic_pick = choose_by_hash(hash_, bytes_, kTopicSalt, cfg_.topics.sample_docs, inf, kSampleDocBytes);
  if (need_quality_)
    quality_pick = choose_by_hash(hash_, bytes_, kQualitySalt, cfg_.quality_sample_docs, inf, kSampleDocBytes);
  std::string payload;
  Packer p(payload);
  Status s = [&]() -> Status {
    if (tok_pick.empty() && topic_pick.empty() && quality_pick.empty()) return Status::ok();
    auto r = RecordReader::open(spill_path(comm_.rank(), "docs"));
    if (!r) return r.status();
    std::string rec;
    for (int64_t id : my_id_) {
      auto more = r.value()->next(rec);
      if (!more) return more.status();
      if (!more.value()) return Status::errorf("{}: ended early", spill_path(comm_.rank(), "docs"));
      if (id < 0) continue;
      const int64_t flags = (!tok_pick.empty() && tok_pick[size_t(id)]) |
                            (!topic_pick.empty() && topic_pick[size_t(id)]) << 1 |
                            (!quality_pick.empty() && quality_pick[size_t(id)]) << 2;
      if (!flags) continue;
      SpilledDoc d = decode_spilled_doc(rec);
      p.i64(id);
      p.i64(flags);
      p.str(d.doc.text);
    }
    return Status::ok();
  }();
  MT_RETURN_IF_ERROR(agree(comm_, s, "data build (samples)"));
  const std::vector<std::string> all = comm_.allgather_strings(payload, "data build (samples)");
  payload.clear();
  std::vector<std::tuple<int64_t, int64_t, std::string>> docs;
  for (const std::string& part : all)
    for (Unpacker u(part); !u.at_end();) {
      const int64_t id = u.i64(), flags = u.i64();
      docs.emplace_back(id, flags, u.str());
    }
  std::sort(docs.begin(), docs.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  for (auto& [id, flags, text] : docs) {
    const uint64_t h = hash_[size_t(id)];
    if (flags & 2) topic_sample_.push_back({text.substr(0, size_t(kSampleDocBytes)), h});
    if (flags & 4) quality_sample_.push_back({text.substr(0, size_t(kSampleDocBytes)), h});
    if (flags & 1) tok_sample_.push_back({std::move(text), h});
  }
  return Status::ok();
}

Status Pipeline::tokenizer_stage() {
  double t0 = now_seconds();
  std::string model;
  Status s;
  if (!cfg_.tokenizer_model.empty()) {
    auto tk = Tokenizer::load(cfg_.tokenizer_model);
    if (tk) model = tk.value()->serialized();
    else s = tk.status();
  } else if (comm_.rank() == 0) {
    std::vector<std::string_view> texts;
    for (const SampleDoc& d : tok_sample_) texts.push_back(d.text);
    auto trained = Tokenizer::train(texts, cfg_.tokenizer);
    if (trained) model = std::move(trained.value());
    else s = trained.status();
  }
  tok_sample_.clear();
  tok_sample_.shrink_to_fit();
  MT_RETURN_IF_ERROR(agree(comm_, s, "data build (tokenizer)"));
  if (cfg_.tokenizer_model.empty()) model = comm_.allgather_strings(comm_.rank() == 0 ? model : "", "data build (tokenizer)")[0];
  auto tok = Tokenizer::from_serialized(model, cfg_.tokenizer_model.empty() ? "trained tokenizer" : cfg_.tokenizer_model);
  if (!tok) return tok.status();
  tok_ = std::move(tok.value());
  model_ = std::move(model);
  rep_.vocab_size = tok_->vocab_size();
  rep_.seconds_tokenizer = now_seconds() - t0;
  say(fmt::format("tokenizer: {} pieces, hash {}", tok_->vocab_size(), hex64(tok_->hash())));

  t0 = now_seconds();
  if (need_topics_ || need_quality_) {
    auto l = fit_build_labelers(cfg_, *tok_, topic_sample_, quality_sample_, need_topics_, need_quality_,
                                tmp_ + "/work");
    if (!l) return l.status();
    labelers_ = std::move(l.value());
  }
  topic_sample_.clear();
  quality_sample_.clear();
  rep_.seconds_labels = now_seconds() - t0;
  return Status::ok();
}

// Pass 3: tokenize, label and score this rank's kept documents.
Status Pipeline::tokenize_pass() {
  const double t0 = now_seconds();
  const int me = comm_.rank();
  std::string payload;
  Packer lp(payload);
  int64_t done_bytes = 0;
  int64_t my_bytes = 0;
  for (int64_t id : my_id_)
    if (id >= 0) my_bytes += bytes_[size_t(id)];
  Status s = [&]() -> Status {
    auto r = RecordReader::open(spill_path(me, "docs"));
    if (!r) return r.status();
    auto w = RecordWriter::create(spill_path(me, "tokens"));
    if (!w) return w.status();
    ProgressLine progress(stderr, 20);
    std::vector<SpilledDoc> batch;
    std::vector<int64_t> batch_id;
    int64_t batch_bytes = 0;
    auto flush = [&]() -> Status {
      const int64_t n = int64_t(batch.size());
      std::vector<TokenizedDoc> out(static_cast<size_t>(n));
      std::vector<DocLabel> lab(static_cast<size_t>(n));
#pragma omp parallel for schedule(dynamic, 1)
      for (int64_t i = 0; i < n; ++i) {
        const Document& d = batch[size_t(i)].doc;
        TokenizedDoc& t = out[size_t(i)];
        DocLabel& l = lab[size_t(i)];
        t.id = batch_id[size_t(i)];
        encode_document(*tok_, d, t.ids);
        l.hash = hash_[size_t(t.id)];
        l.topic = d.topic;
        if (cfg_.topic_source == LabelSource::kComputed || d.topic.empty()) l.topic = labelers_->topic(d.text);
        l.quality = cfg_.quality_source == LabelSource::kComputed ? "" : d.quality;
        l.meta_score = cfg_.quality_source == LabelSource::kComputed ? std::nan("") : d.quality_score;
        if (l.quality.empty() && std::isnan(l.meta_score)) l.scores = labelers_->score(d.text, t.ids, l.hash);
        l.input = items_[size_t(batch[size_t(i)].item)].input;
        l.tokens = int64_t(t.ids.size());
        const double u = double(xxh64(d.text.data(), d.text.size(), cfg_.seed) >> 11) / 9007199254740992.0;
        l.eval = u < cfg_.eval_frac;
        t.prov.source = d.source;
        t.prov.origin = d.origin;
        t.prov.line = d.line;
        t.prov.offset = d.offset;
        t.prov.part = d.part;
        t.prov.text_offset = d.text_offset;
      }
      for (int64_t i = 0; i < n; ++i) {
        MT_RETURN_IF_ERROR(w.value()->append(encode_tokenized(out[size_t(i)])));
        pack_label(lp, out[size_t(i)].id, lab[size_t(i)]);
      }
      batch.clear();
      batch_id.clear();
      batch_bytes = 0;
      if (verbose_) {
        const double el = now_seconds() - t0, mb = double(done_bytes) / 1e6;
        progress.update(done_bytes, my_bytes,
                        fmt::format("tokenizing | {:.1f} MB/s | ETA {}", mb / std::max(el, 1e-9),
                                    ProgressLine::format_eta(el * (double(my_bytes) / 1e6 - mb) / std::max(mb, 1e-9))));
      }
      return Status::ok();
    };
    std::string rec;
    for (int64_t id : my_id_) {
      auto more = r.value()->next(rec);
      if (!more) return more.status();
      if (!more.value()) return Status::errorf("{}: ended early", spill_path(me, "docs"));
      if (id < 0) continue;
      batch.push_back(decode_spilled_doc(rec));
      batch_id.push_back(id);
      batch_bytes += int64_t(batch.back().doc.text.size());
      done_bytes += int64_t(batch.back().doc.text.size());
      if (batch_bytes >= cfg_.batch_bytes) MT_RETURN_IF_ERROR(flush());
    }
    MT_RETURN_IF_ERROR(flush());
    progress.finish();
    return w.value()->close();
  }();
  MT_RETURN_IF_ERROR(agree(comm_, s, "data build (tokenize)"));
  std::error_code ec;
  fs::remove(spill_path(me, "docs"), ec);  // the texts are no longer needed
  const std::vector<std::string> all = comm_.allgather_strings(payload, "data build (labels)");
  payload.clear();
  if (comm_.rank() == 0) {
    labels_.resize(size_t(n_docs_));
    for (const std::string& part : all)
      for (Unpacker u(part); !u.at_end();) {
        DocLabel l;
        const int64_t id = unpack_label(u, l);
        labels_[size_t(id)] = std::move(l);
      }
  }
  rep_.seconds_tokenize = now_seconds() - t0;
  return Status::ok();
}

// Quality levels (rank 0): metadata labels stay; metadata scores and
// computed scores are cut into levels within their groups.
Status Pipeline::cut_levels() {
  if (comm_.rank() != 0) return Status::ok();
  quality_.assign(size_t(n_docs_), "");
  std::map<std::string, int32_t> topic_group;  // topics numbered in name order
  for (const DocLabel& l : labels_) topic_group.emplace(l.topic, 0);
  int32_t next = 0;
  for (auto& [name, g] : topic_group) g = next++;
  auto group_of = [&](const DocLabel& l) -> int32_t {
    if (cfg_.quality_within == "input") return int32_t(l.input);
    if (cfg_.quality_within == "corpus") return 0;
    return topic_group.at(l.topic);
  };
  std::vector<int64_t> meta_idx, comp_idx;
  for (int64_t i = 0; i < n_docs_; ++i) {
    const DocLabel& l = labels_[size_t(i)];
    if (!l.quality.empty()) quality_[size_t(i)] = l.quality;
    else if (!std::isnan(l.meta_score)) meta_idx.push_back(i);
    else comp_idx.push_back(i);
  }
  auto cut = [&](const std::vector<int64_t>& idx, const std::vector<double>& score) {
    std::vector<int32_t> group;
    std::vector<uint64_t> tie;
    for (int64_t i : idx) {
      group.push_back(group_of(labels_[size_t(i)]));
      tie.push_back(labels_[size_t(i)].hash);
    }
    const std::vector<int32_t> lv = quantile_levels_within(score, group, tie, cfg_.n_quality);
    for (size_t j = 0; j < idx.size(); ++j) quality_[size_t(idx[j])] = fmt::format("q{}", lv[j]);
  };
  if (!meta_idx.empty()) {
    std::vector<double> s;
    for (int64_t i : meta_idx) s.push_back(labels_[size_t(i)].meta_score);
    cut(meta_idx, s);
  }
  if (!comp_idx.empty()) {
    std::vector<DocScores> sc;
    for (int64_t i : comp_idx) sc.push_back(labels_[size_t(i)].scores);
    labelers_->combine(sc);
    std::vector<double> s;
    for (size_t j = 0; j < comp_idx.size(); ++j) {
      labels_[size_t(comp_idx[j])].scores.combined = sc[j].combined;
      s.push_back(sc[j].combined);
    }
    cut(comp_idx, s);
  }
  return Status::ok();
}

// Docs lines keep their keys in this order, "id" first (data show finds a
// document by that prefix).
using ordered_json = nlohmann::ordered_json;
ordered_json num_or_null(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); }

// Pass 4 (rank 0): bucket shards and provenance files, in document order.
Status Pipeline::write_pass() {
  if (comm_.rank() != 0) return Status::ok();
  const double t0 = now_seconds();
  raise_open_file_limit();
  const int token_bytes = tok_->vocab_size() <= 65536 ? 2 : 4;
  struct Split {
    std::unique_ptr<ShardWriter> shard;
    std::unique_ptr<WritableFile> docs;  // the provenance lines, through docs_buf
    std::string docs_buf;
  };
  std::map<std::pair<std::string, std::string>, std::array<Split, 2>> buckets;
  auto open_split = [&](const std::string& topic, const std::string& quality, int e) -> Result<Split*> {
    auto& b = buckets[{topic, quality}];
    Split& sp = b[size_t(e)];
    if (sp.shard) return &sp;
    MT_RETURN_IF_ERROR(fs_.create_dirs(tmp_ + "/buckets/" + topic));
    const char* split = e ? "eval" : "train";
    auto w = ShardWriter::open(tmp_ + "/" + shard_tokens_file(topic, quality, split),
                               tmp_ + "/" + shard_index_file(topic, quality, split), token_bytes, tok_->hash(), fs_);
    if (!w) return w.status();
    sp.shard = std::move(w.value());
    auto docs = fs_.new_writable_file(tmp_ + "/" + shard_docs_file(topic, quality, split));
    if (!docs) return docs.status();
    sp.docs = std::move(docs.value());
    return &sp;
  };
  Status s = [&]() -> Status {
    // Both splits of every bucket exist, even when one is empty.
    for (int64_t i = 0; i < n_docs_; ++i)
      for (int e = 0; e < 2; ++e) {
        auto sp = open_split(labels_[size_t(i)].topic, quality_[size_t(i)], e);
        if (!sp) return sp.status();
      }
    // k-way merge of the ranks' token spills by id.
    std::vector<std::unique_ptr<RecordReader>> readers;
    std::vector<TokenizedDoc> head(static_cast<size_t>(comm_.size()));
    std::vector<bool> live(size_t(comm_.size()), false);
    std::string rec;
    auto advance = [&](int r) -> Status {
      auto more = readers[size_t(r)]->next(rec);
      if (!more) return more.status();
      live[size_t(r)] = more.value();
      if (more.value()) head[size_t(r)] = decode_tokenized(rec);
      return Status::ok();
    };
    for (int r = 0; r < comm_.size(); ++r) {
      auto rd = RecordReader::open(spill_path(r, "tokens"));
      if (!rd) return rd.status();
      readers.push_back(std::move(rd.value()));
      MT_RETURN_IF_ERROR(advance(r));
    }
    for (int64_t id = 0; id < n_docs_; ++id) {
      int r = 0;
      while (r < comm_.size() && !(live[size_t(r)] && head[size_t(r)].id == id)) ++r;
      if (r == comm_.size()) return Status::errorf("data build: document {} is missing from the token spills", id);
      const TokenizedDoc& t = head[size_t(r)];
      const DocLabel& l = labels_[size_t(id)];
      auto sp = open_split(l.topic, quality_[size_t(id)], int(l.eval));
      if (!sp) return sp.status();
      MT_RETURN_IF_ERROR(sp.value()->shard->add_document(t.ids.data(), int64_t(t.ids.size())));
      ordered_json j = {{"id", id},
                {"source", t.prov.source},
                {"line", t.prov.line},
                {"offset", t.prov.offset},
                {"part", t.prov.part},
                {"text_offset", t.prov.text_offset},
                {"origin", t.prov.origin},
                {"hash", hex64(l.hash)},
                {"topic", l.topic},
                {"quality", quality_[size_t(id)]},
                {"tokens", int64_t(t.ids.size())},
                {"scores",
                 {{"metadata", num_or_null(l.meta_score)},
                  {"perplexity", num_or_null(l.scores.perplexity)},
                  {"classifier", num_or_null(l.scores.classifier)},
                  {"combined", num_or_null(l.scores.combined)}}}};
      std::string& buf = sp.value()->docs_buf;
      buf += j.dump() + "\n";
      if (buf.size() >= (1 << 16)) {
        MT_RETURN_IF_ERROR(sp.value()->docs->append(buf.data(), int64_t(buf.size())));
        buf.clear();
      }
      MT_RETURN_IF_ERROR(advance(r));
    }
    // Finish every split; the manifest lists the buckets by name.
    json mb = json::array();
    for (auto& [key, splits] : buckets) {
      const auto& [topic, quality] = key;
      json jb;
      jb["name"] = topic + "/" + quality;
      jb["topic"] = topic;
      jb["quality"] = quality;
      for (int e = 0; e < 2; ++e) {
        Split& sp = splits[size_t(e)];
        const char* split = e ? "eval" : "train";
        const int64_t toks = sp.shard->n_tokens(), docs = sp.shard->n_docs();
        MT_RETURN_IF_ERROR(sp.shard->finish(ShardSync::kDeferSync));
        if (!sp.docs_buf.empty()) MT_RETURN_IF_ERROR(sp.docs->append(sp.docs_buf.data(), int64_t(sp.docs_buf.size())));
        MT_RETURN_IF_ERROR(sp.docs->close());  // synced with the directory before publishing, as the shards
        sp.docs.reset();
        jb[split] = {{"tokens", toks},
                     {"documents", docs},
                     {"tokens_file", shard_tokens_file(topic, quality, split)},
                     {"index_file", shard_index_file(topic, quality, split)},
                     {"docs_file", shard_docs_file(topic, quality, split)}};
        (e ? rep_.eval_tokens : rep_.train_tokens) += toks;
        (e ? rep_.eval_docs : rep_.train_docs) += docs;
      }
      mb.push_back(jb);
    }
    rep_.buckets = int64_t(buckets.size());
    MT_RETURN_IF_ERROR(write_file_atomic(tmp_ + "/tokenizer.model", model_, fs_));
    json m;
    m["format"] = "moetrain-dataset";
    m["version"] = kDatasetVersion;
    m["tokenizer"] = {{"file", "tokenizer.model"}, {"hash", hex64(tok_->hash())}, {"vocab_size", tok_->vocab_size()},
                      {"kind", "sentencepiece-bpe-byte-fallback"}};
    json specials;
    for (int sp = 0; sp < kNumSpecials; ++sp) specials[special_piece(Special(sp))] = tok_->special(Special(sp));
    m["tokenizer"]["specials"] = specials;
    m["token_bytes"] = token_bytes;
    m["buckets"] = mb;
    json labels = labelers_ ? labelers_->describe() : json::object();
    if (!need_topics_) labels["topic"] = "metadata";
    if (!need_quality_) labels["quality"] = "metadata";
    labels["n_quality"] = cfg_.n_quality;
    labels["n_topics"] = cfg_.topics.n_topics;
    labels["levels_within"] = cfg_.quality_within;
    m["labels"] = labels;
    m["split"] = {{"eval_frac", cfg_.eval_frac}, {"seed", cfg_.seed}};
    m["totals"] = {{"train_tokens", rep_.train_tokens}, {"eval_tokens", rep_.eval_tokens},
                   {"train_documents", rep_.train_docs}, {"eval_documents", rep_.eval_docs}};
    m["ingest"] = stats_json(rep_.ingest);
    m["dedup"] = {{"exact", cfg_.dedup_exact},
                  {"near", cfg_.dedup_near},
                  {"minhash", {{"ngram", cfg_.minhash.ngram}, {"bands", cfg_.minhash.bands}, {"rows", cfg_.minhash.rows}}},
                  {"exact_dropped", rep_.exact_duplicates},
                  {"near_dropped", rep_.near_duplicates}};
    m["limits"] = {{"max_doc_bytes", cfg_.limits.max_doc_bytes},
                   {"long_docs", cfg_.limits.long_docs == LongDocPolicy::kSplit ? "split" : "truncate"}};
    m["build_config"] = cfg_.text;
    return write_file_atomic(tmp_ + "/manifest.json", m.dump(1) + "\n", fs_);
  }();
  rep_.seconds_write = now_seconds() - t0;
  return s;
}

Status Pipeline::publish() {
  if (comm_.rank() != 0) return Status::ok();
  std::error_code ec;
  fs::remove_all(tmp_ + "/work", ec);
  MT_RETURN_IF_ERROR(publish_dataset_dir(tmp_, out_, fs_));
  say(fmt::format("{} buckets, {} train + {} eval tokens -> {}", rep_.buckets, rep_.train_tokens, rep_.eval_tokens,
                  out_));
  return Status::ok();
}

Status Pipeline::run() {
  MT_RETURN_IF_ERROR(setup());
  struct Cleanup {  // a failed build leaves nothing behind (rank 0 owns the directory)
    std::string dir;
    ~Cleanup() {
      std::error_code e;
      if (!dir.empty()) fs::remove_all(dir, e);
    }
  } cleanup{comm_.rank() == 0 ? tmp_ : ""};
  MT_RETURN_IF_ERROR(ingest_pass());
  MT_RETURN_IF_ERROR(sample_pass());
  MT_RETURN_IF_ERROR(tokenizer_stage());
  MT_RETURN_IF_ERROR(tokenize_pass());
  Status s = cut_levels();
  if (s) s = write_pass();
  if (s) s = publish();
  MT_RETURN_IF_ERROR(agree(comm_, s, "data build (write)"));
  cleanup.dir.clear();
  return Status::ok();
}

}  // namespace

Status build_dataset(const DataBuildConfig& cfg, const std::string& out_dir, BuildReport& rep, bool verbose, Comm& comm,
                     FileSystem& fs) {
  Pipeline p(cfg, out_dir, rep, verbose, comm, fs);
  return p.run();
}

Status build_dataset(const DataBuildConfig& cfg, const std::string& out_dir, BuildReport& rep, bool verbose) {
  LocalComm one;
  return build_dataset(cfg, out_dir, rep, verbose, one);
}

}  // namespace mt
