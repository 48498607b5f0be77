// metrics_log.cpp — see metrics_log.h.
#include "rundir/metrics_log.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "core/file_io.h"

namespace mt {

std::string metrics_path(const std::string& run_dir) { return run_dir + "/metrics.jsonl"; }
std::string tensorboard_dir(const std::string& run_dir) { return run_dir + "/tensorboard"; }

namespace {

bool is_step_line(const nlohmann::json& j) {
  return j.is_object() && j.contains("step") && j["step"].is_number_integer();
}

void flatten(const std::string& prefix, const nlohmann::json& j, std::vector<std::pair<std::string, double>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string tag = prefix + it.key();
    const nlohmann::json& v = it.value();
    if (v.is_number())
      out.emplace_back(tag, v.get<double>());
    else if (v.is_object())
      flatten(tag + "/", v, out);
  }
}

ScalarStep scalar_step(const nlohmann::json& line) {
  return {line["step"].get<int64_t>(), line.value("time", 0.0), metric_scalars(line)};
}

}  // namespace

std::vector<std::pair<std::string, double>> metric_scalars(const nlohmann::json& line) {
  std::vector<std::pair<std::string, double>> out;
  nlohmann::json rest = line;
  rest.erase("step");
  rest.erase("time");
  const nlohmann::json load = rest.contains("expert_load") ? rest["expert_load"] : nlohmann::json();
  rest.erase("expert_load");
  flatten("", rest, out);
  if (load.is_array())
    for (size_t l = 0; l < load.size(); ++l) {
      if (!load[l].is_array() || load[l].empty()) continue;
      const std::vector<double> share = load[l].get<std::vector<double>>();
      const double n = double(share.size());
      const std::string layer = "router/layer_" + std::to_string(l) + "/";
      out.emplace_back(layer + "max_load", *std::max_element(share.begin(), share.end()) * n);
      out.emplace_back(layer + "min_load", *std::min_element(share.begin(), share.end()) * n);
    }
  return out;
}

namespace {
// Each step line with its text as written (kept verbatim on resume).
std::vector<std::pair<std::string, nlohmann::json>> read_step_lines(const std::string& run_dir) {
  std::vector<std::pair<std::string, nlohmann::json>> rows;
  std::ifstream in(metrics_path(run_dir));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (is_step_line(j)) rows.emplace_back(std::move(line), std::move(j));
  }
  return rows;
}
}  // namespace

std::vector<nlohmann::json> read_metrics_lines(const std::string& run_dir) {
  std::vector<nlohmann::json> rows;
  for (auto& [text, j] : read_step_lines(run_dir)) rows.push_back(std::move(j));
  return rows;
}

Result<std::vector<nlohmann::json>> load_metrics(const std::string& run_dir) {
  const std::string path = metrics_path(run_dir);
  std::ifstream in(path);
  if (!in) return Status::errorf("{}: cannot open", path);
  std::vector<nlohmann::json> rows;
  int64_t lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!is_step_line(j)) return Status::errorf("{}:{}: not a metrics object with an integer step", path, lineno);
    rows.push_back(std::move(j));
  }
  return rows;
}

nlohmann::json last_metrics_line(const std::string& run_dir) {
  // A line is a few KB (expert loads, per-bucket figures): read a tail that
  // holds whole lines, and fall back to the whole file.
  for (size_t tail_bytes : {size_t(1) << 16, size_t(0)}) {
    std::ifstream in(metrics_path(run_dir), std::ios::binary | std::ios::ate);
    if (!in) return nullptr;
    const std::streamoff size = in.tellg();
    const std::streamoff from = tail_bytes && size > std::streamoff(tail_bytes) ? size - std::streamoff(tail_bytes) : 0;
    in.seekg(from);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t end = text.size();
    while (end > 0) {
      const size_t nl = text.rfind('\n', end - 1);
      const size_t begin = nl == std::string::npos ? 0 : nl + 1;
      if (begin == 0 && from > 0) break;  // may be cut: read more
      auto j = nlohmann::json::parse(text.substr(begin, end - begin), nullptr, /*allow_exceptions=*/false);
      if (is_step_line(j)) return j;
      if (begin == 0) return nullptr;
      end = nl;
    }
    if (from == 0) return nullptr;
  }
  return nullptr;
}

int64_t latest_logged_step(const std::string& run_dir) {
  const nlohmann::json last = last_metrics_line(run_dir);
  return last.is_object() ? last["step"].get<int64_t>() : 0;
}

Status copy_metrics_through(const std::string& from_run, const std::string& to_run, int64_t step, FileSystem& fs) {
  std::string kept;
  for (const auto& [text, j] : read_step_lines(from_run))
    if (j["step"].get<int64_t>() <= step) kept += text + "\n";
  return write_file_atomic(metrics_path(to_run), kept, fs);
}

Result<std::unique_ptr<MetricsLog>> MetricsLog::open(const std::string& run_dir, int64_t keep_through, TensorBoard tb,
                                                     FileSystem& fs) {
  std::string kept;
  std::vector<ScalarStep> history;
  for (const auto& [text, j] : read_step_lines(run_dir)) {
    if (j["step"].get<int64_t>() > keep_through) continue;
    kept += text + "\n";
    if (tb == TensorBoard::kOn) history.push_back(scalar_step(j));
  }
  std::unique_ptr<TensorBoardWriter> writer;
  if (tb == TensorBoard::kOn) {
    auto w = TensorBoardWriter::open(tensorboard_dir(run_dir), history, fs);
    if (!w) return w.status();
    writer = std::move(w.value());
  }
  auto log = AppendLog::open(metrics_path(run_dir), kept, fs);
  if (!log) return log.status();
  return std::unique_ptr<MetricsLog>(new MetricsLog(std::move(log.value()), std::move(writer)));
}

Status MetricsLog::append(const nlohmann::json& line) {
  MT_RETURN_IF_ERROR(log_->append(line.dump() + "\n"));
  if (tb_) MT_RETURN_IF_ERROR(tb_->add(scalar_step(line)));
  return Status::ok();
}

}  // namespace mt
