// decontaminate_dataset.h — `moetrain data decontaminate` on a built
// dataset: every document of both splits is decoded and matched against an
// NgramIndex of evaluation items (decontaminate.h); the report counts per
// bucket and per task; the cleaned copy is the dataset without the documents
// that contain an item, its manifest recording the pass ("decontamination":
// one entry per pass, so a copy of a copy keeps both) and its matches in
// decontamination.json. The held-out split is cleaned too: its loss is what
// `eval` and the mixture search's targets measure.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file_system.h"
#include "core/status.h"
#include "data/decontaminate.h"

namespace mt {

class Dataset;

// One (document, item) pair: the document contains the item.
struct DecontamMatch {
  int64_t doc_id = 0;   // the document's id (its provenance line)
  int32_t bucket = 0;   // index into the dataset's buckets
  int split = 0;        // 0 train, 1 eval
  int32_t task = 0;     // index into the tasks
  int64_t line = 0;     // the item's line in its task file
  double coverage = 0;  // of the item by the document
};

struct DecontamBucketStats {
  std::string name;
  // Per split (0 train, 1 eval): what was scanned and what goes.
  std::array<int64_t, 2> documents{}, tokens{}, removed_documents{}, removed_tokens{};
};

struct DecontamTaskStats {
  std::string name, path, hash;  // as EvalTask
  int64_t items = 0;
  int64_t too_short = 0;          // items with no n-gram: they cannot be found
  int64_t items_matched = 0;      // items found in at least one document
  int64_t documents_matched = 0;  // documents holding at least one of its items
};

struct DecontamReport {
  std::string dataset, fingerprint;  // the scanned dataset: directory, xxh64 of its manifest
  DecontamOptions options;
  int64_t ngrams = 0;  // distinct n-grams indexed
  std::vector<DecontamTaskStats> tasks;
  std::vector<DecontamBucketStats> buckets;  // in the dataset's order
  std::vector<DecontamMatch> matches;        // by bucket, split, document, task, item
  // contaminated[b][s][k]: document k of split s of bucket b contains an item.
  std::vector<std::array<std::vector<char>, 2>> contaminated;
  int64_t text_bytes = 0;  // decoded text scanned
  double seconds = 0;      // of the scan
};

// Scans every document (OpenMP over the documents of a split; the result
// does not depend on the thread count). Errors name the provenance file that
// is missing or malformed. Options must pass check_decontam_options.
Result<DecontamReport> scan_for_contamination(const Dataset& ds, const std::vector<EvalTask>& tasks,
                                              const DecontamOptions& opt,
                                              const std::function<void(const std::string&)>& say = {});

// decontamination.json: options, tasks, buckets, totals and every match.
nlohmann::json report_json(const DecontamReport& r);

// Writes the dataset without the contaminated documents to out_dir
// (write_filtered_dataset: atomic, every file through `fs`), with the pass
// appended to the manifest's "decontamination" list and decontamination.json.
Status write_decontaminated(const Dataset& ds, const DecontamReport& r, const std::string& out_dir,
                            FileSystem& fs = default_file_system(),
                            const std::function<void(const std::string&)>& say = {});

// What a dataset's manifest says about decontamination, for `eval`:
// {"decontaminated": false} or {"decontaminated": true, "passes": [...]}
// (each pass: source, n, threshold, tasks with path and hash, totals scanned
// and removed per split).
nlohmann::json decontamination_of(const nlohmann::json& manifest);
// The same in one line: "not decontaminated", or "decontaminated: n=8,
// threshold 0.5 against arc.jsonl (hash ...); 12 documents, 3456 tokens
// removed", passes joined by "; then ".
std::string describe_decontamination(const nlohmann::json& manifest);

}  // namespace mt
