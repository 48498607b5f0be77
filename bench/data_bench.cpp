// data_bench.cpp — data pipeline throughput (Google Benchmark, part of
// mt_kernel_bench): JSONL ingest (zstd, parse, normalise, dedup), SentencePiece
// tokenizing, a whole `data build` with a given tokenizer, and the mixture
// sampler's sequences/s. Figures are in docs/data.md. Run e.g.
//   build/bench/mt_kernel_bench --benchmark_filter='Data|Sampler'
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/data_build.h"
#include "data/dataset.h"
#include "data/ingest.h"
#include "data/sampler.h"
#include "data/tokenizer.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// English-like synthetic prose: words drawn Zipf-ishly from a generated
// lexicon, punctuation and paragraphs. No third-party text.
std::string make_doc(uint64_t seed, int words) {
  static std::vector<std::string> lexicon = [] {
    std::vector<std::string> v;
    uint64_t s = 42;
    const char* cons = "bcdfghklmnprstvwz";
    const char* vow = "aeiou";
    for (int i = 0; i < 5000; ++i) {
      std::string w;
      const int syl = 1 + int(next(s) % 3);
      for (int k = 0; k < syl; ++k) {
        w += cons[next(s) % 17];
        w += vow[next(s) % 5];
        if (next(s) % 3 == 0) w += cons[next(s) % 17];
      }
      v.push_back(w);
    }
    return v;
  }();
  std::string d;
  uint64_t s = seed;
  for (int i = 0; i < words; ++i) {
    const double u = double(next(s) >> 11) / 9007199254740992.0;
    d += lexicon[size_t(u * u * u * double(lexicon.size()))];
    const uint64_t p = next(s) % 20;
    d += p == 0 ? ". " : p == 1 ? ", " : p == 2 && i % 50 == 49 ? "\n\n" : " ";
  }
  return d;
}

struct Corpus {
  std::string dir;
  std::string jsonl_zst;  // path
  int64_t text_bytes = 0;
  std::vector<std::string> docs;
  std::string model;      // trained tokenizer
  std::string dataset;    // built dataset dir
};

const Corpus& corpus() {
  static Corpus c = [] {
    Corpus c;
    std::string tmpl = (fs::temp_directory_path() / "moetrain-bench-XXXXXX").string();
    c.dir = mkdtemp(tmpl.data());
    static struct Cleanup {
      std::string dir;
      ~Cleanup() {
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
    } cleanup{c.dir};
    std::string jsonl;
    for (int i = 0; i < 4000; ++i) {
      c.docs.push_back(make_doc(uint64_t(i), 150 + i % 400));
      c.text_bytes += int64_t(c.docs.back().size());
      jsonl += nlohmann::json{{"text", c.docs.back()}, {"topic", "t" + std::to_string(i % 8)}, {"quality", i % 5}}.dump() + "\n";
    }
    std::string z(ZSTD_compressBound(jsonl.size()), '\0');
    z.resize(ZSTD_compress(z.data(), z.size(), jsonl.data(), jsonl.size(), 3));
    c.jsonl_zst = c.dir + "/corpus.jsonl.zst";
    std::ofstream(c.jsonl_zst, std::ios::binary) << z;
    std::vector<std::string_view> views(c.docs.begin(), c.docs.end());
    TokenizerTrainOptions opt;
    opt.vocab_size = 8000;
    c.model = Tokenizer::train(views, opt).value();
    std::ofstream(c.dir + "/tok.model", std::ios::binary) << c.model;
    auto cfg = parse_data_build_config("[[input]]\npath = \"" + c.jsonl_zst + "\"\n[tokenizer]\nmodel = \"" + c.dir +
                                           "/tok.model\"\n[split]\neval_frac = 0.01\n",
                                       c.dir + "/data.toml");
    BuildReport rep;
    c.dataset = c.dir + "/ds";
    Status s = build_dataset(cfg.value(), c.dataset, rep);
    if (!s) std::fprintf(stderr, "bench dataset build failed: %s\n", s.message().c_str());
    return c;
  }();
  return c;
}

void BM_DataIngestJsonlZst(benchmark::State& state) {
  const Corpus& c = corpus();
  InputSpec in;
  in.path = c.jsonl_zst;
  for (auto _ : state) {
    std::vector<Document> docs;
    IngestStats st;
    Status s = ingest({in}, CodeOptions(), docs, st);
    if (!s) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(docs.data());
  }
  state.SetBytesProcessed(state.iterations() * c.text_bytes);
}
BENCHMARK(BM_DataIngestJsonlZst)->Unit(benchmark::kMillisecond);

void BM_DataTokenize(benchmark::State& state) {
  const Corpus& c = corpus();
  auto loaded = Tokenizer::from_serialized(c.model, "bench");
  std::unique_ptr<Tokenizer> tok = std::move(loaded.value());
  int64_t tokens = 0;
  for (auto _ : state) {
    std::vector<int32_t> ids;
    for (const std::string& d : c.docs) tok->encode(d, ids);
    tokens = int64_t(ids.size());
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(state.iterations() * c.text_bytes);
  state.counters["bytes_per_token"] = double(c.text_bytes) / double(tokens);
}
BENCHMARK(BM_DataTokenize)->Unit(benchmark::kMillisecond);

// Ingest + labels (metadata) + tokenize (all threads) + shards + manifest.
void BM_DataBuild(benchmark::State& state) {
  const Corpus& c = corpus();
  auto cfg = parse_data_build_config("[[input]]\npath = \"" + c.jsonl_zst + "\"\n[tokenizer]\nmodel = \"" + c.dir +
                                         "/tok.model\"\n",
                                     c.dir + "/data.toml");
  int n = 0;
  for (auto _ : state) {
    const std::string out = c.dir + "/build" + std::to_string(n++);
    BuildReport rep;
    Status s = build_dataset(cfg.value(), out, rep);
    if (!s) state.SkipWithError(s.message().c_str());
    state.PauseTiming();
    fs::remove_all(out);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * c.text_bytes);
}
BENCHMARK(BM_DataBuild)->Unit(benchmark::kMillisecond)->UseRealTime();

// Sequential sequences (as the trainer reads them) at seq_len = range(0).
void BM_SamplerSequences(benchmark::State& state) {
  const Corpus& c = corpus();
  const int64_t T = state.range(0);
  auto ds = Dataset::open(c.dataset);
  if (!ds) {
    state.SkipWithError(ds.status().message().c_str());
    return;
  }
  std::shared_ptr<const Dataset> shared(std::move(ds.value()));
  int64_t total = 0;
  for (const Bucket& b : shared->buckets()) total += b.train->n_tokens();
  auto mx = parse_mixture("total_tokens = " + std::to_string(total * 6 / 10) + "\n[weights]\n\"t0/*\" = 1\n\"t1/q0\" = 0.2\n"
                          "\"t[2-7]/*\" = 6\n",
                          "bench.toml");
  auto s = MixtureSampler::open(shared, mx.value(), T, 0);
  if (!s) {
    state.SkipWithError(s.status().message().c_str());
    return;
  }
  std::vector<int32_t> out(size_t(T + 1));
  int64_t i = 0;
  const int64_t n = s.value()->plan().sequences;
  for (auto _ : state) {
    s.value()->sequence(i, T, out.data());
    benchmark::DoNotOptimize(out.data());
    if (++i == n) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(double(state.iterations() * T), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SamplerSequences)->Arg(64)->Arg(2048);

}  // namespace
}  // namespace mt
