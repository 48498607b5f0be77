// cmd_generate.cpp — `moetrain generate --ckpt DIR (--prompt TEXT | --prompts FILE)`:
// samples continuations of a batch of prompts from a checkpoint with the KV-cache
// decoder (model/decoder.h), reports prefill and decode tokens/s and the
// cache's bytes. docs/inference.md has a worked example.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/memory.h"
#include "core/progress.h"
#include "core/timer.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/file_io.h"
#include "core/threads.h"
#include "model/generate.h"
#include "train/inference_model.h"

namespace mt {
namespace {

struct GenerateArgs {
  std::string ckpt, tokenizer, prompts_file, kv_dtype = "f32";
  std::vector<std::string> prompts;
  int64_t max_new_tokens = 64, threads = 0, max_rows = 512;
  double temperature = 1.0, top_p = 1.0;
  int64_t top_k = 0;
  uint64_t seed = 1234;
  bool json = false, no_stop = false, progress = true;
};

// One prompt per line; "\n" inside a line stands for a newline.
Result<std::vector<std::string>> read_prompts(const std::string& path) {
  auto text = read_file(path, "prompts file");
  if (!text) return text.status();
  std::vector<std::string> out;
  size_t begin = 0;
  const std::string& t = text.value();
  while (begin < t.size()) {
    size_t end = t.find('\n', begin);
    if (end == std::string::npos) end = t.size();
    std::string line = t.substr(begin, end - begin), p;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == 'n') {
        p += '\n';
        ++i;
      } else {
        p += line[i];
      }
    }
    out.push_back(p);
    begin = end + 1;
  }
  if (out.empty()) return Status::errorf("{}: no prompts (one per line)", path);
  return out;
}

ExitCode run_generate(const GenerateArgs& a) {
  std::vector<std::string> prompts = a.prompts;
  if (!a.prompts_file.empty()) {
    auto p = read_prompts(a.prompts_file);
    if (!p) return fail("generate", p.status(), ExitCode::kUsage);
    prompts.insert(prompts.end(), p.value().begin(), p.value().end());
  }
  if (prompts.empty()) return fail("generate", Status::error("give --prompt TEXT or --prompts FILE"), ExitCode::kUsage);
  if (a.kv_dtype != "f32" && a.kv_dtype != "bf16")
    return fail("generate", Status::errorf("--kv-dtype: expected f32 or bf16, got \"{}\"", a.kv_dtype), ExitCode::kUsage);
  if (a.top_p <= 0.0 || a.top_p > 1.0) return fail("generate", Status::errorf("--top-p: expected (0, 1], got {}", a.top_p), ExitCode::kUsage);
  set_num_threads(int(a.threads));
  auto m = load_inference_model(a.ckpt);
  if (!m) return fail("generate", m.status(), ExitCode::kFailed);
  auto codec = open_run_codec(m.value(), a.tokenizer);
  if (!codec) return fail("generate", codec.status(), ExitCode::kFailed);
  const ModelConfig& c = m.value().cfg.model;
  std::vector<std::vector<int32_t>> ids;
  int64_t longest = 0;
  for (const std::string& p : prompts) {
    std::vector<int32_t> v = {codec.value()->end_of_document()};
    const std::vector<int32_t> e = codec.value()->encode(p);
    v.insert(v.end(), e.begin(), e.end());
    for (int32_t t : v)
      if (t >= c.vocab_size)
        return fail("generate", Status::errorf("{}: token id {} is outside the model's vocab_size {} (wrong --tokenizer?)",
                                   codec.value()->source(), t, c.vocab_size),
                    ExitCode::kFailed);
    longest = std::max<int64_t>(longest, int64_t(v.size()));
    ids.push_back(std::move(v));
  }
  // The KV cache and the outputs against this machine's memory, before
  // anything is allocated (in double: any count a flag takes stays finite).
  const KvDtype kv_dtype = a.kv_dtype == "bf16" ? KvDtype::kBf16 : KvDtype::kF32;
  const double positions = double(longest) + double(a.max_new_tokens), gib = double(int64_t(1) << 30);
  const double kv = KvCache::planned_bytes(c, int64_t(prompts.size()), int64_t(std::min(positions, 9e15)), kv_dtype);
  const double outputs = double(prompts.size()) * double(a.max_new_tokens) * 16.0;  // ids, text, JSON per token
  const double model = 4.0 * double(m.value().params.size());
  if (kv + outputs + model > physical_memory_bytes())
    return fail(
        "generate",
        Status::errorf("--max-new-tokens {} for {} prompt(s) needs a KV cache of {:.3g} GiB ({}) and {:.3g} GiB "
                       "of outputs beside the model's {:.3g} GiB: this machine has {:.3g} GiB (fewer tokens or "
                       "prompts{})",
                       a.max_new_tokens, prompts.size(), kv / gib, a.kv_dtype, outputs / gib, model / gib,
                       physical_memory_bytes() / gib, a.kv_dtype == "f32" ? ", or --kv-dtype bf16" : ""),
        ExitCode::kUsage);
  const int64_t trained = m.value().cfg.train.seq_len;
  if (positions > double(trained))
    fmt::print(stderr,
               "# warning: up to {} positions per sequence, past the {} the model was trained on "
               "(train.seq_len): what it generates there is untested\n",
               int64_t(positions), trained);
  DecoderOptions dopt;
  dopt.batch = int64_t(prompts.size());
  dopt.max_len = longest + a.max_new_tokens;
  // No forward call takes more rows than the prompts hold (prefill) or than
  // there are prompts (decode): a larger --max-rows would only allocate.
  int64_t prompt_tokens = 0;
  for (const auto& v : ids) prompt_tokens += int64_t(v.size());
  dopt.max_rows = std::min<int64_t>(a.max_rows, std::max<int64_t>(prompt_tokens, dopt.batch));
  dopt.kv_dtype = kv_dtype;
  if (m.value().cfg.train.document_mask) dopt.document_separator = codec.value()->end_of_document();
  Decoder dec(c, m.value().params.data(), m.value().bias(), dopt);
  GenerateOptions g;
  g.max_new_tokens = a.max_new_tokens;
  g.stop_token = a.no_stop ? -1 : codec.value()->end_of_document();
  g.sampling = SamplingOptions{a.temperature, a.top_k, a.top_p, a.seed};
  ProgressLine progress(stderr, std::max<int64_t>(1, a.max_new_tokens / 10));
  const double t0 = now_seconds();
  if (a.progress)
    g.progress = [&](int64_t done, int64_t most) {
      const double s = now_seconds() - t0;
      progress.update(
          done, most,
          fmt::format("{:.1f} tok/s | ETA (no stop) {}", double(done) / std::max(s, 1e-9),
                      ProgressLine::format_eta(s / double(std::max<int64_t>(done, 1)) * double(most - done))));
    };
  const GenerateResult r = generate(dec, ids, g);
  progress.finish();
  const double prefill_tps = r.prefill_seconds > 0 ? double(r.prefill_tokens) / r.prefill_seconds : 0.0;
  const double decode_tps = r.decode_seconds > 0 ? double(r.decode_tokens) / r.decode_seconds : 0.0;
  nlohmann::json out;
  out["checkpoint"] = m.value().ckpt_dir;
  out["step"] = m.value().step;
  out["tokenizer"] = codec.value()->source();
  out["sampling"] = {{"temperature", a.temperature}, {"top_k", a.top_k}, {"top_p", a.top_p}, {"seed", a.seed}};
  out["prefill_tokens"] = r.prefill_tokens;
  out["decode_tokens"] = r.decode_tokens;
  out["prefill_tokens_per_s"] = prefill_tps;
  out["decode_tokens_per_s"] = decode_tps;
  out["kv_cache_bytes"] = dec.cache().bytes();
  out["samples"] = nlohmann::json::array();
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int32_t> gen = r.tokens[i];
    const bool stopped = !gen.empty() && gen.back() == g.stop_token;
    if (stopped) gen.pop_back();
    out["samples"].push_back({{"prompt", prompts[i]},
                              {"completion", codec.value()->decode(gen.data(), int64_t(gen.size()))},
                              {"tokens", r.tokens[i]},
                              {"stopped", stopped}});
  }
  if (a.json) {
    // A completion can end inside a UTF-8 sequence (a byte tokenizer's
    // tokens are bytes): such bytes print as U+FFFD; "tokens" stays exact.
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    for (const auto& s : out["samples"])
      fmt::print("=== {}\n{}{}\n", s["prompt"].get<std::string>(), s["prompt"].get<std::string>(),
                 s["completion"].get<std::string>());
  }
  fmt::print(stderr, "# {} prompts, step {}: prefill {} tokens {:.1f} tok/s, decode {} tokens {:.1f} tok/s, KV cache {} bytes ({})\n",
             prompts.size(), m.value().step, r.prefill_tokens, prefill_tps, r.decode_tokens, decode_tps,
             dec.cache().bytes(), a.kv_dtype);
  return ExitCode::kOk;
}

}  // namespace

void register_generate(CLI::App& app, CommandAction& run) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* sub = app.add_subcommand("generate", "Sample continuations of prompts from a checkpoint (KV-cache decoding).");
  sub->add_option("--ckpt", a->ckpt, "Checkpoint directory (step_XXXXXXXX), or a run directory (its newest checkpoint)")
      ->required();
  sub->add_option("--prompt", a->prompts, "Prompt text (repeatable: prompts decode as one batch)");
  sub->add_option("--prompts", a->prompts_file, "File with one prompt per line (\\n inside a line is a newline)");
  sub->add_option("--tokenizer", a->tokenizer, "SentencePiece model (default: the run dataset's tokenizer.model)");
  sub->add_option("--max-new-tokens", a->max_new_tokens, "Tokens to generate per prompt")
      ->capture_default_str()
      ->check(non_negative());
  sub->add_option("--temperature", a->temperature, "Softmax temperature; 0 = greedy")
      ->capture_default_str()
      ->check(non_negative());
  sub->add_option("--top-k", a->top_k, "Keep the k most likely tokens; 0 = all")
      ->capture_default_str()
      ->check(non_negative());
  sub->add_option("--top-p", a->top_p, "Nucleus: keep the smallest set reaching this probability")->capture_default_str();
  sub->add_option("--seed", a->seed, "Sampling seed (Philox; same seed, same output)")->capture_default_str();
  sub->add_option("--kv-dtype", a->kv_dtype, "KV cache storage: f32 (exact) or bf16 (half the bytes)")
      ->capture_default_str();
  sub->add_option("--max-rows", a->max_rows, "Prefill chunk: tokens per forward call")
      ->capture_default_str()
      ->check(in_range(1, 1 << 20));
  sub->add_option("--threads", a->threads, "Worker threads; 0 = OpenMP default")
      ->check(in_range(0, 256))
      ->capture_default_str();
  sub->add_flag("--no-stop", a->no_stop, "Do not stop at the end-of-document token");
  sub->add_flag("--json", a->json, "Print JSON (samples with token ids, throughput, cache bytes)");
  sub->add_flag(
      "--no-progress", [a](int64_t) { a->progress = false; }, "No live progress line");
  sub->callback([a, &run] { run = [a] { return run_generate(*a); }; });
}

}  // namespace mt
