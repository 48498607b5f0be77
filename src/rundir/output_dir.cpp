// output_dir.cpp — see output_dir.h.
#include "rundir/output_dir.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/file_io.h"

namespace mt {
namespace fs = std::filesystem;

std::map<std::string, std::string> flatten_toml(const std::string& text, const std::string& prefix) {
  std::map<std::string, std::string> out;
  std::map<std::string, int> table_count;  // [[name]] -> tables seen
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("[[", 0) == 0) {
      const std::string name = line.substr(2, line.find("]]") - 2);
      section = fmt::format("{}.{}", name, table_count[name]++);
      continue;
    }
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    out[prefix + (section.empty() ? "" : section + ".") + line.substr(0, eq)] = line.substr(eq + 3);
  }
  return out;
}

std::string describe_differences(const std::map<std::string, std::string>& was,
                                 const std::map<std::string, std::string>& now) {
  std::string diff;
  for (const auto& [key, value] : was) {
    auto it = now.find(key);
    const std::string other = it == now.end() ? "(absent)" : it->second;
    if (other != value) diff += "  " + key + " = " + value + " -> " + other + "\n";
  }
  for (const auto& [key, value] : now)
    if (!was.count(key)) diff += "  " + key + " = (absent) -> " + value + "\n";
  return diff;
}

std::string owner_stamp_path(const std::string& dir) { return dir + "/moetrain-owner.json"; }

Result<std::string> move_aside(const std::string& dir) {
  std::error_code ec;
  std::string base = fs::path(dir).lexically_normal().string();
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  for (int n = 1; n < 100000; ++n) {
    const std::string to = fmt::format("{}.prev-{}", base, n);
    if (fs::exists(to, ec)) continue;
    fs::rename(dir, to, ec);
    if (ec) return Status::errorf("{}: cannot move it aside to {}: {}", dir, to, ec.message());
    return to;
  }
  return Status::errorf("{}: no free name to move it aside to", dir);
}

namespace {

Status write_stamp(const std::string& dir, const OutputOwner& owner) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::errorf("{}: cannot create: {}", dir, ec.message());
  const nlohmann::json j = {{"command", owner.command}, {"config", owner.config}, {"parts", owner.parts}};
  return write_file_atomic(owner_stamp_path(dir), j.dump(1) + "\n");
}

std::map<std::string, std::string> string_map(const nlohmann::json& j) {
  std::map<std::string, std::string> out;
  if (j.is_object())
    for (const auto& [k, v] : j.items())
      if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

// Why `dir` is not `owner`'s ("" if it is). `stamped` gets the parts the
// directory holds that `owner` does not name (kept in the new stamp).
Result<std::string> refusal(const std::string& dir, const OutputOwner& owner, OutputOwner& stamped) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return std::string();
  if (!fs::is_directory(dir, ec)) return Status::errorf("{}: exists and is not a directory", dir);
  if (fs::is_empty(dir, ec)) return std::string();
  const std::string stamp = owner_stamp_path(dir);
  if (!fs::exists(stamp, ec))
    return fmt::format("it holds files that `moetrain {}` did not write (no {})", owner.command,
                       fs::path(stamp).filename().string());
  auto text = read_file(stamp, "output directory stamp");
  if (!text) return text.status();
  const nlohmann::json j = nlohmann::json::parse(text.value(), nullptr, false);
  if (!j.is_object() || !j.contains("command") || !j["command"].is_string() || !j.contains("config") ||
      !j["config"].is_object())
    return Status::errorf("{}: not a stamp moetrain wrote (expected {{\"command\": ..., \"config\": {{...}}}})", stamp);
  const std::string command = j["command"].get<std::string>();
  if (command != owner.command)
    return fmt::format("it holds the output of `moetrain {}`, not of `moetrain {}`", command, owner.command);
  std::string diff = describe_differences(string_map(j["config"]), owner.config);
  if (j.contains("parts") && j["parts"].is_object())
    for (const auto& [name, part] : j["parts"].items()) {
      auto now = owner.parts.find(name);
      if (now == owner.parts.end()) {
        stamped.parts[name] = string_map(part);
        continue;
      }
      const std::map<std::string, std::string> was = string_map(part);
      for (const auto& [k, v] : was) {
        auto it = now->second.find(k);
        const std::string other = it == now->second.end() ? "(absent)" : it->second;
        if (other != v) diff += "  " + name + ": " + k + " = " + v + " -> " + other + "\n";
      }
      for (const auto& [k, v] : now->second)
        if (!was.count(k)) diff += "  " + name + ": " + k + " = (absent) -> " + v + "\n";
    }
  if (diff.empty()) return std::string();
  return fmt::format("it holds the results of a different configuration (stamped -> now):\n{}", diff);
}

}  // namespace

Result<std::string> claim_output_dir(const std::string& dir, const OutputOwner& owner, OutputDirMode mode) {
  OutputOwner stamped = owner;
  auto why = refusal(dir, owner, stamped);
  if (!why) return why.status();
  std::string moved;
  if (!why.value().empty()) {
    if (mode != OutputDirMode::kMoveAside)
      return Status::errorf(
          "{}: {}nothing was changed: its results would not be this configuration's. Choose another "
          "--out, or start over with --move-aside (the old directory is renamed, not deleted)",
          dir, why.value().back() == '\n' ? why.value() : why.value() + "; ");
    auto to = move_aside(dir);
    if (!to) return to.status();
    moved = to.value();
    stamped = owner;  // the moved directory's parts went with it
  }
  MT_RETURN_IF_ERROR(write_stamp(dir, stamped));
  return moved;
}

}  // namespace mt
