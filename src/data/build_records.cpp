// build_records.cpp — packing of the records build_pipeline.cpp passes
// between its passes and ranks.
#include "data/build_records.h"

namespace mt {

nlohmann::json stats_json(const IngestStats& s) {
  nlohmann::json j;
  j["files"] = s.files;
  j["records"] = s.records;
  j["documents"] = s.documents;
  j["bytes"] = s.bytes;
  j["utf8_repaired"] = s.utf8_repaired;
  j["dropped"] = s.dropped;
  j["skipped_files"] = s.skipped_files;
  j["first_error"] = s.first_error;
  j["long_docs_split"] = s.long_docs_split;
  j["long_docs_truncated"] = s.long_docs_truncated;
  return j;
}

nlohmann::json item_stats_json(const ItemStats& s) { return {{"item", s.item}, {"stats", stats_json(s.st)}}; }

void merge_into(IngestStats& into, const nlohmann::json& j) {
  into.files += j["files"].get<int64_t>();
  into.records += j["records"].get<int64_t>();
  into.utf8_repaired += j["utf8_repaired"].get<int64_t>();
  into.long_docs_split += j["long_docs_split"].get<int64_t>();
  into.long_docs_truncated += j["long_docs_truncated"].get<int64_t>();
  for (const auto& [k, v] : j["dropped"].items()) into.dropped[k] += v.get<int64_t>();
  for (const auto& [k, v] : j["skipped_files"].items()) into.skipped_files[k] += v.get<int64_t>();
  for (const auto& [k, v] : j["first_error"].items()) into.first_error.emplace(k, v.get<std::string>());
}

void pack_keys(Packer& p, const DocKeys& d) {
  p.i64(d.item);
  p.i64(d.seq);
  p.i64(d.input);
  p.i64(d.bytes);
  p.i64(int64_t(d.k0));
  p.i64(int64_t(d.k1));
  p.i64(d.has_topic | (d.has_quality << 1));
  p.i64(int64_t(d.bands.size()));
  for (uint64_t b : d.bands) p.i64(int64_t(b));
}

DocKeys unpack_keys(Unpacker& u) {
  DocKeys d;
  d.item = u.i64();
  d.seq = u.i64();
  d.input = u.i64();
  d.bytes = u.i64();
  d.k0 = uint64_t(u.i64());
  d.k1 = uint64_t(u.i64());
  const int64_t flags = u.i64();
  d.has_topic = flags & 1;
  d.has_quality = (flags >> 1) & 1;
  d.bands.resize(size_t(u.i64()));
  for (uint64_t& b : d.bands) b = uint64_t(u.i64());
  return d;
}

void pack_label(Packer& p, int64_t id, const DocLabel& l) {
  p.i64(id);
  p.str(l.topic);
  p.str(l.quality);
  p.f64(l.meta_score);
  p.f64(l.scores.perplexity);
  p.f64(l.scores.classifier);
  p.f64(l.scores.combined);
  p.i64(l.input);
  p.i64(l.tokens);
  p.i64(l.eval);
  p.i64(int64_t(l.hash));
}

std::string encode_tokenized(const TokenizedDoc& t) {
  std::string out;
  Packer p(out);
  p.i64(t.id);
  p.i64(int64_t(t.ids.size()));
  p.bytes(t.ids.data(), t.ids.size() * sizeof(int32_t));
  p.str(t.prov.source);
  p.str(t.prov.origin);
  p.i64(t.prov.line);
  p.i64(t.prov.offset);
  p.i64(t.prov.part);
  p.i64(t.prov.text_offset);
  return out;
}

TokenizedDoc decode_tokenized(std::string_view rec) {
  TokenizedDoc t;
  Unpacker u(rec);
  t.id = u.i64();
  const int64_t n = u.i64();
  const std::string_view raw = u.view(size_t(n) * sizeof(int32_t));
  t.ids.resize(size_t(n));
  std::memcpy(t.ids.data(), raw.data(), raw.size());
  t.prov.source = u.str();
  t.prov.origin = u.str();
  t.prov.line = u.i64();
  t.prov.offset = u.i64();
  t.prov.part = u.i64();
  t.prov.text_offset = u.i64();
  return t;
}

int64_t unpack_label(Unpacker& u, DocLabel& l) {
  const int64_t id = u.i64();
  l.topic = u.str();
  l.quality = u.str();
  l.meta_score = u.f64();
  l.scores.perplexity = u.f64();
  l.scores.classifier = u.f64();
  l.scores.combined = u.f64();
  l.input = u.i64();
  l.tokens = u.i64();
  l.eval = u.i64();
  l.hash = uint64_t(u.i64());
  return id;
}

}  // namespace mt
