// cmd_eval.cpp — `moetrain eval --ckpt DIR [--tasks FILE]... [--text-set FILE]...
// [--out FILE]`: held-out loss and bits-per-byte per bucket of the run's
// dataset (the trainer's eval pass, train/held_out.h, with the training
// forward: capacity drops included, so it matches the run's
// bucket_eval_loss); the same on named text sets that are not buckets
// (train/text_set.h); and accuracy on JSONL task files (train/task_file.h):
// multiple-choice ones scored like lm-evaluation-harness
// (train/eval_tasks.h), generative ones (the passkey task) by exact match of
// a greedy continuation, with accuracy per depth and prompt length
// (train/gen_tasks.h); both on the KV-cache decoder, dropless. Says whether
// the dataset was decontaminated and against which task files (its
// manifest's record, data/decontaminate_dataset.h). Prints a table; --out
// writes the JSON.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/position_plot.h"
#include "core/file_io.h"
#include "core/memory.h"
#include "core/progress.h"
#include "core/threads.h"
#include "core/timer.h"
#include "data/decontaminate_dataset.h"
#include "data/sampler.h"
#include "model/transformer.h"
#include "train/eval_tasks.h"
#include "train/gen_tasks.h"
#include "train/context_loss.h"
#include "train/held_out.h"
#include "train/inference_model.h"
#include "train/task_file.h"
#include "train/text_set.h"

namespace mt {
namespace {

struct EvalArgs {
  std::string ckpt, tokenizer, dataset, mixture, out;
  std::vector<std::string> tasks;
  std::vector<std::string> text_sets;  // text sets scored for held-out loss (train/text_set.h)
  int64_t batches = 0, threads = 0, batch = 16;
  int64_t episode_tokens = kDefaultEpisodeTokens;  // an agentic item's budget of new tokens
  bool no_held_out = false;
  bool positions = false;  // held-out loss by position in the sequence
  int64_t context_min = 0;  // --positions: the shortest context of the same-tokens comparison; 0 = seq_len / 16
  std::string plot;        // --positions: that loss as an SVG chart
  bool progress = true;
  bool past_seq_len = false;  // generative items past train.seq_len: decode them (with a warning) instead of refusing
  int64_t seq_len = 0;        // held-out windows of this many tokens; 0 = train.seq_len
};

// The dataset evaluated on: --dataset, else the run's data.dataset; "" for
// a plain-text run (held_out() below resolves it the same way).
Result<std::string> dataset_of(const InferenceModel& m, const EvalArgs& a) {
  if (!a.dataset.empty() || m.cfg.data.dataset.empty()) return a.dataset;
  return resolve_run_path(m, m.cfg.data.dataset, "data.dataset");
}

// Whether the dataset was decontaminated, and against which task files
// (data/decontaminate_dataset.h), from its manifest. Read apart from the
// held-out pass, so --no-held-out reports it too; a manifest that cannot be
// read is said, not fatal (the tasks need no dataset).
nlohmann::json dataset_record(const std::string& dataset) {
  nlohmann::json rec = {{"path", dataset}};
  auto text = read_file(dataset + "/manifest.json", "dataset manifest");
  const nlohmann::json m = text ? nlohmann::json::parse(text.value(), nullptr, false) : nlohmann::json();
  if (!m.is_object()) {
    const std::string why = text ? dataset + "/manifest.json: malformed JSON" : text.status().message();
    rec["decontamination"] = {{"decontaminated", nullptr}, {"error", why}};
    fmt::print("dataset decontamination unknown ({})\n", why);
    return rec;
  }
  rec["decontamination"] = decontamination_of(m);
  fmt::print("dataset {}\n", describe_decontamination(m));  // the path is in the JSON: the line reads the same anywhere
  return rec;
}

// The task files (by xxh64) the dataset was cleaned against.
std::set<std::string> cleaned_against(const nlohmann::json& rec) {
  std::set<std::string> hashes;
  for (const auto& p : rec["decontamination"].value("passes", nlohmann::json::array()))
    for (const auto& t : p.value("tasks", nlohmann::json::array())) hashes.insert(t.value("hash", ""));
  return hashes;
}

// The windows' length for held-out figures, buckets and text sets alike:
// --seq-len, else train.seq_len. Longer windows measure extrapolation (the
// loss by position past the trained length): only when asked.
Result<int64_t> held_out_len(const InferenceModel& m, const EvalArgs& a, bool& usage) {
  const int64_t T = a.seq_len > 0 ? a.seq_len : m.cfg.train.seq_len;
  if (T > m.cfg.train.seq_len && !a.past_seq_len) {
    usage = true;
    return Status::errorf(
        "--seq-len {} is past the {} tokens the model was trained on (train.seq_len; a phased run's phase at the "
        "checkpoint): pass --past-seq-len to measure extrapolation",
        T, m.cfg.train.seq_len);
  }
  return T;
}

// Per-bucket accumulators (bucket index -> figures; -1: a source without
// buckets) merged into one, and each bucket's report keyed by its name.
template <class Acc, class Report>
std::pair<Acc, nlohmann::json> merged_by_bucket(const std::map<int64_t, Acc>& per_bucket,
                                                const std::vector<std::string>& names, Report report) {
  Acc all;
  nlohmann::json by_name = nlohmann::json::object();
  for (const auto& [k, acc] : per_bucket) {
    all.add(acc);
    by_name[k >= 0 ? names[size_t(k)] : std::string("(all)")] = report(acc);
  }
  return {std::move(all), std::move(by_name)};
}

// Held-out loss per bucket, and bits per byte: loss (nats/token) x tokens /
// (UTF-8 bytes of those tokens x ln 2), the tokenizer-independent figure.
// `usage` is set when the request itself is at fault (--batches past the split).
Result<nlohmann::json> held_out(const InferenceModel& m, const TextCodec& codec, const EvalArgs& a, bool& usage) {
  const RunConfig& cfg = m.cfg;
  std::string dataset = a.dataset, mixture = a.mixture;
  if (dataset.empty()) {
    if (cfg.data.dataset.empty()) return nlohmann::json();  // a plain-text run: no buckets to report
    auto d = resolve_run_path(m, cfg.data.dataset, "data.dataset");
    if (!d) return d.status();
    dataset = d.value();
  }
  if (mixture.empty()) {  // the one the run's held-out passes read: its first phase's
    // (Not through PhaseSchedule: m.cfg carries its last phase's train.seq_len, which would re-plan the phases.)
    const bool first_phase = !cfg.phases.empty() && !cfg.phases[0].mixture.empty();
    auto x = resolve_run_path(m, first_phase ? cfg.phases[0].mixture : cfg.data.mixture,
                              first_phase ? "phase[0].mixture" : "data.mixture");
    if (!x) return x.status();
    mixture = x.value();
  }
  const TrainConfig& tc = cfg.train;
  auto len = held_out_len(m, a, usage);
  if (!len) return len.status();
  const int64_t T = len.value();
  auto src = open_mixture_source(dataset, mixture, T, /*max_sequences=*/0, cfg.model.vocab_size);
  if (!src) return src.status();
  const int64_t B = tc.batch_size;
  const HeldOutShape shape{B, T, a.batches > 0 ? a.batches : std::max<int64_t>(1, tc.eval_batches), B, 0};
  // Past a bucket's held-out split the sequences would repeat: such a
  // bucket is left out (and named), and a shape no bucket holds is refused.
  auto fits = check_held_out_fits(*src.value(), shape,
                                  a.batches > 0 ? "--batches" : "train.eval_batches (the default of --batches)");
  if (!fits) {
    usage = true;
    return fits.status();
  }
  if (!fits.value().empty()) fmt::print(stderr, "# warning: {}\n", fits.value());
  const std::vector<std::string> names = src.value()->eval_buckets();
  const int64_t evaluated = int64_t(evaluated_buckets(*src.value(), shape).size());  // what held_out_losses reads
  ProgressLine progress(stderr, std::max<int64_t>(1, evaluated * shape.batches / 10));
  int64_t batches_done = 0;
  const double t0 = now_seconds();
  Transformer model(cfg.model, B, T, MatmulPrecision::kFp32);
  model.set_attention_kernel(tc.attention_kernel);
  const int32_t separator = tc.document_mask ? src.value()->document_separator() : -1;
  model.set_document_separator(separator);
  std::vector<int32_t> tokens(size_t(B * (T + 1)));
  std::map<int64_t, std::pair<int64_t, int64_t>> counted;  // bucket -> (tokens, bytes) predicted
  std::map<int64_t, PositionLoss> by_position;             // bucket -> its loss by position (--positions)
  // --positions: the same tokens with less context (train/context_loss.h).
  const int64_t context_min = a.context_min > 0 ? a.context_min : std::max<int64_t>(8, T / 16);
  std::unique_ptr<ContextLengthScorer> by_context;
  std::map<int64_t, ContextLengthLoss> by_context_loss;  // bucket -> its windows' losses at each context length
  if (a.context_min > 0 && !ContextLengthScorer::applies(T, context_min)) {
    usage = true;
    return Status::errorf("--context-min {}: windows of {} tokens hold no two lengths from {} (it must be 2 to {})",
                          a.context_min, T, a.context_min, T / 2);
  }
  if (a.positions && ContextLengthScorer::applies(T, context_min))
    by_context = std::make_unique<ContextLengthScorer>(cfg.model, B, T, context_min, tc.attention_kernel, separator);
  int64_t current = -1;                                    // the bucket of the batch being scored
  const HeldOutLosses h = held_out_losses(
      *src.value(), shape, tokens.data(), [](bool ok) { return ok; },
      [&] {
        const double loss = model.forward(m.params.data(), tokens.data(), m.bias()).loss;
        if (a.positions) by_position[current].add(model.token_losses(), B, T, model.document_starts());
        if (by_context)
          by_context->score(model.token_losses(), m.params.data(), m.bias(), tokens.data(), by_context_loss[current]);
        return loss;
      },
      [&](int64_t bucket, const int32_t* t) {
        current = bucket;
        for (int64_t b = 0; b < B; ++b) {
          counted[bucket].first += T;
          counted[bucket].second += int64_t(codec.decode(t + b * (T + 1) + 1, T).size());
        }
        if (a.progress) {
          const int64_t total = std::max<int64_t>(1, evaluated) * shape.batches;
          const double s = now_seconds() - t0;
          progress.update(
              batches_done, total,
              fmt::format("held-out bucket {} | {:.0f} tok/s | ETA {}",
                          bucket >= 0 ? names[size_t(bucket)] : std::string("(all)"),
                          double(batches_done * B * T) / std::max(s, 1e-9),
                          ProgressLine::format_eta(
                              batches_done > 0 ? s / double(batches_done) * double(total - batches_done) : 0.0)));
          ++batches_done;
        }
      });
  progress.finish();
  nlohmann::json j;
  j["dataset"] = dataset;
  j["sequences_per_bucket"] = shape.batches * B;
  j["seq_len"] = T;
  j["eval_loss"] = h.eval_loss;
  nlohmann::json buckets = nlohmann::json::array();
  for (const auto& [name, loss] : h.buckets) {
    const int64_t k = std::find(names.begin(), names.end(), name) - names.begin();
    const auto [ntok, nbytes] = counted[k];
    buckets.push_back({{"bucket", name},
                       {"loss", loss},
                       {"tokens", ntok},
                       {"bytes", nbytes},
                       {"bits_per_byte", nbytes > 0 ? loss * double(ntok) / (double(nbytes) * std::log(2.0)) : NAN}});
  }
  j["buckets"] = buckets;
  if (a.positions) {  // every evaluated bucket's sequences together, and each bucket's
    const auto [all, per] = merged_by_bucket(by_position, names, [](const PositionLoss& p) { return p.bins(); });
    j["position_loss"] = all.bins();
    j["bucket_position_loss"] = per;
    if (by_context) {
      const auto [every, per_bucket] =
          merged_by_bucket(by_context_loss, names, [](const ContextLengthLoss& c) { return c.table(); });
      j["context_loss"] = every.table();
      j["bucket_context_loss"] = per_bucket;
    }
  }
  return j;
}

// Token ids the model has no embedding for: the wrong --tokenizer.
Status check_vocab(const std::vector<std::vector<int32_t>>& seqs, const TextCodec& codec, int64_t vocab_size) {
  for (const auto& s : seqs)
    for (int32_t t : s)
      if (t >= vocab_size)
        return Status::errorf("{}: token id {} outside vocab_size {} (wrong --tokenizer?)", codec.source(), t,
                              vocab_size);
  return Status::ok();
}

// Every --text-set file read and tokenized, for windows of T tokens, before
// anything is scored: a bad record, a wrong tokenizer or two sets of one
// name cost no held-out pass. Every error is the request's (exit 2).
Result<std::vector<TextSet>> read_text_sets(const TextCodec& codec, const EvalArgs& a, int64_t T, int64_t vocab_size) {
  std::vector<TextSet> sets;
  std::set<std::string> names;
  for (const std::string& path : a.text_sets) {
    auto set = read_text_set(path, codec, T);
    if (!set) return set.status();
    MT_RETURN_IF_ERROR(check_vocab({set.value().tokens}, codec, vocab_size));
    if (!names.insert(set.value().name).second)
      return Status::errorf("two --text-set files are named \"{}\" (a set is named by its file name)",
                            set.value().name);
    sets.push_back(std::move(set.value()));
  }
  return sets;
}

// Held-out loss and bits per byte of each text set: windows of the held-out
// pass's length, in batches of train.batch_size, with the training forward
// (so a set's figure compares with a bucket's).
nlohmann::json score_text_sets(const InferenceModel& m, const TextCodec& codec, const EvalArgs& a,
                               const std::vector<TextSet>& sets, int64_t T) {
  const TrainConfig& tc = m.cfg.train;
  const int64_t B = tc.batch_size;
  Transformer model(m.cfg.model, B, T, MatmulPrecision::kFp32);
  model.set_attention_kernel(tc.attention_kernel);
  if (tc.document_mask) model.set_document_separator(codec.end_of_document());
  nlohmann::json out = nlohmann::json::array();
  for (const TextSet& set : sets) {
    ProgressLine progress(stderr, 1);
    const double t0 = now_seconds();
    const SetScore sc = score_text_set(
        set, B, T, codec,
        [&](const int32_t* rows) -> const std::vector<float>& {
          model.forward(m.params.data(), rows, m.bias());
          return model.token_losses();
        },
        [&](int64_t done, int64_t total) {
          if (!a.progress) return;
          const double s = now_seconds() - t0;
          progress.update(
              done, total,
              fmt::format("text set {} | {:.0f} tok/s | ETA {}", set.name, double(done * T) / std::max(s, 1e-9),
                          ProgressLine::format_eta(s / double(done) * double(total - done))));
        });
    progress.finish();
    out.push_back({{"set", set.name},
                   {"path", set.path},
                   {"documents", set.documents},
                   {"windows", sc.windows},
                   {"seq_len", T},
                   {"tokens", sc.tokens},
                   {"bytes", sc.bytes},
                   {"loss", sc.loss},
                   {"bits_per_byte", sc.bits_per_byte()}});
  }
  return out;
}

// A live progress line over a task's units (choices or items).
std::function<void(int64_t, int64_t)> task_progress(const EvalArgs& a, ProgressLine& line, const std::string& name,
                                                    const char* unit) {
  const double t0 = now_seconds();
  return [&a, &line, name, unit, t0](int64_t done, int64_t total) {
    if (!a.progress) return;
    const double s = now_seconds() - t0;
    line.update(done, total,
                fmt::format("task {} | {:.1f} {}/s | ETA {}", name, double(done) / std::max(s, 1e-9), unit,
                            ProgressLine::format_eta(s / double(done) * double(total - done))));
  };
}

// The decoder of a task: fp32 cache, document masking as the model trained.
DecoderOptions decoder_options(const InferenceModel& m, const TextCodec& codec, int64_t batch, int64_t max_len) {
  DecoderOptions o{batch, max_len, 512, KvDtype::kF32};
  if (m.cfg.train.document_mask) o.document_separator = codec.end_of_document();
  return o;
}

Result<nlohmann::json> eval_multiple_choice(const TaskFile& task, const InferenceModel& m, const TextCodec& codec,
                                            const EvalArgs& a) {
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int64_t> first;
  encode_mc(codec, task.mc, seqs, first);
  MT_RETURN_IF_ERROR(check_vocab(seqs, codec, m.cfg.model.vocab_size));
  int64_t longest = 1;
  for (const auto& s : seqs) longest = std::max<int64_t>(longest, int64_t(s.size()));
  Decoder dec(m.cfg.model, m.params.data(), m.bias(),
              decoder_options(m, codec, std::min<int64_t>(a.batch, int64_t(seqs.size())), longest));
  ProgressLine progress(stderr, 1000000);  // in place on a terminal; logs get the result line only
  const McResult r = score_mc(dec, codec, task.name, task.mc, task_progress(a, progress, task.name, "choices"));
  progress.finish();
  fmt::print("task {:<24} docs {:>5}  acc {:.4f} ± {:.4f}  acc_norm {:.4f} ± {:.4f}\n", task.name, r.docs, r.acc,
             r.acc_stderr, r.acc_norm, r.acc_norm_stderr);
  return to_json(r);
}

// The decoder's length for a generative task: every item's prompt and
// answer positions (the last answer token is never fed back). Past
// train.seq_len the model never trained, so such an item is refused, naming
// it, unless --past-seq-len asks for the extrapolation; a KV cache that
// cannot fit beside the model is refused too. Checked before the held-out
// pass, so a refusal comes at once. `usage` is set when the request is at fault.
Result<int64_t> generative_max_len(const TaskFile& task, const InferenceModel& m, const TextCodec& codec,
                                   const EvalArgs& a, bool& usage) {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> answer_tokens;
  encode_gen(codec, task.gen, prompts, answer_tokens, a.episode_tokens);
  MT_RETURN_IF_ERROR(check_vocab(prompts, codec, m.cfg.model.vocab_size));
  const int64_t trained = m.cfg.train.seq_len;
  int64_t longest_prompt = 1, longest_answer = 1, past = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int64_t positions = int64_t(prompts[i].size()) - 1 + answer_tokens[i];
    // A batch decodes as many tokens as its longest answer after each of its
    // prompts, so the cache holds the longest prompt plus the longest answer.
    longest_prompt = std::max(longest_prompt, int64_t(prompts[i].size()));
    longest_answer = std::max(longest_answer, answer_tokens[i]);
    if (positions <= trained) continue;
    ++past;
    if (a.past_seq_len) continue;
    usage = true;
    const GenItem& it = task.gen[i];
    return Status::errorf(
        "{}:{}: item \"{}\": its prompt ({} tokens) and answer ({} tokens) need {} positions, past the {} the model "
        "was trained on (train.seq_len; a phased run's last phase's): make the task with shorter --tokens, or pass "
        "--past-seq-len to measure extrapolation",
        task.path, it.line, it.id, prompts[i].size() - 1, answer_tokens[i], positions, trained);
  }
  if (past > 0)
    fmt::print(stderr, "# warning: task {}: {} of {} items need more than the {} positions the model was trained on\n",
               task.name, past, prompts.size(), trained);
  const int64_t batch = std::min<int64_t>(a.batch, int64_t(prompts.size()));
  const int64_t longest = longest_prompt + longest_answer;
  const double kv = KvCache::planned_bytes(m.cfg.model, batch, longest, KvDtype::kF32);
  if (kv + 4.0 * double(m.params.size()) > physical_memory_bytes()) {
    usage = true;
    return Status::errorf(
        "task {}: a KV cache of {:.3g} GiB for --batch {} items of up to {} positions does not fit "
        "this machine's {:.3g} GiB beside the model (a smaller --batch)",
        task.name, kv / double(int64_t(1) << 30), batch, longest, physical_memory_bytes() / double(int64_t(1) << 30));
  }
  return longest;
}

// Greedy decoding and exact match (train/gen_tasks.h), on a decoder of
// `max_len` positions (generative_max_len).
nlohmann::json eval_generative(const TaskFile& task, int64_t max_len, const InferenceModel& m, const TextCodec& codec,
                               const EvalArgs& a) {
  const int64_t batch = std::min<int64_t>(a.batch, task.items());
  Decoder dec(m.cfg.model, m.params.data(), m.bias(), decoder_options(m, codec, batch, max_len));
  ProgressLine progress(stderr, 1000000);
  const GenResult r =
      score_gen(dec, codec, task.name, task.gen, task_progress(a, progress, task.name, "items"), a.episode_tokens);
  progress.finish();
  fmt::print("{}", format_gen_result(r));
  return to_json(r, task.gen);
}

ExitCode run_eval(const EvalArgs& a) {
  set_num_threads(int(a.threads));
  std::vector<TaskFile> tasks;
  for (const std::string& path : a.tasks) {
    auto t = read_task_file(path);
    if (!t) return fail("eval", t.status(), ExitCode::kUsage);
    tasks.push_back(std::move(t.value()));
  }
  auto m = load_inference_model(a.ckpt);
  if (!m) return fail("eval", m.status(), ExitCode::kFailed);
  auto codec = open_run_codec(m.value(), a.tokenizer);
  if (!codec) return fail("eval", codec.status(), ExitCode::kFailed);
  std::vector<TextSet> text_sets;
  int64_t set_len = 0;  // the windows' length of the text sets
  if (!a.text_sets.empty()) {
    bool usage = false;
    auto len = held_out_len(m.value(), a, usage);
    if (!len) return fail("eval", len.status(), ExitCode::kUsage);
    set_len = len.value();
    auto sets = read_text_sets(*codec.value(), a, set_len, m.value().cfg.model.vocab_size);
    if (!sets) return fail("eval", sets.status(), ExitCode::kUsage);
    text_sets = std::move(sets.value());
  }
  std::vector<int64_t> max_len(tasks.size(), 0);  // per generative task, its decoder's length
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (tasks[t].format != TaskFormat::kGenerative) continue;
    bool usage = false;
    auto len = generative_max_len(tasks[t], m.value(), *codec.value(), a, usage);
    if (!len) return fail("eval", len.status(), usage ? ExitCode::kUsage : ExitCode::kFailed);
    max_len[t] = len.value();
  }
  nlohmann::json out;
  out["checkpoint"] = m.value().ckpt_dir;
  out["step"] = m.value().step;
  std::set<std::string> cleaned;
  if (auto dataset = dataset_of(m.value(), a); !dataset) {  // the held-out pass, if asked for, fails on it
    out["dataset"] = {{"path", nullptr},
                      {"decontamination", {{"decontaminated", nullptr}, {"error", dataset.status().message()}}}};
    fmt::print("dataset decontamination unknown ({})\n", dataset.status().message());
  } else if (!dataset.value().empty()) {
    out["dataset"] = dataset_record(dataset.value());
    cleaned = cleaned_against(out["dataset"]);
  }
  if (!a.no_held_out) {
    bool usage = false;
    auto h = held_out(m.value(), *codec.value(), a, usage);
    if (!h) return fail("eval", h.status(), usage ? ExitCode::kUsage : ExitCode::kFailed);
    if (!h.value().is_null()) {
      out["held_out"] = h.value();
      fmt::print("held-out loss {:.4f} ({} sequences of {} tokens per bucket)\n", h.value()["eval_loss"].get<double>(),
                 h.value()["sequences_per_bucket"].get<int64_t>(), h.value()["seq_len"].get<int64_t>());
      fmt::print("  {:<32} {:>8} {:>8}\n", "bucket", "loss", "bpb");
      for (const auto& b : h.value()["buckets"])
        fmt::print("  {:<32} {:>8.4f} {:>8.4f}\n", b["bucket"].get<std::string>(), b["loss"].get<double>(),
                   b["bits_per_byte"].get<double>());
      if (h.value().contains("position_loss")) {
        fmt::print("held-out loss by position (tokens of context; every bucket's sequences):\n");
        for (const auto& p : h.value()["position_loss"])
          fmt::print("  {:>7}-{:<7} {:>8.4f}\n", p["from"].get<int64_t>(), p["to"].get<int64_t>(),
                     p["loss"].get<double>());
      }
      if (h.value().contains("context_loss")) {
        const nlohmann::json& c = h.value()["context_loss"];
        fmt::print("held-out loss of the same tokens by context (each window's last {}; {} windows):\n",
                   c["scored_per_window"].get<int64_t>(), c["windows"].get<int64_t>());
        fmt::print("  {:>8} {:>8} {:>8} {:>24}\n", "context", "loss", "se", "gain over half (se)");
        for (const auto& r : c["lengths"]) {
          const std::string gain =
              r.contains("gain") ? fmt::format("{:+.4f} ({:.4f})", r["gain"].get<double>(), r["gain_se"].get<double>())
                                 : std::string("");
          fmt::print("  {:>8} {:>8.4f} {:>8.4f} {:>24}\n", r["context"].get<int64_t>(), r["loss"].get<double>(),
                     r["se"].get<double>(), gain);
        }
      }
    }
  }
  if (!text_sets.empty()) {
    const nlohmann::json sets = score_text_sets(m.value(), *codec.value(), a, text_sets, set_len);
    out["text_sets"] = sets;
    fmt::print("text sets ({} tokens per window):\n", set_len);
    fmt::print("  {:<32} {:>8} {:>8} {:>10} {:>10} {:>6}\n", "set", "loss", "bpb", "tokens", "bytes", "docs");
    for (const auto& s : sets)
      fmt::print("  {:<32} {:>8.4f} {:>8.4f} {:>10} {:>10} {:>6}\n", s["set"].get<std::string>(),
                 s["loss"].get<double>(), s["bits_per_byte"].get<double>(), s["tokens"].get<int64_t>(),
                 s["bytes"].get<int64_t>(), s["documents"].get<int64_t>());
  }
  out["tasks"] = nlohmann::json::array();
  for (size_t t = 0; t < tasks.size(); ++t) {
    const TaskFile& task = tasks[t];
    auto r = task.format == TaskFormat::kGenerative
                 ? Result<nlohmann::json>(eval_generative(task, max_len[t], m.value(), *codec.value(), a))
                 : eval_multiple_choice(task, m.value(), *codec.value(), a);
    if (!r) return fail("eval", r.status(), ExitCode::kFailed);
    // Was this very file (by hash) one the dataset was cleaned against?
    r.value()["dataset_decontaminated_against"] = cleaned.count(task.hash) > 0;
    out["tasks"].push_back(std::move(r.value()));
  }
  if (!a.plot.empty() && out.contains("held_out")) {
    const std::string svg =
        position_loss_svg(out["held_out"], m.value().cfg.train.seq_len, fmt::format("Held-out loss by position: {}", a.ckpt));
    if (Status s = write_file_atomic(a.plot, svg); !s.is_ok()) return fail("eval", s, ExitCode::kFailed);
    fmt::print(stderr, "# plot: {}\n", a.plot);
  }
  if (!a.out.empty()) {
    // A generative task's outputs are whatever bytes the model chose: invalid UTF-8 becomes U+FFFD.
    Status s = write_file_atomic(a.out, out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    if (!s.is_ok()) return fail("eval", s, ExitCode::kFailed);
  }
  return ExitCode::kOk;
}

}  // namespace

void register_eval(CLI::App& app, CommandAction& run) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* sub = app.add_subcommand(
      "eval",
      "Held-out loss and bits-per-byte per bucket, and task accuracy (multiple-choice, generative), of a "
      "checkpoint.");
  sub->add_option("--ckpt", a->ckpt, "Checkpoint directory (step_XXXXXXXX), or a run directory (its newest checkpoint)")
      ->required();
  sub->add_option("--tasks", a->tasks,
                  "Task file, JSONL: multiple-choice {\"context\", \"choices\", \"answer\"} or generative {\"id\", "
                  "\"family\", \"prompt\", \"answer\"} per line, told apart per file (repeatable)");
  sub->add_option("--text-set", a->text_sets,
                  "Text set, JSONL ({\"text\"} per line) or a plain-text file: its held-out loss and bits per byte "
                  "(windows of the held-out length, every token predicted once), named by its file name; for a "
                  "target that is not a training bucket (repeatable)");
  sub->add_option("--tokenizer", a->tokenizer, "SentencePiece model (default: the run dataset's tokenizer.model)");
  sub->add_option("--dataset", a->dataset, "Built dataset for the held-out loss (default: the run's data.dataset)");
  sub->add_option("--mixture", a->mixture, "Mixture TOML for the dataset (default: the run's data.mixture)");
  sub->add_option("--batches", a->batches, "Held-out batches of train.batch_size per bucket; 0 = train.eval_batches")
      ->capture_default_str()
      ->check(in_range(0, 1e9));
  sub->add_option("--batch", a->batch, "Sequences scored together for the tasks")
      ->capture_default_str()
      ->check(in_range(1, 65536));
  sub->add_flag("--no-held-out", a->no_held_out, "Only the tasks");
  sub->add_option("--episode-tokens", a->episode_tokens,
                  "Agentic items (with an environment): new tokens an episode may use, its tool calls, the "
                  "environment's answers and the final answer together (greedy; the end-of-document id ends it)")
      ->capture_default_str()
      ->check(in_range(1, 1 << 16));
  sub->add_flag("--past-seq-len", a->past_seq_len,
                "Decode generative items longer than train.seq_len, and allow a longer --seq-len (length "
                "extrapolation), instead of refusing them");
  sub->add_option("--seq-len", a->seq_len,
                  "Held-out windows of this many tokens; 0 = train.seq_len (longer needs --past-seq-len)")
      ->capture_default_str()
      ->check(in_range(0, 1 << 20));
  sub->add_flag("--positions", a->positions,
                "Also the held-out loss by position in the sequence, in bins that double (1, 2-3, 4-7, ...): does "
                "the model use its context");
  sub->add_option("--context-min", a->context_min,
                  "With --positions: the shortest context at which each window's last --context-min/2 tokens are "
                  "scored again (lengths halve from the window's down to it); 0 = the window's length / 16, at least 8")
      ->capture_default_str()
      ->check(in_range(0, 1 << 20))
      ->needs(sub->get_option("--positions"));
  auto* plot = sub->add_option("--plot", a->plot,
                                "With --positions: write the loss by position, over all buckets and per bucket, as an "
                                "SVG chart to this file");
  plot->needs(sub->get_option("--positions"));
  sub->add_flag(
      "--no-progress", [a](int64_t) { a->progress = false; }, "No live progress line");
  sub->add_option("--out", a->out, "Write the results as JSON to this file");
  sub->add_option("--threads", a->threads, "Worker threads; 0 = OpenMP default")
      ->check(in_range(0, 256))
      ->capture_default_str();
  sub->callback([a, &run] { run = [a] { return run_eval(*a); }; });
}

}  // namespace mt
