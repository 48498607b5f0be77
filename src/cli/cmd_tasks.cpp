// cmd_tasks.cpp — `moetrain tasks make passkey ...`: synthetic task items made
// from corpus text (train/passkey.h), written as a task file for `moetrain
// eval --tasks` (train/gen_tasks.h's JSONL) and/or as training documents,
// one text file each, for `moetrain data build` to take as an input (one
// bucket of a mixture). docs/long-context.md has the recipe.
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

namespace mt {
namespace {

namespace fs = std::filesystem;

struct PasskeyArgs {
  PasskeyOptions opt;
  std::string split, tokenizer, out, documents;
  std::vector<std::string> filler;
  int64_t filler_mb = 64;
};

// Every item as its own text file in DIR, written into DIR.tmp-PID and
// renamed into place: DIR is complete or absent. File names are the item
// ids, so the byte order in which `data build` lists them is the item order.
Status write_documents(const std::string& dir, const std::vector<GenItem>& items) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    return Status::errorf("--documents {}: exists and is not empty (documents of another make would mix in)", dir);
  const std::string tmp = dir + ".tmp-" + std::to_string(getpid());
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec)) return Status::errorf("{}: cannot create: {}", tmp, ec.message());
  for (const GenItem& it : items) {
    const std::string path = tmp + "/" + it.id + ".txt";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    const std::string doc = passkey_document(it);
    f.write(doc.data(), std::streamsize(doc.size()));
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

ExitCode run_passkey(PasskeyArgs a) {
  const char* cmd = "tasks make passkey";
  if (a.out.empty() && a.documents.empty())
    return fail(cmd, Status::error("give --out FILE (a task file), --documents DIR (training documents), or both"),
                ExitCode::kUsage);
  a.opt.split = a.split == "train" ? TaskSplit::kTrain : TaskSplit::kHeldOut;
  if (a.split == "held-out" && !a.documents.empty())
    fmt::print(stderr,
               "# warning: --documents with --split held-out: training on held-out keys leaks them into "
               "every held-out evaluation\n");
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
    if (Status s = write_documents(a.documents, items.value()); !s.is_ok()) return fail(cmd, s, ExitCode::kUsage);
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
}

}  // namespace mt
