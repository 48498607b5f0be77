// data_docs.h — `moetrain data inspect D --docs` and `moetrain data show D ID`:
// the per-document provenance files of a dataset (docs/data.md, "Provenance").
#pragma once
#include <cstdint>
#include <string>

#include "cli/exit_code.h"

namespace mt {

// Lists the documents of a dataset (or of one bucket): id, bucket, split,
// source and position, labels and scores. Returns the exit code.
ExitCode run_inspect_docs(const std::string& dir, const std::string& bucket, bool as_json, int64_t limit);

// Prints one document (its labels and provenance, then its text decoded
// from the shard). Returns the exit code.
ExitCode run_show_doc(const std::string& dir, int64_t id, bool as_json);

}  // namespace mt
