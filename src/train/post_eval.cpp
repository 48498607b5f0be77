// post_eval.cpp — see post_eval.h.
#include "train/post_eval.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "core/config_schema.h"
#include "core/file_io.h"
#include "data/ingest.h"
#include "train/task_file.h"
#include "train/text_set.h"

namespace mt {
namespace fs = std::filesystem;
using json = nlohmann::json;

void declare_keys(ConfigSchema& s, EvalTargets& e, bool with_metric) {
  s.add("eval.tasks", &e.tasks,
        "JSONL task files, multiple-choice or generative (relative to this file), every run is scored on after "
        "training, by `moetrain eval`; a task's name is its file name without the extension")
      .or_one_string()
      .note("[] = no tasks");
  s.add("eval.text_sets", &e.text_sets,
        "text sets every run is scored on after training (relative to this file): JSONL ({\"text\"} per line) or "
        "plain-text files, not buckets of the training data, whose held-out loss and bits per byte `moetrain eval "
        "--text-set` reports; a set's name is its file name up to the first dot")
      .or_one_string()
      .note("[] = no sets");
  if (with_metric)
    s.add_choice("eval.metric", &e.metric, {"acc", "acc_norm"},
                 "the accuracy recorded per task (results' accuracy.TASK, which `ladder fit` fits): acc, or the "
                 "length-normalised acc_norm");
}

Status check_eval_targets(EvalTargets& e, const std::string& config_path, const ConfigOrigins& o) {
  e.names.clear();
  e.generative.clear();
  e.text_set_names.clear();
  std::set<std::string> seen;
  for (std::string& path : e.text_sets) {
    if (!fs::path(path).is_absolute()) path = (fs::path(config_path).parent_path() / path).lexically_normal().string();
    if (!fs::is_regular_file(path)) return o.error("eval.text_sets", fmt::format("{}: no such file", path));
    // Read now (the tokens need the run's tokenizer: its eval does that), so a
    // bad record stops the search or ladder before anything trains.
    InputSpec in;
    in.path = path;
    std::vector<Document> docs;
    IngestStats stats;
    if (Status s = ingest({in}, CodeOptions{}, docs, stats); !s) return o.error("eval.text_sets", s.message());
    if (docs.empty()) return o.error("eval.text_sets", fmt::format("{}: no documents", path));
    const std::string name = text_set_name(path);
    if (!seen.insert(name).second)
      return o.error("eval.text_sets",
                     fmt::format("two text sets are named \"{}\" (a set is named by its file name)", name));
    e.text_set_names.push_back(name);
  }
  seen.clear();
  for (std::string& path : e.tasks) {
    if (!fs::path(path).is_absolute()) path = (fs::path(config_path).parent_path() / path).lexically_normal().string();
    auto file = read_task_file(path);
    if (!file) return o.error("eval.tasks", file.status().message());
    const std::string& name = file.value().name;
    if (!seen.insert(name).second)
      return o.error("eval.tasks", fmt::format("two task files are named \"{}\" (a task is named by its file name)", name));
    e.names.push_back(name);
    if (file.value().format != TaskFormat::kGenerative) continue;
    e.generative.push_back(name);
    if (e.metric == "acc_norm")
      return o.error("eval.metric",
                     fmt::format("\"acc_norm\" for {}, a generative task: exact match has acc only", path));
  }
  return Status::ok();
}

QueuedRun queued_eval(const EvalTargets& e, const std::string& name, const std::string& run_dir,
                      const std::string& log_path, int64_t step, size_t after) {
  QueuedRun q;
  q.name = name + " eval";
  // One thread: the held-out forward's last bits depend on the thread count
  // (measured: 1e-9 relative between 1 and 2 threads), and a figure must not
  // depend on how many runs the queue runs at once.
  q.args = {"eval", "--ckpt", run_dir, "--out", run_dir + "/eval.json", "--threads", "1"};
  for (const std::string& t : e.tasks) q.args.insert(q.args.end(), {"--tasks", t});
  for (const std::string& t : e.text_sets) q.args.insert(q.args.end(), {"--text-set", t});
  q.run_dir = run_dir;
  q.log_path = log_path;
  q.first_step = q.last_step = step;
  q.after = {after};
  return q;
}

Result<json> read_eval(const std::string& run_dir, int64_t step, const EvalTargets& e) {
  const std::string path = run_dir + "/eval.json";
  auto text = read_file(path, "eval results");
  if (!text) return text.status();
  json j = json::parse(text.value(), nullptr, false);
  if (!j.is_object() || j.value("step", int64_t(-1)) != step)
    return Status::errorf("{}: not the evaluation of the final checkpoint (step {})", path, step);
  for (const std::string& t : e.names)
    if (task_result(j, t).is_null()) return Status::errorf("{}: no result for task {}", path, t);
  const json sets = text_set_bits_per_byte(j);
  for (const std::string& t : e.text_set_names)
    if (!sets.contains(t)) return Status::errorf("{}: no result for text set {}", path, t);
  return j;
}

json task_result(const json& eval, const std::string& task) {
  if (eval.contains("tasks"))
    for (const json& t : eval["tasks"])
      if (t.value("task", "") == task) {
        json r = t;
        r.erase("logprobs");
        r.erase("items");
        r.erase("task");
        return r;
      }
  return json();
}

json bucket_bits_per_byte(const json& eval) {
  json out = json::object();
  if (eval.contains("held_out") && eval["held_out"].contains("buckets"))
    for (const json& b : eval["held_out"]["buckets"]) out[b["bucket"].get<std::string>()] = b["bits_per_byte"];
  return out;
}

json text_set_bits_per_byte(const json& eval) {
  json out = json::object();
  if (eval.contains("text_sets"))
    for (const json& s : eval["text_sets"]) out[s["set"].get<std::string>()] = s["bits_per_byte"];
  return out;
}

}  // namespace mt
