// data_decontaminate.h — `moetrain data decontaminate DATASET --tasks F...
// (--out NEW_DATASET | --dry-run)`: finds the documents that reproduce items
// of `eval`'s multiple-choice task files and writes the dataset without them
// (data/decontaminate_dataset.h; docs/data.md, "Decontamination").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/exit_code.h"

namespace mt {

struct DecontaminateArgs {
  std::string dataset, out;
  std::vector<std::string> tasks;  // JSONL task files, as `moetrain eval --tasks` reads them
  int64_t n = 8;
  double threshold = 0.5;
  bool dry_run = false, json = false, quiet = false;
  int64_t threads = 0;
};

// Prints the report (a table, or JSON with --json); returns the exit code.
ExitCode run_decontaminate(const DecontaminateArgs& a);

}  // namespace mt
