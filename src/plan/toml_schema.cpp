// toml_schema.cpp — see toml_schema.h.
#include "plan/toml_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "core/toml_document.h"

#include "core/file_io.h"
#include "core/strings.h"

namespace mt::plan {
namespace {

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    default: return "date/time";
  }
}

Status type_error(const std::string& at, const std::string& name, const std::string& want, const toml::node& n) {
  return Status::errorf("{}: {}: expected {}, got {}", at, name, want, type_name(n));
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string fmt_num(double v) { return fmt::format("{}", v); }

}  // namespace

void TomlSchema::add_int(const std::string& section, const std::string& key, int64_t* dst, int64_t lo, int64_t hi,
                         Required req) {
  keys_.push_back({section, key,
                   [dst, lo, hi](const void* p, const std::string& at, const std::string& name) -> Status {
                     const toml::node& n = *static_cast<const toml::node*>(p);
                     if (!n.is_integer()) return type_error(at, name, "integer", n);
                     const int64_t v = n.as_integer()->get();
                     if (v < lo || v > hi) {
                       if (hi == std::numeric_limits<int64_t>::max())
                         return Status::errorf("{}: {}: must be >= {}, got {}", at, name, lo, v);
                       return Status::errorf("{}: {}: must be in [{}, {}], got {}", at, name, lo, hi, v);
                     }
                     *dst = v;
                     return Status::ok();
                   },
                   req});
}

void TomlSchema::add_float(const std::string& section, const std::string& key, double* dst, double lo, double hi,
                           Lower lower, Required req) {
  const bool lo_exclusive = lower == Lower::kExclusive;
  keys_.push_back({section, key,
                   [dst, lo, hi, lo_exclusive](const void* p, const std::string& at,
                                               const std::string& name) -> Status {
                     const toml::node& n = *static_cast<const toml::node*>(p);
                     double v;
                     if (n.is_floating_point()) v = n.as_floating_point()->get();
                     else if (n.is_integer()) v = double(n.as_integer()->get());
                     else return type_error(at, name, "number", n);
                     if (!std::isfinite(v)) return Status::errorf("{}: {}: must be finite, got {}", at, name, v);
                     const bool below = lo_exclusive ? !(v > lo) : !(v >= lo);
                     if (below || v > hi) {
                       if (std::isinf(hi))
                         return Status::errorf("{}: {}: must be {} {}, got {}", at, name, lo_exclusive ? ">" : ">=",
                                               fmt_num(lo), fmt_num(v));
                       return Status::errorf("{}: {}: must be in {}{}, {}], got {}", at, name, lo_exclusive ? "(" : "[",
                                             fmt_num(lo), fmt_num(hi), fmt_num(v));
                     }
                     *dst = v;
                     return Status::ok();
                   },
                   req});
}

void TomlSchema::add_string(const std::string& section, const std::string& key, std::string* dst,
                            std::vector<std::string> choices, Required req) {
  keys_.push_back({section, key,
                   [dst, choices](const void* p, const std::string& at, const std::string& name) -> Status {
                     const toml::node& n = *static_cast<const toml::node*>(p);
                     std::string list;
                     for (const auto& c : choices) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", c);
                     if (!n.is_string())
                       return type_error(at, name, choices.empty() ? "string" : "one of " + list, n);
                     const std::string v = n.as_string()->get();
                     if (!choices.empty() && std::find(choices.begin(), choices.end(), v) == choices.end())
                       return Status::errorf("{}: {}: expected one of {}, got \"{}\"", at, name, list, v);
                     *dst = v;
                     return Status::ok();
                   },
                   req});
}

void TomlSchema::add_bool(const std::string& section, const std::string& key, bool* dst, Required req) {
  keys_.push_back({section, key,
                   [dst](const void* p, const std::string& at, const std::string& name) -> Status {
                     const toml::node& n = *static_cast<const toml::node*>(p);
                     if (!n.is_boolean()) return type_error(at, name, "boolean", n);
                     *dst = n.as_boolean()->get();
                     return Status::ok();
                   },
                   req});
}

const TomlSchema::Key* TomlSchema::find(const std::string& section, const std::string& key) const {
  for (const Key& k : keys_)
    if (k.section == section && k.key == key) return &k;
  return nullptr;
}

std::string TomlSchema::suggest(const std::string& section, const std::string& key) const {
  const Key* best = nullptr;
  size_t best_d = 3;
  for (const Key& k : keys_) {
    const size_t d = edit_distance(key, k.key) + (k.section == section ? 0 : 1);
    if (d < best_d) best_d = d, best = &k;
  }
  return best ? fmt::format(" (did you mean '{}.{}'?)", best->section, best->key) : std::string();
}

Status TomlSchema::parse(const std::string& text, const std::string& source) {
  auto parsed = parse_toml_document(text, source);
  if (!parsed) return parsed.status();
  toml::table doc = std::move(parsed.value());
  std::vector<std::string> sections;
  for (const Key& k : keys_)
    if (std::find(sections.begin(), sections.end(), k.section) == sections.end()) sections.push_back(k.section);
  std::string section_list;
  for (const auto& s : sections) section_list += fmt::format("{}[{}]", section_list.empty() ? "" : ", ", s);

  struct Entry {
    uint32_t line;
    std::string section, key;
    const toml::node* node;
  };
  std::vector<Entry> entries;
  for (auto&& [k, v] : doc) {
    const std::string name(k.str());
    const std::string at = k.source().begin.line > 0 ? fmt::format("{}:{}", source, k.source().begin.line) : source;
    if (std::find(sections.begin(), sections.end(), name) == sections.end()) {
      if (v.is_table()) return Status::errorf("{}: unknown table '[{}]' (expected {})", at, name, section_list);
      return Status::errorf("{}: unknown key '{}' (keys belong in {}){}", at, name, section_list, suggest("", name));
    }
    if (!v.is_table()) return type_error(at, name, "table", v);
    for (auto&& [k2, v2] : *v.as_table()) {
      const uint32_t line = k2.source().begin.line > 0 ? k2.source().begin.line : v2.source().begin.line;
      entries.push_back({line, name, std::string(k2.str()), &v2});
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.line < b.line; });
  for (const Entry& e : entries) {
    const std::string name = e.section + "." + e.key;
    const std::string at = e.line > 0 ? fmt::format("{}:{}", source, e.line) : source;
    const Key* key = find(e.section, e.key);
    if (!key) return Status::errorf("{}: unknown key '{}'{}", at, name, suggest(e.section, e.key));
    MT_RETURN_IF_ERROR(key->read(e.node, at, name));
    origins_[name] = at;
  }
  return Status::ok();
}

Status TomlSchema::apply_override(const std::string& assignment, const std::string& source) {
  const std::string at = fmt::format("{}: --set {}", source, assignment);
  const size_t eq = assignment.find('=');
  const std::string name = eq == std::string::npos ? "" : trim(assignment.substr(0, eq));
  const size_t dot = name.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == name.size())
    return Status::errorf("{}: expected section.key=value", at);
  const std::string section = name.substr(0, dot), key = name.substr(dot + 1);
  const std::string value = trim(assignment.substr(eq + 1));
  const Key* k = find(section, key);
  if (!k) return Status::errorf("{}: unknown key '{}'{}", at, name, suggest(section, key));
  toml::table holder;
  const toml::node* node = nullptr;
  try {
    holder = toml::parse("v = " + value, std::string_view("--set"));
    if (holder.size() == 1) node = holder.get("v");
  } catch (const toml::parse_error&) {
  }
  toml::value<std::string> bare(value);
  if (!node) node = &bare;
  MT_RETURN_IF_ERROR(k->read(node, at, name));
  origins_[name] = at;
  return Status::ok();
}

bool TomlSchema::was_set(const std::string& section, const std::string& key) const {
  return origins_.count(section + "." + key) > 0;
}

std::string TomlSchema::origin(const std::string& section, const std::string& key) const {
  auto it = origins_.find(section + "." + key);
  return it == origins_.end() ? std::string() : it->second;
}

Status TomlSchema::check_required(const std::string& source) const {
  for (const Key& k : keys_)
    if (k.req == Required::kYes && !was_set(k.section, k.key))
      return Status::errorf("{}: missing required key '{}.{}'", source, k.section, k.key);
  return Status::ok();
}

Result<std::string> TomlSchema::peek_string(const std::string& text, const std::string& source,
                                            const std::string& section, const std::string& key) {
  auto parsed = parse_toml_document(text, source);
  if (!parsed) return parsed.status();
  toml::table doc = std::move(parsed.value());
  const toml::node* sec = doc.get(section);
  if (!sec || !sec->is_table()) return std::string();
  const toml::node* n = sec->as_table()->get(key);
  if (!n) return std::string();
  if (!n->is_string()) {
    const uint32_t line = n->source().begin.line;
    return type_error(line > 0 ? fmt::format("{}:{}", source, line) : source, section + "." + key, "string", *n);
  }
  return std::string(n->as_string()->get());
}

Result<std::string> read_text_file(const std::string& path) {
  return read_file(path, "file");
}

}  // namespace mt::plan
