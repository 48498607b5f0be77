// fasttext_train.cpp — see fasttext_train.h.
#include "data/topics/fasttext_train.h"

#include <stdlib.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <system_error>

namespace mt {
namespace {

// Removes the directory (and the training file in it) on every exit path.
struct TempDir {
  std::filesystem::path path;
  ~TempDir() {
    if (path.empty()) return;
    std::error_code ec;  // best effort: a leftover temp dir must not fail the build
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

Result<std::unique_ptr<fasttext::FastText>> train_fasttext(const std::vector<std::string>& lines,
                                                           fasttext::Args args, const std::string& tmp_dir) {
  std::error_code ec;
  std::filesystem::path base = tmp_dir.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(tmp_dir);
  if (ec) return Status::errorf("topics: no temp directory: {}", ec.message());
  std::string templ = (base / "mt-topics-XXXXXX").string();
  if (!mkdtemp(templ.data()))
    return Status::errorf("{}: cannot create a temp directory for fastText (topics.tmp_dir)", base.string());
  TempDir dir{templ};

  const std::string input = (dir.path / "train.txt").string();
  {
    std::FILE* f = std::fopen(input.c_str(), "wb");
    if (!f) return Status::errorf("{}: cannot write fastText training file", input);
    bool ok = true;
    for (const std::string& l : lines) {
      ok = ok && std::fwrite(l.data(), 1, l.size(), f) == l.size() && std::fputc('\n', f) != EOF;
    }
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) return Status::errorf("{}: short write (disk full?)", input);
  }

  args.input = input;
  args.output = (dir.path / "model").string();  // never written: we do not save
  args.verbose = 0;
  auto ft = std::make_unique<fasttext::FastText>();
  try {
    ft->train(args);
  } catch (const std::exception& e) {
    // e.g. "Empty vocabulary. Try a smaller -minCount value."
    return Status::errorf("topics: fastText training failed: {}", e.what());
  }
  return ft;
}

}  // namespace mt
