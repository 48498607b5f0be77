// ingest.h — turns input files into normalised, de-duplicated Documents:
// JSONL (plain, .gz, .zst) with configurable field names, plain text files,
// directories, code repositories (one document per repository, files in byte
// order of their relative paths, each after a path header), code corpora with
// one file per JSONL row (grouped by repository and stitched the same way) and
// agent rollouts (outcome tag first). Every dropped record, document or file
// is counted by reason; with on_error = "fail" a bad record stops the build
// with an error naming file and line.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/document.h"
#include "data/text_normalize.h"

namespace mt {

enum class InputKind { kAuto, kJsonl, kText, kRepo, kRepos, kCodeJsonl, kRollouts };
enum class OnError { kFail, kSkip };

// Field names in JSONL records; a dotted name ("meta.quality") walks into
// nested objects. Empty = not read.
struct JsonlFields {
  std::string text = "text";
  std::string id = "id";
  std::string topic = "topic";
  std::string quality = "quality";
  std::string outcome = "outcome";
  std::string repo = "repo";      // code JSONL
  std::string path = "path";      // code JSONL
};

struct InputSpec {
  std::string path;
  InputKind kind = InputKind::kAuto;  // auto: directory -> files inside by extension; *.jsonl[.gz|.zst] -> jsonl; else text
  JsonlFields fields;
  std::string topic;                  // label for documents without topic metadata ("" = labeler decides)
  std::string quality;                // same for quality
  std::vector<std::string> extensions;  // directories: only these suffixes (empty = all)
  OnError on_error = OnError::kFail;
  Utf8Policy utf8 = Utf8Policy::kStrict;
};

struct CodeOptions {
  int64_t max_file_bytes = 1 << 20;   // larger source files are skipped ("oversized")
  int64_t max_repo_bytes = 8 << 20;   // longer repositories are split at file boundaries
};

struct IngestStats {
  int64_t files = 0;                  // input files read
  int64_t records = 0;                // JSONL lines / text files / repository files seen
  int64_t documents = 0;              // documents kept
  int64_t bytes = 0;                  // bytes of kept document text
  int64_t utf8_repaired = 0;          // replacement characters inserted (utf8 = "repair")
  std::map<std::string, int64_t> dropped;        // reason -> records or documents
  std::map<std::string, int64_t> skipped_files;  // reason -> repository files skipped
  std::map<std::string, std::string> first_error;  // reason -> first message, for the report
};

// One parsed JSONL record (before normalisation).
struct JsonlRecord {
  std::string text;
  std::string topic, quality, repo, path;
  double quality_score = std::nan("");
  int outcome = -1;  // -1 none, 0 failure, 1 success
};

// Parses one JSONL line. Errors name `where` ("file:line"), the field and what
// was expected; `reason` is set to the drop-counter key for the error.
Status parse_jsonl_record(std::string_view line, const JsonlFields& f, bool need_text, JsonlRecord& out,
                          const std::string& where, std::string* reason = nullptr);

// Reads every input in order and appends documents (duplicates of earlier
// documents, by 128-bit hash of text and marks, and blank ones are dropped).
Status ingest(const std::vector<InputSpec>& inputs, const CodeOptions& code, std::vector<Document>& docs,
              IngestStats& stats);

// Repository stitching, exposed for tests: files (relative path, content),
// in any order, become documents of at most max_repo_bytes (split at file
// boundaries) with a path header before each file.
std::vector<Document> stitch_repository(std::vector<std::pair<std::string, std::string>> files,
                                        const std::string& repo, int64_t max_repo_bytes);

}  // namespace mt
