// data_docs.h — `moetrain data inspect D --docs` and `moetrain data show D ID`:
// the per-document provenance files of a dataset (docs/data.md, "Provenance").
#pragma once
#include <cstdint>
#include <string>

namespace mt {

class Status;
// Prints "moetrain CMD: message" to stderr and returns `code` (the data commands' error exit).
int fail(const std::string& cmd, const Status& s, int code = 1);

// Lists the documents of a dataset (or of one bucket): id, bucket, split,
// source and position, labels and scores. Returns the exit code.
int run_inspect_docs(const std::string& dir, const std::string& bucket, bool as_json, int64_t limit);

// Prints one document (its labels and provenance, then its text decoded
// from the shard). Returns the exit code.
int run_show_doc(const std::string& dir, int64_t id, bool as_json);

}  // namespace mt
