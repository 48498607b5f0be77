// data_decontaminate.cpp — `moetrain data decontaminate`: reads the task
// files the way `eval` reads them (train/task_file.h), turns each item into
// its word sequences, scans the dataset and prints (and writes) the report.
#include "cli/data_decontaminate.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/threads.h"
#include "data/dataset.h"
#include "data/decontaminate_dataset.h"
#include "train/task_file.h"

namespace mt {
namespace {

// A task file as text items: a multiple-choice item is its context followed
// by each of its choices (lm-eval's literal continuation), so the n-grams
// spanning the question and its answer are indexed too; a generative item
// is its prompt followed by its answer.
Result<EvalTask> read_task(const std::string& path) {
  auto file = read_task_file(path);
  if (!file) return file.status();
  EvalTask t;
  t.name = file.value().name;
  t.path = path;
  t.hash = file.value().hash;
  for (const McDoc& d : file.value().mc) {
    EvalItem item;
    item.line = d.line;
    for (const std::string& c : d.choices) item.sequences.push_back(d.context + c);
    t.items.push_back(std::move(item));
  }
  for (const GenItem& g : file.value().gen) {
    EvalItem item;
    item.line = g.line;
    item.sequences.push_back(g.prompt + g.answer);
    t.items.push_back(std::move(item));
  }
  return t;
}

void print_report(const DecontamReport& r, const std::string& out, bool dry_run) {
  int64_t items = 0;
  for (const DecontamTaskStats& t : r.tasks) items += t.items;
  // Timings go to stderr with the progress lines: this report is the same on every run.
  fmt::print(
      "{} {}: {}-grams of normalised words, threshold {} (covered fraction of an item); {} items of {} tasks, "
      "{} distinct n-grams\n",
      dry_run ? "decontamination (dry run) of" : "decontaminated", r.dataset, r.options.n, r.options.threshold, items,
      r.tasks.size(), r.ngrams);
  fmt::print("{:<16} {:>7} {:>9} {:>13} {:>17}  {}\n", "task", "items", "too short", "items matched",
             "documents matched", "file (xxh64)");
  for (const DecontamTaskStats& t : r.tasks)
    fmt::print("{:<16} {:>7} {:>9} {:>13} {:>17}  {} ({})\n", t.name, t.items, t.too_short, t.items_matched,
               t.documents_matched, t.path, t.hash);
  fmt::print("{:<24} {:>10} {:>8} {:>14} {:>10} {:>8} {:>14}\n", "bucket", "train docs", "removed", "tokens removed",
             "eval docs", "removed", "tokens removed");
  std::array<int64_t, 2> docs{}, removed{}, tokens{};
  for (const DecontamBucketStats& b : r.buckets) {
    fmt::print("{:<24} {:>10} {:>8} {:>14} {:>10} {:>8} {:>14}\n", b.name, b.documents[0], b.removed_documents[0],
               b.removed_tokens[0], b.documents[1], b.removed_documents[1], b.removed_tokens[1]);
    for (size_t s = 0; s < 2; ++s) {
      docs[s] += b.documents[s];
      removed[s] += b.removed_documents[s];
      tokens[s] += b.removed_tokens[s];
    }
  }
  fmt::print("{:<24} {:>10} {:>8} {:>14} {:>10} {:>8} {:>14}\n", "total", docs[0], removed[0], tokens[0], docs[1],
             removed[1], tokens[1]);
  constexpr size_t kShown = 40;  // the full list is in decontamination.json (or --json)
  if (!r.matches.empty()) fmt::print("matches (document id, bucket, split, coverage, task file:item line):\n");
  for (size_t i = 0; i < r.matches.size() && i < kShown; ++i) {
    const DecontamMatch& m = r.matches[i];
    fmt::print("  {:>8} {:<24} {:<5} {:.3f} {}:{}\n", m.doc_id, r.buckets[size_t(m.bucket)].name,
               m.split ? "eval" : "train", m.coverage, r.tasks[size_t(m.task)].path, m.line);
  }
  if (r.matches.size() > kShown)
    fmt::print("  ... {} more ({})\n", r.matches.size() - kShown,
               dry_run ? "--json lists them all" : out + "/decontamination.json lists them all");
}

}  // namespace

ExitCode run_decontaminate(const DecontaminateArgs& a) {
  const DecontamOptions opt{a.n, a.threshold};
  if (Status s = check_decontam_options(opt); !s) return fail("data decontaminate", s, ExitCode::kUsage);
  if (a.out.empty() && !a.dry_run)
    return fail("data decontaminate", Status::error("give --out NEW_DATASET, or --dry-run to report only"),
                ExitCode::kUsage);
  set_num_threads(int(a.threads));
  std::vector<EvalTask> tasks;
  for (const std::string& path : a.tasks) {
    auto t = read_task(path);
    if (!t) return fail("data decontaminate", t.status(), ExitCode::kUsage);
    tasks.push_back(std::move(t.value()));
  }
  auto ds = Dataset::open(a.dataset);
  if (!ds) return fail("data decontaminate", ds.status());
  auto say = [&](const std::string& m) {
    if (!a.quiet) fmt::print(stderr, "# data decontaminate: {}\n", m);
  };
  auto rep = scan_for_contamination(*ds.value(), tasks, opt, say);
  if (!rep) return fail("data decontaminate", rep.status());
  if (!a.dry_run) {
    Status s = write_decontaminated(*ds.value(), rep.value(), a.out, default_file_system(), say);
    if (!s) return fail("data decontaminate", s);
  }
  if (a.json) {
    fmt::print("{}\n", report_json(rep.value()).dump(1));
  } else {
    print_report(rep.value(), a.out, a.dry_run);
    if (!a.dry_run) fmt::print("wrote {} (report: {}/decontamination.json)\n", a.out, a.out);
  }
  return ExitCode::kOk;
}

}  // namespace mt
