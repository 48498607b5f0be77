// toml_table.h — strict reading of one TOML table for the data configs (build
// config, mixture): typed getters whose errors name "file:line: key", and
// finish() rejecting every key that no getter asked for.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "core/status.h"

namespace mt {

class TomlTable {
 public:
  // `prefix` ("tokenizer.", "input[2].") is prepended to key names in messages.
  TomlTable(const toml::table& t, std::string source, std::string prefix)
      : t_(t), source_(std::move(source)), prefix_(std::move(prefix)) {}

  std::string at(const toml::node& n) const {
    const auto& r = n.source();
    return r.begin.line > 0 ? source_ + ":" + std::to_string(r.begin.line) : source_;
  }
  std::string where(std::string_view key) const {
    const toml::node* n = t_.get(key);
    return (n ? at(*n) : source_) + ": " + prefix_ + std::string(key);
  }

  Status get(std::string_view key, int64_t& out, int64_t min = INT64_MIN) {
    const toml::node* n = use(key);
    if (!n) return Status::ok();
    if (!n->is_integer()) return type_error(key, "integer", *n);
    out = n->as_integer()->get();
    if (out < min) return Status::errorf("{}: must be >= {}, got {}", where(key), min, out);
    return Status::ok();
  }
  Status get(std::string_view key, uint64_t& out) {
    int64_t v = int64_t(out);
    MT_RETURN_IF_ERROR(get(key, v, 0));
    out = uint64_t(v);
    return Status::ok();
  }
  Status get(std::string_view key, double& out) {
    const toml::node* n = use(key);
    if (!n) return Status::ok();
    if (n->is_floating_point()) out = n->as_floating_point()->get();
    else if (n->is_integer()) out = double(n->as_integer()->get());
    else return type_error(key, "number", *n);
    return Status::ok();
  }
  Status get(std::string_view key, bool& out) {
    const toml::node* n = use(key);
    if (!n) return Status::ok();
    if (!n->is_boolean()) return type_error(key, "boolean", *n);
    out = n->as_boolean()->get();
    return Status::ok();
  }
  Status get(std::string_view key, std::string& out) {
    const toml::node* n = use(key);
    if (!n) return Status::ok();
    if (!n->is_string()) return type_error(key, "string", *n);
    out = n->as_string()->get();
    return Status::ok();
  }
  Status get(std::string_view key, std::vector<std::string>& out) {
    const toml::node* n = use(key);
    if (!n) return Status::ok();
    if (!n->is_array()) return type_error(key, "array of strings", *n);
    out.clear();
    for (const auto& e : *n->as_array()) {
      if (!e.is_string()) return type_error(key, "array of strings", e);
      out.push_back(e.as_string()->get());
    }
    return Status::ok();
  }
  // One of `choices` (index into it).
  template <typename E>
  Status get_enum(std::string_view key, E& out, std::initializer_list<const char*> choices) {
    std::string s;
    const toml::node* n = t_.get(key);
    MT_RETURN_IF_ERROR(get(key, s));
    if (!n) return Status::ok();
    int i = 0;
    std::string list;
    for (const char* c : choices) {
      if (s == c) { out = E(i); return Status::ok(); }
      list += (i++ ? ", \"" : "\"") + std::string(c) + "\"";
    }
    return Status::errorf("{}: expected one of {}, got \"{}\"", where(key), list, s);
  }
  const toml::node* use(std::string_view key) {
    used_.insert(std::string(key));
    return t_.get(key);
  }
  Status finish() const {
    for (auto&& [k, v] : t_)
      if (!used_.count(std::string(k.str())))
        return Status::errorf("{}: unknown key '{}{}'", at(v), prefix_, k.str());
    return Status::ok();
  }

 private:
  Status type_error(std::string_view key, const char* want, const toml::node& n) const {
    return Status::errorf("{}: {}{}: expected {}", at(n), prefix_, key, want);
  }
  const toml::table& t_;
  std::string source_, prefix_;
  std::set<std::string> used_;
};

}  // namespace mt
