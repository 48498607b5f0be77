// results.cpp — see results.h. Both parsers fill a RawRun (fields as given,
// each with its type checked) and one function, finish_run, validates values
// and derives the missing ones, so the two formats cannot drift apart.
#include "ladder/results.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/file_io.h"
#include "core/strings.h"

namespace mt::ladder {
namespace {

using nlohmann::json;

// A run's fields exactly as the file gave them (numbers not yet validated).
struct RawRun {
  std::optional<std::string> name, budget;
  std::optional<double> params, active_params, total_params, n_experts, tokens, flops, loss;
  std::map<std::string, double> accuracy;
};

const char* const kJsonKeys[] = {"name",  "params", "active_params", "total_params", "n_experts", "tokens",
                                 "flops", "loss",   "accuracy",      "budget",       "meta"};

std::string did_you_mean(const std::string& key) {
  const char* best = nullptr;
  size_t best_d = 3;  // suggest only near misses
  for (const char* k : kJsonKeys) {
    const size_t d = edit_distance(key, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best ? fmt::format(" (did you mean '{}'?)", best) : std::string();
}

constexpr double kMinLoss = 1e-3, kMaxLoss = 100.0;

// A present number must be finite and > 0; n_experts also a whole number.
Status check_positive(const std::optional<double>& v, const char* field, const std::string& where) {
  if (!v) return Status::ok();
  if (!std::isfinite(*v) || !(*v > 0))
    return Status::errorf("{}: field '{}': expected a positive number, got {}", where, field, *v);
  return Status::ok();
}

Result<Run> finish_run(const RawRun& r, const std::string& where, int64_t line) {
  MT_RETURN_IF_ERROR(check_positive(r.params, "params", where));
  MT_RETURN_IF_ERROR(check_positive(r.active_params, "active_params", where));
  MT_RETURN_IF_ERROR(check_positive(r.total_params, "total_params", where));
  MT_RETURN_IF_ERROR(check_positive(r.n_experts, "n_experts", where));
  MT_RETURN_IF_ERROR(check_positive(r.tokens, "tokens", where));
  MT_RETURN_IF_ERROR(check_positive(r.flops, "flops", where));
  MT_RETURN_IF_ERROR(check_positive(r.loss, "loss", where));
  if (r.n_experts && *r.n_experts != std::floor(*r.n_experts))
    return Status::errorf("{}: field 'n_experts': expected a whole number, got {}", where, *r.n_experts);
  if (!r.loss) return Status::errorf("{}: missing field 'loss'", where);
  // A held-out cross-entropy in nats per token: far outside this range the
  // fit's logarithms overflow (1e308 aborted the bootstrap; 1e-300 fitted B =
  // inf), and no real run logs it.
  if (*r.loss < kMinLoss || *r.loss > kMaxLoss)
    return Status::errorf("{}: field 'loss': {} is not a held-out cross-entropy in nats per token (expected {} to {})",
                          where, *r.loss, kMinLoss, kMaxLoss);
  if (!r.params && !r.active_params) return Status::errorf("{}: missing field 'params' (or 'active_params')", where);
  if (!r.tokens && !r.flops) return Status::errorf("{}: missing field 'tokens' (or 'flops')", where);

  Run run;
  run.name = r.name ? *r.name : fmt::format("line {}", line);
  run.where = where;
  run.active_params = r.active_params ? *r.active_params : *r.params;
  run.total_params = r.total_params ? *r.total_params : r.params ? *r.params : run.active_params;
  if (run.total_params < run.active_params)
    return Status::errorf("{}: field '{}': total parameters {} are fewer than active parameters {}", where,
                          r.total_params ? "total_params" : "params", run.total_params, run.active_params);
  run.n_experts = r.n_experts.value_or(0);
  // Chinchilla's convention C = 6 N D, with N the parameters each token uses.
  run.tokens = r.tokens ? *r.tokens : *r.flops / (6.0 * run.active_params);
  run.flops = r.flops ? *r.flops : 6.0 * run.active_params * run.tokens;
  run.loss = *r.loss;
  run.budget = r.budget.value_or("");
  for (const auto& [task, acc] : r.accuracy) {
    if (!std::isfinite(acc) || acc < 0 || acc > 1)
      return Status::errorf("{}: field 'accuracy.{}': expected a number in [0, 1], got {}", where, task, acc);
    run.accuracy[task] = acc;
  }
  return run;
}

Status json_number(const json& obj, const char* key, std::optional<double>& out, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::ok();
  if (!it->is_number()) return Status::errorf("{}: field '{}': expected a number, got {}", where, key, it->dump());
  out = it->get<double>();
  return Status::ok();
}

Result<RawRun> raw_from_json(const json& obj, const std::string& where) {
  if (!obj.is_object()) return Status::errorf("{}: expected a JSON object, got {}", where, obj.type_name());
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();
    if (std::find_if(std::begin(kJsonKeys), std::end(kJsonKeys), [&](const char* k) { return key == k; }) ==
        std::end(kJsonKeys))
      return Status::errorf("{}: unknown field '{}'{}", where, key, did_you_mean(key));
  }
  RawRun r;
  if (auto it = obj.find("name"); it != obj.end()) {
    if (!it->is_string()) return Status::errorf("{}: field 'name': expected a string, got {}", where, it->dump());
    r.name = it->get<std::string>();
  }
  // A budget label may be written as text ("c1") or as the budget itself (1e19).
  if (auto it = obj.find("budget"); it != obj.end()) {
    if (it->is_string())
      r.budget = it->get<std::string>();
    else if (it->is_number())
      r.budget = it->dump();
    else
      return Status::errorf("{}: field 'budget': expected a string or a number, got {}", where, it->dump());
  }
  MT_RETURN_IF_ERROR(json_number(obj, "params", r.params, where));
  MT_RETURN_IF_ERROR(json_number(obj, "active_params", r.active_params, where));
  MT_RETURN_IF_ERROR(json_number(obj, "total_params", r.total_params, where));
  MT_RETURN_IF_ERROR(json_number(obj, "n_experts", r.n_experts, where));
  MT_RETURN_IF_ERROR(json_number(obj, "tokens", r.tokens, where));
  MT_RETURN_IF_ERROR(json_number(obj, "flops", r.flops, where));
  MT_RETURN_IF_ERROR(json_number(obj, "loss", r.loss, where));
  if (auto it = obj.find("accuracy"); it != obj.end()) {
    if (!it->is_object())
      return Status::errorf("{}: field 'accuracy': expected an object of task -> accuracy, got {}", where, it->dump());
    for (const auto& acc : it->items()) {
      if (!acc.value().is_number())
        return Status::errorf("{}: field 'accuracy.{}': expected a number, got {}", where, acc.key(),
                              acc.value().dump());
      r.accuracy[acc.key()] = acc.value().get<double>();
    }
  }
  return r;
}

// Splits `text` into lines (LF or CRLF); line numbers are 1-based indices.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

bool is_blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// One CSV record (RFC 4180 quoting, without newlines inside quotes).
Result<std::vector<std::string>> split_csv(const std::string& line, const std::string& where) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
        cells.back() += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        cells.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  if (quoted) return Status::errorf("{}: unterminated quoted CSV field", where);
  for (std::string& c : cells) c = trim(c);
  return cells;
}

// A CSV column: which RawRun field it fills. Other columns are ignored, since
// tables exported from elsewhere carry plotting columns (x, y, color, ...).
struct CsvColumn {
  const char* header;
  const char* field;  // name used in messages
  std::optional<double> RawRun::*number;
};
const CsvColumn kCsvNumbers[] = {
    {"params", "params", &RawRun::params},
    {"Model Size", "params", &RawRun::params},  // Epoch AI's extraction of Hoffmann et al. (2022), Figure 4
    {"active_params", "active_params", &RawRun::active_params},
    {"total_params", "total_params", &RawRun::total_params},
    {"n_experts", "n_experts", &RawRun::n_experts},
    {"tokens", "tokens", &RawRun::tokens},
    {"flops", "flops", &RawRun::flops},
    {"Training FLOP", "flops", &RawRun::flops},
    {"loss", "loss", &RawRun::loss},
};

Result<double> parse_cell_number(const std::string& cell, const std::string& column, const std::string& where) {
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  if (end == cell.c_str() || *end != '\0')
    return Status::errorf("{}: field '{}': expected a number, got '{}'", where, column, cell);
  return v;
}

}  // namespace

Result<std::vector<Run>> parse_results_jsonl(const std::string& text, const std::string& source) {
  std::vector<Run> runs;
  const std::vector<std::string> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (is_blank(lines[i])) continue;
    const int64_t line_no = int64_t(i) + 1;
    const std::string where = fmt::format("{}:{}", source, line_no);
    json obj;
    try {
      obj = json::parse(lines[i]);
    } catch (const json::parse_error& e) {
      std::string msg = e.what();
      if (size_t p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
      return Status::errorf("{}: not a JSON object: {}", where, msg);
    }
    auto raw = raw_from_json(obj, where);
    if (!raw) return raw.status();
    auto run = finish_run(*raw, where, line_no);
    if (!run) return run.status();
    runs.push_back(std::move(*run));
  }
  if (runs.empty()) return Status::errorf("{}: no runs (expected one JSON object per line)", source);
  return runs;
}

Result<std::vector<Run>> parse_results_csv(const std::string& text, const std::string& source) {
  const std::vector<std::string> lines = split_lines(text);
  size_t header_at = 0;
  while (header_at < lines.size() && is_blank(lines[header_at])) ++header_at;
  if (header_at == lines.size()) return Status::errorf("{}: empty CSV file (expected a header row)", source);
  auto header = split_csv(lines[header_at], fmt::format("{}:{}", source, header_at + 1));
  if (!header) return header.status();

  struct Bound {
    size_t col = 0;
    const CsvColumn* number = nullptr;  // else: name, budget or accuracy.TASK
    std::string text_field, task;
  };
  std::vector<Bound> bound;
  for (size_t c = 0; c < header->size(); ++c) {
    const std::string& h = (*header)[c];
    Bound b;
    b.col = c;
    for (const CsvColumn& col : kCsvNumbers)
      if (h == col.header) b.number = &col;
    if (b.number)
      bound.push_back(b);
    else if (h == "name" || h == "budget")
      b.text_field = h, bound.push_back(b);
    else if (h.rfind("accuracy.", 0) == 0 && h.size() > 9)
      b.task = h.substr(9), bound.push_back(b);
  }

  std::vector<Run> runs;
  for (size_t i = header_at + 1; i < lines.size(); ++i) {
    if (is_blank(lines[i])) continue;
    const int64_t line_no = int64_t(i) + 1;
    const std::string where = fmt::format("{}:{}", source, line_no);
    auto cells = split_csv(lines[i], where);
    if (!cells) return cells.status();
    if (cells->size() != header->size())
      return Status::errorf("{}: {} cells, but the header has {} columns", where, cells->size(), header->size());
    RawRun r;
    for (const Bound& b : bound) {
      const std::string& cell = (*cells)[b.col];
      if (cell.empty()) continue;  // an empty cell is an absent field
      if (b.number) {
        auto v = parse_cell_number(cell, b.number->field, where);
        if (!v) return v.status();
        if (r.*(b.number->number))
          return Status::errorf("{}: field '{}' is given by two columns", where, b.number->field);
        r.*(b.number->number) = *v;
      } else if (!b.task.empty()) {
        auto v = parse_cell_number(cell, "accuracy." + b.task, where);
        if (!v) return v.status();
        r.accuracy[b.task] = *v;
      } else if (b.text_field == "name") {
        r.name = cell;
      } else {
        r.budget = cell;
      }
    }
    auto run = finish_run(r, where, line_no);
    if (!run) return run.status();
    runs.push_back(std::move(*run));
  }
  if (runs.empty()) return Status::errorf("{}: no runs after the header row", source);
  return runs;
}

Result<std::vector<Run>> load_results(const std::string& path) {
  auto text = read_file(path, "results file");
  if (!text) return text.status();
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.size() >= 4 && lower.compare(lower.size() - 4, 4, ".csv") == 0) return parse_results_csv(*text, path);
  return parse_results_jsonl(*text, path);
}

}  // namespace mt::ladder
