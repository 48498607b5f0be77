// fasttext_classifier.cpp — writes the shuffled, labelled training file,
// trains fastText in one thread and reads P(hq) back per document.
#include "data/quality/fasttext_classifier.h"

#include <fasttext/fasttext.h>
#include <fasttext/dictionary.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "core/hash.h"

namespace mt {
namespace {

const char* const kPositive = "__label__hq";  // DCLM's label names
const char* const kNegative = "__label__cc";

// At most `cap` of `n` indices, evenly spaced (deterministic thinning).
std::vector<int64_t> thin(int64_t n, int64_t cap) {
  const int64_t m = std::min(n, cap);
  std::vector<int64_t> pick(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) pick[size_t(i)] = int64_t((__int128)i * n / m);
  return pick;
}

// Removes the training file whatever way train() leaves.
struct RemoveOnExit {
  std::filesystem::path path;
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove(path, ec);
  }
};

}  // namespace

std::string fasttext_line(std::string_view text, int64_t max_bytes) {
  size_t n = std::min(text.size(), size_t(std::max<int64_t>(max_bytes, 0)));
  // Back off to a character boundary: a cut continuation byte would become a
  // word that exists only in truncated documents.
  if (n < text.size())
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  std::string line(text.substr(0, n));
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

std::string shuffle_line_words(std::string_view line, uint64_t seed) {
  std::vector<std::string_view> w;
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) w.push_back(line.substr(i, j - i));
    i = j;
  }
  for (size_t i = w.size(); i > 1; --i) {  // Fisher-Yates on a hash counter
    const uint64_t salt[2] = {seed, uint64_t(i)};
    std::swap(w[i - 1], w[size_t(xxh64(salt, sizeof salt, 0x5f0f) % i)]);
  }
  std::string out;
  for (size_t i = 0; i < w.size(); ++i) (out += i ? " " : "") += w[i];
  return out;
}

FastTextClassifier::FastTextClassifier() = default;
FastTextClassifier::~FastTextClassifier() = default;

Result<std::unique_ptr<FastTextClassifier>> FastTextClassifier::train(const std::vector<std::string_view>& positives,
                                                                       const std::vector<std::string_view>& negatives,
                                                                       const ClassifierOptions& opt) {
  if (positives.empty()) return Status::error("quality classifier: no positive (reference) documents");
  if (negatives.empty()) return Status::error("quality classifier: no negative (corpus sample) documents");

  // The examples in a seeded hash order: fastText reads its file front to
  // back, so a file of all positives then all negatives would end training
  // on one class.
  struct Example {
    uint64_t key;
    int label;
    std::string_view text;
    bool shuffle = false;  // a shuffled copy of a positive, labelled negative
  };
  std::vector<Example> ex;
  for (int label = 0; label < 2; ++label) {
    const auto& docs = label == 0 ? positives : negatives;
    for (int64_t i : thin(int64_t(docs.size()), opt.max_train_docs)) {
      const uint64_t salt[3] = {opt.seed, uint64_t(label), uint64_t(i)};
      ex.push_back({xxh64(salt, sizeof salt, 0xfa57), label, docs[size_t(i)]});
      if (label == 0)
        for (int64_t k = 0; k < opt.shuffled_negatives; ++k) {
          const uint64_t salt2[3] = {opt.seed, uint64_t(2 + k), uint64_t(i)};
          ex.push_back({xxh64(salt2, sizeof salt2, 0xfa57), 1, docs[size_t(i)], true});
        }
    }
  }
  std::sort(ex.begin(), ex.end(), [](const Example& a, const Example& b) {
    return a.key != b.key ? a.key < b.key : a.label < b.label;
  });

  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  const std::filesystem::path dir =
      opt.tmp_dir.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(opt.tmp_dir);
  if (ec) return Status::errorf("quality classifier: no temp directory: {}", ec.message());
  RemoveOnExit file{dir / fmt::format("moetrain-quality-{}-{}.txt", ::getpid(), counter++)};
  {
    std::ofstream out(file.path, std::ios::binary | std::ios::trunc);
    if (!out) return Status::errorf("quality classifier: cannot write the training file {}", file.path.string());
    for (const Example& e : ex)
      out << (e.label == 0 ? kPositive : kNegative) << ' '
          << (e.shuffle ? shuffle_line_words(fasttext_line(e.text, opt.max_doc_bytes), e.key)
                        : fasttext_line(e.text, opt.max_doc_bytes))
          << '\n';
    out.flush();
    if (!out) return Status::errorf("quality classifier: writing {} failed (disk full?)", file.path.string());
  }

  fasttext::Args args;
  args.input = file.path.string();
  args.model = fasttext::model_name::sup;
  args.loss = fasttext::loss_name::softmax;
  args.dim = int(opt.dim);
  args.epoch = int(opt.epochs);
  args.lr = opt.lr;
  args.wordNgrams = int(opt.word_ngrams);
  args.minCount = int(opt.min_count);
  args.minCountLabel = 0;
  args.minn = 0;  // no character n-grams: the supervised defaults of the fasttext CLI
  args.maxn = 0;
  args.bucket = opt.word_ngrams > 1 ? int(opt.buckets) : 0;
  args.thread = 1;  // hogwild with more threads is not reproducible
  args.seed = int(opt.seed & 0x7fffffff);
  args.verbose = 0;
  args.label = "__label__";

  std::unique_ptr<FastTextClassifier> c(new FastTextClassifier());
  c->ft_ = std::make_unique<fasttext::FastText>();
  c->max_doc_bytes_ = opt.max_doc_bytes;
  try {
    c->ft_->train(args);
  } catch (const std::exception& e) {
    return Status::errorf("quality classifier: fastText training failed: {}", e.what());
  }
  if (c->ft_->getDictionary()->nwords() == 0)
    return Status::errorf("quality classifier: no word occurs quality.classifier.min_count = {} times", opt.min_count);
  if (c->ft_->getLabelId(kPositive) < 0)
    return Status::error("quality classifier: fastText dropped the positive label");
  return c;
}

double FastTextClassifier::p_positive(std::string_view text) const {
  std::istringstream in(fasttext_line(text, max_doc_bytes_));
  std::vector<std::pair<fasttext::real, std::string>> pred;
  ft_->predictLine(in, pred, -1, 0.0f);  // -1: every label with its probability
  for (const auto& [p, label] : pred)
    if (label == kPositive) return double(p);
  if (!pred.empty()) return 0.0;  // underflowed below the threshold
  return std::numeric_limits<double>::quiet_NaN();
}

Status FastTextClassifier::save(const std::string& path) const {
  try {
    ft_->saveModel(path);
  } catch (const std::exception& e) {
    return Status::errorf("{}: cannot save the quality classifier: {}", path, e.what());
  }
  return Status::ok();
}

}  // namespace mt
