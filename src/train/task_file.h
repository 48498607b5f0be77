// task_file.h — a task file as `moetrain eval --tasks`, `data decontaminate`
// and the [eval] tables of ladders and mixture searches read it: JSONL whose
// format is told apart per file by its first item, multiple-choice
// ({"context", "choices", "answer": index}, train/eval_tasks.h) or
// generative ({"id", "family", "prompt", "answer": text}, train/gen_tasks.h).
// Every line must then be of that format; a line of the other one is an
// error naming FILE:LINE, as is a first item of neither.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "train/eval_tasks.h"
#include "train/gen_tasks.h"

namespace mt {

enum class TaskFormat { kMultipleChoice, kGenerative };

// Calls `fn(object, line)` for every non-blank line of `path`, in order; a
// line that is not a JSON object is an error naming FILE:LINE, and so is a
// file without any (FILE: no items).
Status for_each_task_line(const std::string& path, const std::string& text,
                          const std::function<Status(const nlohmann::json& item, int64_t line)>& fn);

// What an item looks like: generative with a "prompt", multiple-choice with
// "context" or "choices"; an error (naming both formats' fields) otherwise.
Result<TaskFormat> task_format_of(const nlohmann::json& item);

struct TaskFile {
  std::string path;
  std::string name;  // file stem: "passkey-4k.jsonl" -> "passkey-4k"
  std::string hash;  // xxh64 of the bytes (16 hex digits), as data decontaminate records it
  TaskFormat format = TaskFormat::kMultipleChoice;
  std::vector<McDoc> mc;     // the items of a multiple-choice file
  std::vector<GenItem> gen;  // the items of a generative file
  int64_t items() const { return int64_t(format == TaskFormat::kGenerative ? gen.size() : mc.size()); }
};

// Reads, detects the format from the first item, and reads every item with
// that format's reader (errors name FILE:LINE and the field).
Result<TaskFile> read_task_file(const std::string& path);

}  // namespace mt
