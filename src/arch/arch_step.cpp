// arch_step.cpp — see arch_step.h.
#include "arch/arch_step.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "core/file_io.h"
#include "core/subprocess.h"

namespace fs = std::filesystem;

namespace mt {

Result<nlohmann::json> cached_step(const std::string& path, const std::function<Result<nlohmann::json>()>& compute) {
  if (fs::exists(path)) {
    auto text = read_file(path, "comparison step");
    if (!text) return text.status();
    nlohmann::json j = nlohmann::json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      return Status::errorf("{}: not a JSON object (delete it to compute the step again)", path);
    return j;
  }
  auto j = compute();
  if (!j) return j.status();
  MT_RETURN_IF_ERROR(write_file_atomic(path, j->dump(1) + "\n"));
  return j;
}

Result<ChildOutput> run_child(const std::vector<std::string>& argv,
                              const std::vector<std::pair<std::string, std::string>>& env, const std::string& out_path,
                              const std::string& log_path) {
  std::error_code ec;
  fs::remove(out_path, ec);
  fs::remove(log_path, ec);
  ChildSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.log_path = log_path;
  spec.stdout_path = out_path;
  spec.own_group = true;
  auto child = Child::spawn(spec);
  if (!child) return Status::errorf("{}: cannot start: {}", argv.front(), child.status().message());
  ChildOutput r;
  while (!child->poll(&r.exit_code)) usleep(50 * 1000);
  auto out = read_file(out_path, "child output");
  r.out = out ? out.value() : "";
  r.log_path = log_path;
  return r;
}

nlohmann::json last_json_line(const std::string& text) {
  nlohmann::json found;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (end > at && text[at] == '{') {
      nlohmann::json j = nlohmann::json::parse(text.substr(at, end - at), nullptr, false);
      if (!j.is_discarded() && j.is_object()) found = std::move(j);
    }
    at = end + 1;
  }
  return found;
}

}  // namespace mt
