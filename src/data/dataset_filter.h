// dataset_filter.h — writes a copy of a built dataset that keeps only chosen
// documents: shards, provenance lines and manifest counts all follow, so the
// copy is an ordinary dataset (train, data plan, eval open it). Written the
// way data build writes (begin_dataset_dir / publish_dataset_dir): assembled
// beside the output and renamed into place, every file through `fs`, so a
// failed write leaves neither the output nor its temporary directory.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"

namespace mt {

class Dataset;

struct DatasetFilter {
  // keep[b][s][k]: document k of split s (0 train, 1 eval) of bucket b, in
  // the dataset's bucket order, is copied. Sizes must match the shards.
  std::vector<std::array<std::vector<char>, 2>> keep;
  // Called on the copy's manifest (bucket counts and totals already
  // updated) before it is written: to record why documents went.
  std::function<void(nlohmann::json& manifest)> edit_manifest;
  // More files of the copy (name relative to it, content), written before
  // the manifest.
  std::vector<std::pair<std::string, std::string>> extra_files;
};

// Every bucket is kept, even one left without documents. Progress goes to
// `say` when given.
Status write_filtered_dataset(const Dataset& ds, const DatasetFilter& filter, const std::string& out_dir,
                              FileSystem& fs = default_file_system(),
                              const std::function<void(const std::string&)>& say = {});

}  // namespace mt
