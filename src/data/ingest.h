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
#include <functional>
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

// Documents longer than max_doc_bytes are split into parts at a line break
// (else a space, else a UTF-8 character boundary) in the last half of the
// cap, or truncated to their first part: no stage ever holds a document
// longer than the cap, and a 50 MB JSONL line costs what 50 documents do.
enum class LongDocPolicy { kSplit, kTruncate };
struct DocLimits {
  int64_t max_doc_bytes = 1 << 20;
  LongDocPolicy long_docs = LongDocPolicy::kSplit;
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
  int64_t long_docs_split = 0;        // documents over max_doc_bytes cut into parts
  int64_t long_docs_truncated = 0;    // ... or truncated
};

// One unit of ingest work, in input order: a file (JSONL, text, code JSONL)
// or one repository directory. A build splits these across ranks.
struct IngestItem {
  int64_t input = 0;                  // index into the inputs
  std::string path;
  InputKind kind = InputKind::kAuto;  // resolved (never kAuto)
  std::string repo;                   // repositories: the name used in messages
};

// Every item of the inputs in order (directories listed in byte order of
// their paths); errors name a missing input or an empty directory.
Result<std::vector<IngestItem>> list_ingest_items(const std::vector<InputSpec>& inputs);

// Reads one item and hands each document to `sink` in order (not
// de-duplicated; blank documents are dropped and counted). Documents get
// their provenance and sanitised labels and respect `limits`.
using DocumentSink = std::function<Status(Document&&)>;
Status ingest_item(const IngestItem& item, const InputSpec& in, const CodeOptions& code, const DocLimits& limits,
                   const DocumentSink& sink, IngestStats& stats);

// A label usable in bucket and file names: [A-Za-z0-9_.-], at most 64
// bytes, no leading dot (other bytes become '_').
std::string sanitize_label(std::string s);

// 128-bit hash of a document's text and special-token positions: the key of
// exact de-duplication.
std::pair<uint64_t, uint64_t> document_key(const Document& d);

// Cuts `d` into parts of at most max_bytes (see DocLimits), moving its marks
// along; a document that fits comes back alone.
std::vector<Document> split_long_document(Document d, int64_t max_bytes);

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
// documents, by document_key, and blank ones are dropped). Holds everything
// in memory: for tests, tools and small reference sets; builds stream.
Status ingest(const std::vector<InputSpec>& inputs, const CodeOptions& code, std::vector<Document>& docs,
              IngestStats& stats, const DocLimits& limits = {});

// Repository stitching, exposed for tests: files (relative path, content),
// in any order, become documents of at most max_repo_bytes (split at file
// boundaries) with a path header before each file.
std::vector<Document> stitch_repository(std::vector<std::pair<std::string, std::string>> files,
                                        const std::string& repo, int64_t max_repo_bytes);

}  // namespace mt
