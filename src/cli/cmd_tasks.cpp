// cmd_tasks.cpp — `moetrain tasks make FAMILY ...`: synthetic task items —
// the passkey from corpus text (train/passkey.h), the verifiable families
// of train/task_families.h — written as a task file for `moetrain eval
// --tasks` (train/gen_tasks.h's JSONL) and/or as training documents, text
// files, for `moetrain data build` to take as an input (one bucket of a
// mixture). docs/long-context.md and docs/post-training.md have the recipes.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/file_io.h"
#include "data/filler_sentences.h"
#include "train/passkey.h"
#include "train/task_families.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

struct PasskeyArgs {
  PasskeyOptions opt;
  std::string split, tokenizer, out, documents;
  std::vector<std::string> filler;
  int64_t filler_mb = 64;
};

struct FamilyArgs {
  FamilyOptions opt;
  std::string split, out, documents;
  int64_t per_document = 1;
  double tool_share = 1.0;  // agentic families: documents demonstrating the tool
};

struct Document {
  std::string name, text;
};

// Every document as its own text file in DIR, written into DIR.tmp-PID and
// renamed into place: DIR is complete or absent. File names are item ids,
// so the byte order in which `data build` lists them is the item order.
Status write_documents(const std::string& dir, const std::vector<Document>& docs) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    return Status::errorf("--documents {}: exists and is not empty (documents of another make would mix in)", dir);
  const std::string tmp = dir + ".tmp-" + std::to_string(getpid());
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec)) return Status::errorf("{}: cannot create: {}", tmp, ec.message());
  for (const Document& d : docs) {
    const std::string path = tmp + "/" + d.name + ".txt";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(d.text.data(), std::streamsize(d.text.size()));
    if (!f.good()) {
      fs::remove_all(tmp, ec);
      return Status::errorf("{}: cannot write", path);
    }
  }
  fs::remove(dir, ec);  // an empty directory, if any
  fs::rename(tmp, dir, ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    return Status::errorf("{}: cannot rename {} into place: {}", dir, tmp, ec.message());
  }
  return Status::ok();
}

// At least one output; documents made of held-out items warn (they would leak into every evaluation).
Status check_outputs(const std::string& out, const std::string& documents, const std::string& split,
                     const char* items) {
  if (out.empty() && documents.empty())
    return Status::error("give --out FILE (a task file), --documents DIR (training documents), or both");
  if (split == "held-out" && !documents.empty())
    fmt::print(stderr,
               "# warning: --documents with --split held-out: training on held-out {} leaks them into every "
               "held-out evaluation\n",
               items);
  return Status::ok();
}

ExitCode run_passkey(PasskeyArgs a) {
  const char* cmd = "tasks make passkey";
  if (Status s = check_outputs(a.out, a.documents, a.split, "keys"); !s.is_ok())
    return fail(cmd, s, ExitCode::kUsage);
  a.opt.split = a.split == "train" ? TaskSplit::kTrain : TaskSplit::kHeldOut;
  auto codec = open_codec(a.tokenizer);
  if (!codec) return fail(cmd, Status::errorf("--tokenizer: {}", codec.status().message()), ExitCode::kUsage);
  FillerOptions fo;
  fo.max_bytes = a.filler_mb << 20;
  auto filler = read_filler(a.filler, fo);
  if (!filler) return fail(cmd, Status::errorf("--filler: {}", filler.status().message()), ExitCode::kUsage);
  auto items = make_passkey_items(a.opt, filler.value(), *codec.value());
  if (!items) return fail(cmd, Status::errorf("--{}", items.status().message()), ExitCode::kUsage);
  if (!a.out.empty()) {
    std::string text;
    for (const GenItem& it : items.value()) text += gen_item_line(it) + "\n";
    if (Status s = write_file_atomic(a.out, text); !s.is_ok()) return fail(cmd, s, ExitCode::kFailed);
  }
  if (!a.documents.empty()) {
    std::vector<Document> docs;
    for (const GenItem& it : items.value()) docs.push_back({it.id, passkey_document(it)});
    if (Status s = write_documents(a.documents, docs); !s.is_ok()) return fail(cmd, s, ExitCode::kUsage);
  }
  // How close the lengths and depths came, in the tokenizer's own tokens.
  int64_t shortest = INT64_MAX, longest = 0, worst = 0;
  for (const GenItem& it : items.value()) {
    shortest = std::min(shortest, it.prompt_tokens);
    longest = std::max(longest, it.prompt_tokens);
    worst = std::max(worst, std::abs(it.prompt_tokens - it.tokens));
  }
  std::string lengths, depths;
  for (int64_t t : a.opt.tokens) lengths += (lengths.empty() ? "" : ",") + std::to_string(t);
  for (double d : a.opt.depths) depths += fmt::format("{}{}", depths.empty() ? "" : ",", d);
  fmt::print("{} passkey items, split {}, seed {}: lengths {} tokens, depths {}, {}-digit keys\n", items.value().size(),
             a.split, a.opt.seed, lengths, depths, a.opt.digits);
  fmt::print("prompts of {} to {} tokens ({}; at most {} from the length asked for)\n", shortest, longest,
             codec.value()->source(), worst);
  fmt::print("filler: {} sentences from {} documents ({} bytes){}\n", filler.value().sentences.size(),
             filler.value().documents, filler.value().bytes,
             filler.value().skipped_records > 0
                 ? fmt::format(", {} malformed records skipped", filler.value().skipped_records)
                 : "");
  if (!a.out.empty()) fmt::print("task file: {}\n", a.out);
  if (!a.documents.empty()) fmt::print("documents: {} ({} files)\n", a.documents, items.value().size());
  return ExitCode::kOk;
}

ExitCode run_family(FamilyArgs a) {
  const std::string cmd = "tasks make " + a.opt.family;
  if (Status s = check_outputs(a.out, a.documents, a.split, "problems"); !s.is_ok())
    return fail(cmd, s, ExitCode::kUsage);
  a.opt.split = a.split == "train" ? TaskSplit::kTrain : TaskSplit::kHeldOut;
  auto items = make_family_items(a.opt);
  if (!items) return fail(cmd, Status::errorf("--{}", items.status().message()), ExitCode::kUsage);
  const std::vector<GenItem>& v = items.value();
  if (!a.out.empty()) {
    std::string text;
    for (const GenItem& it : v) text += gen_item_line(it) + "\n";
    if (Status s = write_file_atomic(a.out, text); !s.is_ok()) return fail(cmd, s, ExitCode::kFailed);
  }
  size_t n_docs = 0;
  if (!a.documents.empty()) {
    std::vector<Document> docs;
    for (size_t i = 0; i < v.size(); i += size_t(a.per_document))
      docs.push_back({v[i].id, task_document(v, i, i + size_t(a.per_document), a.tool_share)});
    n_docs = docs.size();
    if (Status s = write_documents(a.documents, docs); !s.is_ok()) return fail(cmd, s, ExitCode::kUsage);
  }
  fmt::print("{} {} items, split {}, seed {}, check {}; e.g. {}{}\n", v.size(), a.opt.family, a.split, a.opt.seed,
             check_name(default_check(a.opt.family)), v.front().prompt, v.front().answer);
  if (!a.out.empty()) fmt::print("task file: {}\n", a.out);
  if (!a.documents.empty())
    fmt::print("documents: {} ({} files, {} items each)\n", a.documents, n_docs, a.per_document);
  return ExitCode::kOk;
}

// The options every verifiable family shares, and its knobs.
void add_family(CLI::App* make, const std::string& family, const std::string& help, CommandAction& run) {
  auto a = std::make_shared<FamilyArgs>();
  a->opt.family = family;
  CLI::App* c = make->add_subcommand(family, help);
  c->add_option("--n", a->opt.n, "Items (distinct problems)")->capture_default_str()->check(in_range(1, 1e8));
  c->add_option("--seed", a->opt.seed, "Seed of the draws (Philox; same arguments, same bytes)")->capture_default_str();
  c->add_option("--split", a->split,
                "Which problems: train (for --documents and RL) or held-out (for evaluation); a problem's split is "
                "fixed by its prompt, so the two never share an item, whatever the seeds and knobs")
      ->required()
      ->check(CLI::IsMember({"train", "held-out"}));
  if (family == "add" || family == "mul" || family == "lineq" || family == "multistep" || family == "calc" ||
      family == "kv")
    c->add_option("--digits", a->opt.digits,
                  family == "lineq"       ? "Digits of x and of the constant"
                  : family == "multistep" ? "Digits of the starting value"
                  : family == "kv"        ? "Digits of the stored values"
                                          : "Digits of each operand")
        ->capture_default_str()
        ->check(in_range(1, 9));
  else
    c->add_option("--length", a->opt.length,
                  family == "strings" ? "Letters of the word"
                  : family == "copy"  ? "Digits to repeat"
                                      : "Letters in the list")
        ->capture_default_str()
        ->check(in_range(1, 256));
  if (family == "multistep")
    c->add_option("--steps", a->opt.steps, "Assignments after the first, each one operation on the one before")
        ->capture_default_str()
        ->check(in_range(1, 12));
  c->add_option("--out", a->out, "Write the items as a task file (JSONL) for `moetrain eval --tasks`");
  c->add_option("--documents", a->documents,
                "Write the items as training documents (prompt + answer + newline each) in this new directory, for "
                "`moetrain data build`");
  c->add_option("--per-document", a->per_document, "Items per training document")
      ->capture_default_str()
      ->check(in_range(1, 1e6));
  if (family == "calc" || family == "kv")
    c->add_option("--tool-share", a->tool_share,
                  "Share of the training documents that demonstrate the tool (its calls, the results, the answer); "
                  "the rest give the answer alone")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
  c->callback([a, &run] { run = [a] { return run_family(*a); }; });
}

}  // namespace

void register_tasks(CLI::App& app, CommandAction& run) {
  CLI::App* tasks = app.add_subcommand("tasks", "Synthetic evaluation tasks and training documents.");
  tasks->require_subcommand(1);
  CLI::App* make = tasks->add_subcommand("make", "Make the items of a task family from corpus text.");
  make->require_subcommand(1);

  auto a = std::make_shared<PasskeyArgs>();
  CLI::App* pk = make->add_subcommand(
      "passkey",
      "Passkey retrieval: a key hidden at a depth in corpus filler, asked for at the end (a task file and/or "
      "training documents).");
  pk->add_option("--n", a->opt.n, "Items")->capture_default_str()->check(in_range(1, 1e8));
  pk->add_option("--seed", a->opt.seed, "Seed of the keys and the filler draws (Philox; same arguments, same bytes)")
      ->capture_default_str();
  pk->add_option("--split", a->split,
                 "Which keys: train (for --documents) or held-out (for evaluation); the two never share a key, "
                 "whatever the seeds")
      ->required()
      ->check(CLI::IsMember({"train", "held-out"}));
  pk->add_option("--tokens", a->opt.tokens,
                 "Prompt lengths in tokens of --tokenizer, comma-separated (items cycle through them, a length per "
                 "round of depths)")
      ->required()
      ->delimiter(',')
      ->check(in_range(1, 1e9));
  pk->add_option("--depths", a->opt.depths,
                 "Fractions of the filler before the needle, comma-separated (items cycle through them)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(in_range(0, 1));
  pk->add_option("--digits", a->opt.digits, "Decimal digits of a key")->capture_default_str()->check(in_range(2, 9));
  pk->add_option("--repeat", a->opt.repeat,
                 "Training documents for a small model: each item's filler cycles through this many sentences drawn "
                 "for it (0 = none; the original task repeats five), so most tokens can be copied from context")
      ->capture_default_str()
      ->check(in_range(0, 1000));
  pk->add_option("--filler", a->filler,
                 "Corpus text the filler sentences come from: files or directories as `data build` reads them "
                 "(JSONL, text, .gz, .zst; repeatable)")
      ->required();
  pk->add_option("--filler-mb", a->filler_mb, "Read at most this many MiB of filler documents")
      ->capture_default_str()
      ->check(in_range(1, 1 << 20));
  pk->add_option("--tokenizer", a->tokenizer,
                 "The model's tokenizer, which lengths are counted in: a SentencePiece model, a dataset directory, "
                 "a checkpoint or run directory, or \"bytes\"")
      ->required();
  pk->add_option("--out", a->out, "Write the items as a task file (JSONL) for `moetrain eval --tasks`");
  pk->add_option("--documents", a->documents,
                 "Write each item as a training document (prompt + answer + newline) in this new directory, for "
                 "`moetrain data build`");
  pk->callback([a, &run] { run = [a] { return run_passkey(*a); }; });

  add_family(make, "add", "Addition of two integers (integer check).", run);
  add_family(make, "mul", "Multiplication of two integers (integer check).", run);
  add_family(make, "lineq", "A linear equation a*x +/- b = c solved for x (integer check).", run);
  add_family(make, "multistep", "A chain of assignments, each one operation on the one before (integer check).", run);
  add_family(make, "sort", "Sort a list of letters (list check).", run);
  add_family(make, "reverse", "Reverse a list of letters (list check).", run);
  add_family(make, "strings", "Transform a word: upper, shift K (Caesar), double (text check).", run);
  add_family(make, "copy", "Repeat a string of digits (text check).", run);
  add_family(make, "calc",
             "Agentic: a product of two integers, with a calculator tool (<tool>347*829</tool>; integer check).", run);
  add_family(make, "kv",
             "Agentic: add to a key of a store seen only through get/set tools, then say it (integer check and "
             "the store's final state).",
             run);
}

}  // namespace mt
