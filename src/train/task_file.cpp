// task_file.cpp — JSONL lines of a task file, and telling its format apart.
#include "train/task_file.h"

#include <filesystem>

#include "core/file_io.h"
#include "core/hash.h"

namespace mt {

namespace {
// The next non-blank line at or after `begin` and its 1-based number; false
// past the end.
bool next_line(const std::string& text, size_t& begin, int64_t& line_no, std::string_view& line) {
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    line = std::string_view(text.data() + begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) return true;
  }
  return false;
}
}  // namespace

Status for_each_task_line(const std::string& path, const std::string& text,
                          const std::function<Status(const nlohmann::json&, int64_t)>& fn) {
  size_t begin = 0;
  int64_t line_no = 0, items = 0;
  std::string_view line;
  while (next_line(text, begin, line_no, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) return Status::errorf("{}:{}: not a JSON object", path, line_no);
    MT_RETURN_IF_ERROR(fn(j, line_no));
    ++items;
  }
  if (items == 0) return Status::errorf("{}: no items", path);
  return Status::ok();
}

Result<TaskFormat> task_format_of(const nlohmann::json& item) {
  if (item.contains("prompt")) return TaskFormat::kGenerative;
  if (item.contains("context") || item.contains("choices")) return TaskFormat::kMultipleChoice;
  return Status::error(
      "neither a multiple-choice item (\"context\", \"choices\", \"answer\": index) nor a generative one (\"id\", "
      "\"family\", \"prompt\", \"answer\": text)");
}

Result<TaskFile> read_task_file(const std::string& path) {
  auto text = read_file(path, "task file");
  if (!text) return text.status();
  TaskFile f;
  f.path = path;
  f.name = mc_task_name(path);
  f.hash = hex64(xxh64(text.value().data(), text.value().size()));
  // The first item decides; the format's reader then holds every line to it.
  size_t begin = 0;
  int64_t line_no = 0;
  std::string_view line;
  if (!next_line(text.value(), begin, line_no, line)) return Status::errorf("{}: no items", path);
  const nlohmann::json first = nlohmann::json::parse(line, nullptr, false);
  if (!first.is_object()) return Status::errorf("{}:{}: not a JSON object", path, line_no);
  auto format = task_format_of(first);
  if (!format) return Status::errorf("{}:{}: {}", path, line_no, format.status().message());
  f.format = format.value();
  if (f.format == TaskFormat::kGenerative) {
    auto items = parse_gen_tasks(path, text.value());
    if (!items) return items.status();
    f.gen = std::move(items.value());
  } else {
    auto docs = parse_mc_tasks(path, text.value());
    if (!docs) return docs.status();
    f.mc = std::move(docs.value());
  }
  return f;
}

}  // namespace mt
