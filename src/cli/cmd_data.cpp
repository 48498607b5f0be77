// cmd_data.cpp — `moetrain data build|inspect|plan` and `moetrain tokenizer
// train|encode`:
//   data build --config FILE --out DATASET_DIR
//   data inspect DATASET_DIR [--json] [--html OUT] [--no-heatmap]   (writes DATASET_DIR/heatmap.svg)
//   data decontaminate DATASET_DIR --tasks FILE... (--out NEW_DIR | --dry-run) [--n 8] [--threshold 0.5]
//   data plan DATASET_DIR --mixture FILE [--seq-len N] [--json]     (exit 3 when the plan repeats data)
//   data plan DATASET_DIR --config RUN [--json]   (a run in phases: every phase's mixture against one pool)
//   tokenizer train --input PATH... --out MODEL [--vocab-size N]
//   tokenizer encode --model MODEL (--text TEXT | --file FILE) [--json]
#include <fmt/format.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/data_decontaminate.h"
#include "cli/data_docs.h"
#include "cli/data_phase_plan.h"
#include "dist/mpi_comm.h"
#include "core/file_io.h"
#include "train/run_config.h"
#include "core/hash.h"
#include "core/timer.h"
#include "data/data_build.h"
#include "data/dataset.h"
#include "data/heatmap.h"
#include "data/ingest.h"
#include "data/line_reader.h"
#include "data/mixture.h"
#include "report/html.h"
#include "report/svg.h"

namespace mt {
namespace {

using json = nlohmann::json;

ExitCode run_build(const std::string& config, const std::vector<std::string>& sets, const std::string& out, bool quiet,
              double timeout_s) {
  auto cfg = load_data_build_config(config, sets);
  if (!cfg) return fail("data build", cfg.status(), ExitCode::kUsage);
  // Under mpirun every rank reads, labels and tokenizes its share; rank 0 writes.
  std::unique_ptr<Comm> world = make_world_comm(timeout_s);
  Comm& comm = *world;
  BuildReport rep;
  const double t0 = now_seconds();
  Status s = build_dataset(cfg.value(), out, rep, !quiet, comm);
  if (!s) return fail("data build", s);
  if (comm.rank() != 0) return ExitCode::kOk;
  const double dt = now_seconds() - t0;
  const IngestStats& st = rep.ingest;
  fmt::print("built {}: {} buckets, {} train tokens in {} documents, {} eval tokens in {} documents\n", out,
             rep.buckets, rep.train_tokens, rep.train_docs, rep.eval_tokens, rep.eval_docs);
  fmt::print("  input: {} files, {} records, {} documents kept ({:.1f} MB)\n", st.files, st.records, st.documents,
             double(st.bytes) / 1e6);
  for (const auto& [why, n] : st.dropped) fmt::print("  dropped {}: {}\n", why, n);
  for (const auto& [why, n] : st.skipped_files) fmt::print("  skipped repository files ({}): {}\n", why, n);
  for (const auto& [why, msg] : st.first_error) fmt::print("  first {}: {}\n", why, msg);
  if (st.long_docs_split + st.long_docs_truncated)
    fmt::print("  documents over limits.max_doc_bytes: {} split, {} truncated\n", st.long_docs_split,
               st.long_docs_truncated);
  if (st.utf8_repaired) fmt::print("  invalid UTF-8 sequences replaced: {}\n", st.utf8_repaired);
  fmt::print("  tokenizer: {} pieces; time: ingest {:.2f}s, tokenizer {:.2f}s, labels {:.2f}s, tokenize {:.2f}s "
             "({:.2f} MB/s), write {:.2f}s, total {:.2f}s\n",
             rep.vocab_size, rep.seconds_ingest, rep.seconds_tokenizer, rep.seconds_labels, rep.seconds_tokenize,
             rep.seconds_tokenize > 0 ? double(st.bytes) / 1e6 / rep.seconds_tokenize : 0.0, rep.seconds_write, dt);
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);  // ru_maxrss is in KiB on Linux
  fmt::print("  throughput: {:.2f} MB/s end to end; peak memory {} MiB\n", double(st.bytes) / 1e6 / std::max(dt, 1e-9),
             int64_t(ru.ru_maxrss) >> 10);
  return ExitCode::kOk;
}

ExitCode run_inspect(const std::string& dir, bool as_json, const std::string& html, bool heatmap) {
  auto ds = Dataset::open(dir);
  if (!ds) return fail("data inspect", ds.status());
  const Dataset& d = *ds.value();
  const std::string title = "moetrain dataset " + std::filesystem::path(dir).filename().string();
  int64_t total = 0;
  for (const Bucket& b : d.buckets()) total += b.train->n_tokens();
  const std::string heatmap_svg = dataset_heatmap_svg(d, title);
  if (heatmap) {
    Status s = write_file_atomic(dir + "/heatmap.svg", heatmap_svg);
    if (!s) return fail("data inspect", s);
  }
  if (!html.empty()) {
    report::HtmlPage page(title);
    page.heading(1, title);
    page.paragraph(fmt::format("{} buckets, {} train tokens; tokenizer {} ({} pieces)", d.buckets().size(), total,
                               d.manifest()["tokenizer"].value("hash", ""), d.tokenizer().vocab_size()));
    page.figure(heatmap_svg, "Share of train tokens per topic x quality bucket");
    std::vector<std::vector<std::string>> rows;
    for (const Bucket& b : d.buckets())
      rows.push_back({b.name, std::to_string(b.train->n_docs()), std::to_string(b.train->n_tokens()),
                      fmt::format("{:.2f}%", total ? 100.0 * double(b.train->n_tokens()) / double(total) : 0.0),
                      std::to_string(b.eval->n_docs()), std::to_string(b.eval->n_tokens())});
    page.heading(2, "Buckets");
    page.table({"bucket", "documents", "tokens", "share", "eval documents", "eval tokens"}, rows);
    Status s = write_file_atomic(html, page.render());
    if (!s) return fail("data inspect", s);
  }
  if (as_json) {
    json j;
    j["dir"] = dir;
    j["tokenizer"] = d.manifest()["tokenizer"];
    j["buckets"] = json::array();
    for (const Bucket& b : d.buckets())
      j["buckets"].push_back({{"name", b.name}, {"topic", b.topic}, {"quality", b.quality},
                              {"documents", b.train->n_docs()}, {"tokens", b.train->n_tokens()},
                              {"share", total ? double(b.train->n_tokens()) / double(total) : 0.0},
                              {"eval_documents", b.eval->n_docs()}, {"eval_tokens", b.eval->n_tokens()}});
    j["totals"] = d.manifest().value("totals", json::object());
    j["ingest"] = d.manifest().value("ingest", json::object());
    j["labels"] = d.manifest().value("labels", json::object());
    if (heatmap) j["heatmap"] = dir + "/heatmap.svg";
    fmt::print("{}\n", j.dump(1));
    return ExitCode::kOk;
  }
  fmt::print("dataset {}: {} buckets, {} train tokens; tokenizer {} ({} pieces)\n", dir, d.buckets().size(), total,
             d.manifest()["tokenizer"].value("hash", ""), d.tokenizer().vocab_size());
  fmt::print("{:<28} {:>10} {:>14} {:>8} {:>10} {:>12}\n", "bucket", "documents", "tokens", "share", "eval docs",
             "eval tokens");
  for (const Bucket& b : d.buckets())
    fmt::print("{:<28} {:>10} {:>14} {:>7.2f}% {:>10} {:>12}\n", b.name, b.train->n_docs(), b.train->n_tokens(),
               total ? 100.0 * double(b.train->n_tokens()) / double(total) : 0.0, b.eval->n_docs(), b.eval->n_tokens());
  const json& ing = d.manifest().value("ingest", json::object());
  if (ing.contains("dropped"))
    for (auto it = ing["dropped"].begin(); it != ing["dropped"].end(); ++it)
      fmt::print("dropped {}: {}\n", it.key(), it.value().dump());
  if (ing.contains("skipped_files"))
    for (auto it = ing["skipped_files"].begin(); it != ing["skipped_files"].end(); ++it)
      fmt::print("skipped repository files ({}): {}\n", it.key(), it.value().dump());
  if (heatmap) fmt::print("heatmap: {}/heatmap.svg\n", dir);
  if (!html.empty()) fmt::print("html: {}\n", html);
  return ExitCode::kOk;
}

ExitCode run_plan(const std::string& dir, const std::string& mixture, const std::vector<std::string>& sets, int64_t seq_len,
             const std::string& run_config, bool as_json) {
  if (!run_config.empty()) {  // the run's own sequence length, unless --seq-len was given
    auto rc = load_run_config(run_config, {});
    if (!rc) return fail("data plan", rc.status(), ExitCode::kUsage);
    if (!mixture.empty()) rc->data.mixture = mixture;
    if (!rc->phases.empty()) return run_phase_plan(dir, *rc, as_json);  // every phase against one pool
    if (mixture.empty() && !rc->data.mixture.empty())
      return run_plan(dir, rc->data.mixture, sets, seq_len, run_config, as_json);
    if (seq_len == 0) seq_len = rc->train.seq_len;
  }
  if (seq_len == 0) seq_len = 1024;
  if (mixture.empty())
    return fail("data plan", Status::error("--mixture is required (or a --config naming one)"), ExitCode::kUsage);
  auto ds = Dataset::open(dir, ShardVerify::kHeadersOnly);
  if (!ds) return fail("data plan", ds.status());
  auto mx = load_mixture(mixture, sets);
  if (!mx) return fail("data plan", mx.status(), ExitCode::kUsage);
  auto plan = plan_mixture(*ds.value(), mx.value(), seq_len);
  if (!plan) return fail("data plan", plan.status(), ExitCode::kUsage);
  const MixturePlan& p = plan.value();
  const Status ok = p.check(mixture);
  if (as_json) {
    json j;
    j["ok"] = ok.is_ok();
    j["seq_len"] = p.seq_len;
    j["scale"] = fmt::format("{}/{}", p.scale_num, p.scale_den);
    j["full_sequences"] = p.full_sequences;
    j["sequences"] = p.sequences;
    j["tokens"] = p.sequences * p.seq_len;
    j["max_epochs"] = p.max_epochs;
    j["seed"] = p.seed;
    j["buckets"] = json::array();
    for (const BucketPlan& b : p.buckets)
      j["buckets"].push_back({{"name", b.name}, {"weight", b.weight}, {"full_sequences", b.full_sequences},
                              {"sequences", b.sequences}, {"tokens_wanted", b.tokens_wanted},
                              {"tokens_available", b.tokens_available}, {"epochs", b.epochs}});
    j["violations"] = p.violations;
    fmt::print("{}\n", j.dump(1));
  } else {
    fmt::print("mixture {} on {}: scale {}/{} of {} sequences = {} sequences of {} tokens ({} tokens), max_epochs {}, "
               "seed {}\n",
               mixture, dir, p.scale_num, p.scale_den, p.full_sequences, p.sequences, p.seq_len,
               p.sequences * p.seq_len, p.max_epochs, p.seed);
    fmt::print("{:<28} {:>8} {:>12} {:>10} {:>14} {:>14} {:>8}\n", "bucket", "weight", "full seqs", "seqs",
               "tokens wanted", "available", "epochs");
    for (const BucketPlan& b : p.buckets)
      fmt::print("{:<28} {:>8.4f} {:>12} {:>10} {:>14} {:>14} {:>8.3f}{}\n", b.name, b.weight, b.full_sequences,
                 b.sequences, b.tokens_wanted, b.tokens_available, b.epochs,
                 b.epochs > p.max_epochs ? "  <-- repeats data" : "");
  }
  if (!ok) return fail("data plan", ok, ExitCode::kRefused);
  return ExitCode::kOk;
}

ExitCode run_tokenizer_train(const std::vector<std::string>& inputs, const std::string& out, int64_t vocab,
                        int64_t sample_bytes) {
  std::vector<InputSpec> specs;
  for (const std::string& p : inputs) {
    InputSpec in;
    in.path = p;
    in.on_error = OnError::kSkip;
    in.utf8 = Utf8Policy::kRepair;
    specs.push_back(in);
  }
  std::vector<Document> docs;
  IngestStats st;
  Status s = ingest(specs, CodeOptions(), docs, st);
  if (!s) return fail("tokenizer train", s);
  std::vector<std::string_view> texts;
  for (const Document& d : docs) texts.push_back(d.text);
  TokenizerTrainOptions opt;
  opt.vocab_size = vocab;
  opt.sample_bytes = sample_bytes;
  auto model = Tokenizer::train(texts, opt);
  if (!model) return fail("tokenizer train", model.status());
  auto tok = Tokenizer::from_serialized(model.value(), out);
  if (!tok) return fail("tokenizer train", tok.status());
  s = write_file_atomic(out, model.value());
  if (!s) return fail("tokenizer train", s);
  fmt::print("tokenizer {}: {} pieces from {} documents ({:.1f} MB), hash {}\n", out, tok.value()->vocab_size(),
             docs.size(), double(st.bytes) / 1e6, hex64(tok.value()->hash()));
  return ExitCode::kOk;
}

ExitCode run_tokenizer_encode(const std::string& model, const std::string& text, const std::string& file, bool as_json) {
  auto tok = Tokenizer::load(model);
  if (!tok) return fail("tokenizer encode", tok.status());
  std::string input = text;
  if (!file.empty()) {
    auto r = LineReader::open(file);
    if (!r) return fail("tokenizer encode", r.status());
    Status s = r.value()->read_all(input);
    if (!s) return fail("tokenizer encode", s);
  }
  if (const int64_t at = find_invalid_utf8(input); at >= 0)
    return fail("tokenizer encode", Status::errorf("{}: invalid UTF-8 at byte {}", file.empty() ? "--text" : file, at));
  std::vector<int32_t> ids;
  tok.value()->encode(input, ids);
  if (as_json) {
    json j;
    j["model"] = model;
    j["hash"] = hex64(tok.value()->hash());
    j["vocab_size"] = tok.value()->vocab_size();
    j["ids"] = ids;
    json sp;
    for (int s = 0; s < kNumSpecials; ++s) sp[special_piece(Special(s))] = tok.value()->special(Special(s));
    j["specials"] = sp;
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}\n", fmt::join(ids, " "));
  }
  return ExitCode::kOk;
}

}  // namespace

void register_data(CLI::App& app, CommandAction& run) {
  CLI::App* data = app.add_subcommand("data", "Build, inspect and plan bucketed token datasets.");
  data->require_subcommand(1);

  struct BuildArgs {
    std::string config, out;
    std::vector<std::string> sets;
    bool quiet = false;
    double timeout_s = 86400;
  };
  auto ba = std::make_shared<BuildArgs>();
  CLI::App* build = data->add_subcommand("build", "Ingest, tokenize, label and shard a corpus into DATASET_DIR.");
  build->add_option("--config", ba->config, "Data build config (TOML)")->required();
  build->add_option("--out", ba->out, "Output dataset directory (must not exist, or be empty)")->required();
  build->add_option("--set", ba->sets, "Override a config key: KEY=VALUE (e.g. tokenizer.vocab_size=4096, input[0].path=x)");
  build->add_flag("--quiet", ba->quiet, "No progress lines");
  build
      ->add_option("--timeout", ba->timeout_s,
                   "Under mpirun: seconds a rank may wait for the others at a stage before the job is ended")
      ->check(positive());
  build->callback([ba, &run] {
    run = [ba] { return run_build(ba->config, ba->sets, ba->out, ba->quiet, ba->timeout_s); };
  });

  struct InspectArgs {
    std::string dir, html, bucket;
    bool json = false, no_heatmap = false, docs = false;
    int64_t limit = 0;
  };
  auto ia = std::make_shared<InspectArgs>();
  CLI::App* insp = data->add_subcommand("inspect", "Bucket table (documents, tokens, share) and topic x quality heatmap.");
  insp->add_option("dataset", ia->dir, "Dataset directory")->required();
  insp->add_flag("--json", ia->json, "Print JSON");
  insp->add_option("--html", ia->html, "Also write an HTML page (table + heatmap) here");
  insp->add_flag("--no-heatmap", ia->no_heatmap, "Do not write DATASET_DIR/heatmap.svg");
  insp->add_flag("--docs", ia->docs, "List documents: id, bucket, split, scores and source (file:line)");
  insp->add_option("--bucket", ia->bucket, "With --docs: only this bucket (TOPIC/QUALITY)");
  insp->add_option("--limit", ia->limit, "With --docs: at most this many documents (0 = all)")->check(non_negative());
  insp->callback([ia, &run] {
    run = [ia] {
      if (ia->docs) return run_inspect_docs(ia->dir, ia->bucket, ia->json, ia->limit);
      return run_inspect(ia->dir, ia->json, ia->html, !ia->no_heatmap);
    };
  });

  struct ShowArgs {
    std::string dir;
    int64_t id = 0;
    bool json = false;
  };
  auto sa = std::make_shared<ShowArgs>();
  CLI::App* show = data->add_subcommand("show", "One document: its labels, scores, source and text.");
  show->add_option("dataset", sa->dir, "Dataset directory")->required();
  show->add_option("id", sa->id, "Document id (see data inspect --docs)")->required()->check(non_negative());
  show->add_flag("--json", sa->json, "Print JSON (text included)");
  show->callback([sa, &run] { run = [sa] { return run_show_doc(sa->dir, sa->id, sa->json); }; });

  struct PlanArgs {
    std::string dir, mixture, run_config;
    std::vector<std::string> sets;
    int64_t seq_len = 0;
    bool json = false;
  };
  auto pa = std::make_shared<PlanArgs>();
  CLI::App* plan = data->add_subcommand("plan", "Per-bucket tokens wanted vs available; exit 3 if data would repeat.");
  plan->add_option("dataset", pa->dir, "Dataset directory")->required();
  plan->add_option("--mixture", pa->mixture, "Mixture TOML (with a --config in phases: its data.mixture)");
  plan->add_option("--set", pa->sets, "Override a mixture key: KEY=VALUE (e.g. scale=1/360, weights.\"t00/*\"=2)");
  plan->add_option("--seq-len", pa->seq_len, "Training sequence length (default: --config's train.seq_len, else 1024)")
      ->check(in_range(1, 1 << 24));
  plan->add_option("--config", pa->run_config,
                   "The run config whose train.seq_len to use; one with [[phase]] tables is planned phase by phase "
                   "against one pool of documents");
  plan->add_flag("--json", pa->json, "Print JSON");
  plan->callback([pa, &run] {
    run = [pa] { return run_plan(pa->dir, pa->mixture, pa->sets, pa->seq_len, pa->run_config, pa->json); };
  });

  auto da = std::make_shared<DecontaminateArgs>();
  CLI::App* decon = data->add_subcommand(
      "decontaminate", "Remove the documents that reproduce evaluation task items (word n-gram overlap).");
  decon->add_option("dataset", da->dataset, "Dataset directory")->required();
  decon->add_option("--tasks", da->tasks, "Multiple-choice JSONL task file, as `eval --tasks` reads (repeatable)")
      ->required();
  auto* out_opt =
      decon->add_option("--out", da->out, "New dataset directory: DATASET minus the contaminated documents");
  auto* dry_opt = decon->add_flag("--dry-run", da->dry_run, "Only report: write nothing");
  out_opt->excludes(dry_opt);
  decon->add_option("--n", da->n, "Words per n-gram (8: Llama 3; 13: GPT-3, lm-eval)")->capture_default_str();
  decon
      ->add_option("--threshold", da->threshold,
                   "Least fraction of an item's words the document covers with shared n-grams, in [0, 1]; 0 = any "
                   "shared n-gram")
      ->capture_default_str();
  decon->add_flag("--json", da->json, "Print the report as JSON (every match)");
  decon->add_flag("--quiet", da->quiet, "No progress lines");
  decon->add_option("--threads", da->threads, "Worker threads; 0 = OpenMP default")
      ->check(in_range(0, 256))
      ->capture_default_str();
  decon->callback([da, &run] { run = [da] { return run_decontaminate(*da); }; });

  CLI::App* tok = app.add_subcommand("tokenizer", "Train or apply the SentencePiece tokenizer.");
  tok->require_subcommand(1);
  struct TrainArgs {
    std::vector<std::string> inputs;
    std::string out;
    int64_t vocab = 8000, sample_bytes = 64 << 20;
  };
  auto ta = std::make_shared<TrainArgs>();
  CLI::App* tt = tok->add_subcommand("train", "Train a BPE tokenizer (byte fallback, pipeline specials).");
  tt->add_option("--input", ta->inputs, "Files or directories (JSONL, text; .gz/.zst)")->required();
  tt->add_option("--out", ta->out, "Model file to write")->required();
  tt->add_option("--vocab-size", ta->vocab, "Vocabulary size (upper bound)")
      ->check(in_range(1, 1 << 22))
      ->capture_default_str();
  tt->add_option("--sample-bytes", ta->sample_bytes, "Text fed to the trainer")->capture_default_str();
  tt->callback([ta, &run] {
    run = [ta] { return run_tokenizer_train(ta->inputs, ta->out, ta->vocab, ta->sample_bytes); };
  });
  struct EncodeArgs {
    std::string model, text, file;
    bool json = false;
  };
  auto ea = std::make_shared<EncodeArgs>();
  CLI::App* te = tok->add_subcommand("encode", "Print the token ids of a text.");
  te->add_option("--model", ea->model, "Tokenizer model (e.g. DATASET_DIR/tokenizer.model)")->required();
  auto* text_opt = te->add_option("--text", ea->text, "Text to encode");
  auto* file_opt = te->add_option("--file", ea->file, "File to encode (.gz/.zst too)");
  text_opt->excludes(file_opt);
  te->add_flag("--json", ea->json, "Print JSON (ids, hash, specials)");
  te->callback([ea, &run] { run = [ea] { return run_tokenizer_encode(ea->model, ea->text, ea->file, ea->json); }; });
}

}  // namespace mt
