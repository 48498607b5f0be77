// fasttext_train.h — the one place moetrain trains a fastText model (Joulin et
// al. 2017; Bojanowski et al. 2017). fastText reads its training data from a
// file, so the lines are written to a fresh private directory under tmp_dir,
// trained on, and the directory is removed whatever happens. Its console
// output is silenced (verbose = 0) and its exceptions become Status errors.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <fasttext/fasttext.h>

#include "core/status.h"

namespace mt {

// Trains `args` (input/output are set here) on `lines` (one example per line,
// no newlines inside). Deterministic when args.thread == 1: fastText's
// updates are lock-free across threads (hogwild), so more than one thread
// makes the result depend on scheduling. tmp_dir "" = the system temp dir.
Result<std::unique_ptr<fasttext::FastText>> train_fasttext(const std::vector<std::string>& lines,
                                                           fasttext::Args args, const std::string& tmp_dir);

}  // namespace mt
