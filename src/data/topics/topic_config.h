// topic_config.h — the data build's "topics." keys for the topic models and
// the label map. topics.source, n_topics, dims, sample_docs and iterations
// are declared by the build itself (they fill TopicModelOptions::cluster).
#pragma once
#include <vector>

#include "core/config_schema.h"
#include "data/topics/label_map.h"
#include "data/topics/topic_model.h"

namespace mt {

struct TopicConfig {
  TopicModelOptions model;
  std::vector<LabelMapEntry> map;             // [[topics.map]]
  UnmappedLabel unmapped = UnmappedLabel::kPass;
};

void declare_topic_model_keys(ConfigSchema& s, TopicConfig& c);

}  // namespace mt
