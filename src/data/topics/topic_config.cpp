// topic_config.cpp — see topic_config.h.
#include "data/topics/topic_config.h"

namespace mt {

void declare_topic_model_keys(ConfigSchema& s, TopicConfig& c) {
  TopicModelOptions& o = c.model;
  s.add_enum("topics.method", &o.method, {"auto", "kmeans", "tfidf", "supervised", "seeded"},
             "computed topics: auto = supervised if topics.examples is set, else seeded if [[topics.keywords]] "
             "are given, else kmeans; tfidf = the older hashed TF-IDF k-means (comparisons only; data build refuses it)");
  s.add_enum("topics.features", &o.features, {"lsa", "fasttext", "lsa_fasttext"},
             "document vectors for kmeans and seeded: LSA of TF-IDF, pooled fastText word vectors, or both");
  s.add("topics.vector_dim", &o.vector_dim, "LSA dimensions and fastText word-vector dimensions").range(8, 1024);
  s.add("topics.epochs", &o.epochs, "fastText passes over the sample (fasttext, seeded)").range(1, 1000);
  s.add("topics.supervised_epochs", &o.supervised_epochs, "fastText passes over the labelled examples").range(1, 1000);
  s.add("topics.min_count", &o.min_count, "words seen fewer times in the sample get no vector").min(1);
  s.add("topics.max_doc_bytes", &o.max_doc_bytes, "each document is read up to this many bytes").min(1).unit("bytes");
  s.add_enum("topics.word_model", &o.word_model, {"skipgram", "cbow"}, "fastText word-vector model");
  s.add("topics.tmp_dir", &o.tmp_dir, "fastText's training file goes to a private directory here, removed after; "
                                      "\"\" = the system temp dir");
  s.add("topics.examples", &o.examples, "supervised: JSONL file of {\"text\": ..., \"topic\": ...} lines; "
                                        "\"\" = none");
  s.add_table_array<KeywordTopic>(
      "topics.keywords", &o.keywords,
      [](ConfigSchema& e, KeywordTopic& k) {
        e.add("topic", &k.topic, "topic name ([A-Za-z0-9_.-], at most 64 bytes)").required();
        e.add("keywords", &k.keywords, "whole words that identify the topic (case-insensitive)").required();
      },
      "seeded: one [[topics.keywords]] table per named topic");
  s.add_enum("topics.other", &o.other, {"none", "cluster"},
             "seeded: documents without keywords seed a topic \"other\" (cluster), or all join named topics (none)");
  s.add_table_array<LabelMapEntry>(
      "topics.map", &c.map,
      [](ConfigSchema& e, LabelMapEntry& m) {
        e.add("from", &m.from, "a label as the source spells it (topic_field, __label__xx)").required();
        e.add("to", &m.to, "the topic it becomes").required();
      },
      "source labels renamed: one [[topics.map]] table per label");
  s.add_enum("topics.unmapped", &c.unmapped, {"pass", "error"},
             "a source label not in [[topics.map]] is kept as is (pass) or stops the build (error)");
}

}  // namespace mt
