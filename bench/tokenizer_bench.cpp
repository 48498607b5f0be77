// tokenizer_bench.cpp — Tokenizer::encode (word cache) against plain
// SentencePiece, MB/s on 1 and 2 threads, warm and cold cache, and on one long
// line without spaces (Google Benchmark, part of mt_kernel_bench). Text: the
// Python docs' reST sources, fmt's headers and man pages where installed,
// else synthetic prose; tokenizer trained as `data build` does (8000 pieces).
// Figures are in docs/tokenizer-speed.md. Run e.g.
//   build/bench/mt_kernel_bench --benchmark_filter=Tokenize --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/tokenizer.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::string out;
  if (p.extension() == ".gz") {
    gzFile f = gzopen(p.c_str(), "rb");
    if (!f) return out;
    char buf[1 << 15];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
    gzclose(f);
    return out;
  }
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Up to `budget` bytes from files under dir ending in ext, in sorted order.
void add_files(const std::string& dir, const std::string& ext, int64_t budget, std::vector<std::string>& docs) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> paths;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && it->path().string().ends_with(ext)) paths.push_back(it->path());
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    if (budget <= 0) break;
    std::string t = read_text(p);
    budget -= int64_t(t.size());
    if (!t.empty()) docs.push_back(std::move(t));
  }
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Corpus {
  std::vector<std::string> docs;
  int64_t bytes = 0;
  std::string model;
  std::string long_line;  // one 2 MB line without spaces
};

const Corpus& corpus() {
  static Corpus c = [] {
    Corpus c;
    add_files("/usr/share/doc/python3.11/html/_sources", ".txt", 5 << 19, c.docs);
    add_files("/usr/include/fmt", ".h", 1 << 20, c.docs);
    add_files("/usr/share/man/man1", ".gz", 1 << 20, c.docs);
    if (c.docs.empty()) {  // synthetic prose: pseudo-words, Zipf-ish
      uint64_t s = 7;
      for (int d = 0; d < 2000; ++d) {
        std::string t;
        for (int w = 0; w < 500; ++w) {
          const uint64_t r = splitmix(s) % 5000;
          const uint64_t k = r * r / 5000;
          for (uint64_t x = k + 1; x; x /= 7) t += char('a' + x % 7 + (x % 3) * 7);
          t += w % 13 == 12 ? ".\n" : " ";
        }
        c.docs.push_back(std::move(t));
      }
    }
    for (const auto& d : c.docs) c.bytes += int64_t(d.size());
    std::vector<std::string_view> views(c.docs.begin(), c.docs.end());
    TokenizerTrainOptions opt;
    opt.vocab_size = 8000;
    opt.sample_bytes = 2 << 20;
    c.model = Tokenizer::train(views, opt).value();
    // A long line as a minified or base64 blob gives it: letters, digits, punctuation.
    uint64_t s = 11;
    const char* alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_.:";
    while (c.long_line.size() < (2u << 20)) c.long_line += alphabet[splitmix(s) % 67];
    return c;
  }();
  return c;
}

const Tokenizer& shared_tokenizer() {
  static std::unique_ptr<Tokenizer> t = std::move(Tokenizer::from_serialized(corpus().model, "bench").value());
  return *t;
}

enum class Path { kPlain, kWordCache };

// Whole corpus per iteration, one document per call, spread over range(0)
// OpenMP threads as `data build` spreads them (OpenMP keeps its threads, so
// their word caches persist across iterations).
void tokenize(benchmark::State& state, Path path) {
  const Corpus& c = corpus();
  const Tokenizer& tok = shared_tokenizer();
  if (tok.word_cache_off_reason() != "") state.SkipWithError(tok.word_cache_off_reason().c_str());
  const int threads = int(state.range(0));
  const int64_t n = int64_t(c.docs.size());
  int64_t tokens = 0;
  for (auto _ : state) {
    tokens = 0;
#pragma omp parallel for schedule(dynamic, 8) num_threads(threads) reduction(+ : tokens)
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int32_t> ids;
      if (path == Path::kPlain)
        tok.encode_plain(c.docs[size_t(i)], ids);
      else
        tok.encode(c.docs[size_t(i)], ids);
      tokens += int64_t(ids.size());
    }
  }
  state.SetBytesProcessed(state.iterations() * c.bytes);
  state.counters["bytes_per_token"] = double(c.bytes) / double(std::max<int64_t>(1, tokens));
}

void BM_TokenizeSentencePiece(benchmark::State& state) { tokenize(state, Path::kPlain); }
BENCHMARK(BM_TokenizeSentencePiece)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

// Warm: the threads' caches persist across iterations (a long build's steady state).
void BM_TokenizeWordCache(benchmark::State& state) { tokenize(state, Path::kWordCache); }
BENCHMARK(BM_TokenizeWordCache)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

// Cold: a new Tokenizer per pass, so every pass starts with an empty cache
// (a build of just this corpus). One thread.
void BM_TokenizeWordCacheCold(benchmark::State& state) {
  const Corpus& c = corpus();
  std::vector<int32_t> ids;
  for (auto _ : state) {
    state.PauseTiming();
    auto tok = std::move(Tokenizer::from_serialized(c.model, "bench").value());
    state.ResumeTiming();
    for (const std::string& d : c.docs) {
      ids.clear();
      tok->encode(d, ids);
    }
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(state.iterations() * c.bytes);
}
BENCHMARK(BM_TokenizeWordCacheCold)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

// One 2 MB line without whitespace (a minified or base64 blob).
void BM_TokenizeLongLine(benchmark::State& state) {
  const Corpus& c = corpus();
  const Tokenizer& tok = shared_tokenizer();
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    if (state.range(0) == 0)
      tok.encode_plain(c.long_line, ids);
    else
      tok.encode(c.long_line, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(state.iterations() * int64_t(c.long_line.size()));
  state.SetLabel(state.range(0) == 0 ? "sentencepiece" : "word cache");
}
BENCHMARK(BM_TokenizeLongLine)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace mt
