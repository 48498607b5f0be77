// config_schema.cpp — see config_schema.h. Reading is two passes: collect
// every (key, node) of the document with its line, in line order (overrides
// last, in command-line order), then convert each; so the first error
// reported is the first one in the file.
#include "core/config_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include <toml++/toml.h>

#include "core/file_io.h"
#include "core/strings.h"
#include "core/toml_document.h"

namespace mt {

// ---- ConfigOrigins ------------------------------------------------------------

std::string ConfigOrigins::at(std::string_view key) const {
  auto it = where_.find(key);
  return it == where_.end() ? source_ : it->second;
}

bool ConfigOrigins::was_set(std::string_view key) const { return where_.find(key) != where_.end(); }

std::optional<std::string> ConfigOrigins::first_set_under(std::string_view prefix) const {
  const auto it = where_.lower_bound(prefix);
  if (it == where_.end() || it->first.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return it->first;
}

Status ConfigOrigins::error(std::string_view key, std::string_view why) const {
  // A cross-field error is placed at `key`; when another key it names came
  // from a --set, say so, or the message points at a file line that is not
  // what changed.
  std::string also;
  for (const auto& [k, where] : where_) {
    if (k == key || where.find("--set ") == std::string::npos) continue;
    const size_t at_k = why.find(k);
    const bool whole =
        at_k != std::string_view::npos &&
        (at_k + k.size() == why.size() || !(std::isalnum(static_cast<unsigned char>(why[at_k + k.size()])) ||
                                            why[at_k + k.size()] == '_' || why[at_k + k.size()] == '.'));
    if (whole) also += fmt::format(" ({} comes from {})", k, where.substr(where.find("--set ")));
  }
  return Status::errorf("{}: {}: {}{}", at(key), key, why, also);
}

// ---- spelling ---------------------------------------------------------------------

std::string toml_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) out += fmt::format("\\u{:04X}", unsigned(u));
        else out += ch;
    }
  }
  return out + "\"";
}

// Shortest round-trip digits, always spelled as a TOML float ("10000.0").
std::string toml_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

namespace {

bool is_bare_key(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}
std::string key_text(std::string_view k) { return is_bare_key(k) ? std::string(k) : toml_quote(k); }

std::string describe(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: {
      std::string s(n.as_string()->get());
      if (s.size() > 60) s = s.substr(0, 57) + "...";
      return toml_quote(s);
    }
    case toml::node_type::integer: return fmt::format("{}", n.as_integer()->get());
    case toml::node_type::floating_point: return toml_double(n.as_floating_point()->get());
    case toml::node_type::boolean: return n.as_boolean()->get() ? "true" : "false";
    case toml::node_type::array: {
      std::string s = "[";
      const toml::array& a = *n.as_array();
      for (size_t i = 0; i < a.size() && s.size() < 60; ++i) s += (i ? ", " : "") + describe(a[i]);
      return s + (s.size() >= 60 ? ", ...]" : "]");
    }
    case toml::node_type::table: return "a table";
    default: return "a date/time";
  }
}

class TomlValue final : public ConfigValue {
 public:
  explicit TomlValue(const toml::node& n) : n_(n) {}
  bool is_string() const override { return n_.is_string(); }
  bool is_integer() const override { return n_.is_integer(); }
  bool is_number() const override { return n_.is_integer() || n_.is_floating_point(); }
  std::string as_string() const override { return n_.is_string() ? std::string(n_.as_string()->get()) : ""; }
  int64_t as_integer() const override { return n_.is_integer() ? n_.as_integer()->get() : 0; }
  double as_double() const override {
    return n_.is_integer() ? double(n_.as_integer()->get())
                           : n_.is_floating_point() ? n_.as_floating_point()->get() : 0.0;
  }
  std::string describe() const override { return mt::describe(n_); }

 private:
  const toml::node& n_;
};

std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", int64_t(v));
  return fmt::format("{}", v);
}

// One segment of an override path: key, optionally indexed (input[2]).
struct PathSegment {
  std::string key;
  int64_t index = -1;
};

Result<std::vector<PathSegment>> split_path(std::string_view path) {
  std::vector<PathSegment> out;
  size_t i = 0;
  while (i < path.size()) {
    PathSegment seg;
    if (path[i] == '"') {
      ++i;
      while (i < path.size() && path[i] != '"') {
        if (path[i] == '\\' && i + 1 < path.size()) ++i;
        seg.key += path[i++];
      }
      if (i >= path.size()) return Status::error("unterminated quoted key");
      ++i;
    } else {
      while (i < path.size() && path[i] != '.' && path[i] != '[') seg.key += path[i++];
      if (seg.key.empty()) return Status::error("empty key");
    }
    if (i < path.size() && path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string_view::npos) return Status::error("unterminated [index]");
      const std::string idx(path.substr(i + 1, close - i - 1));
      if (idx.empty() || idx.find_first_not_of("0123456789") != std::string::npos)
        return Status::errorf("bad index [{}]", idx);
      seg.index = std::stoll(idx);
      i = close + 1;
    }
    out.push_back(std::move(seg));
    if (i < path.size()) {
      if (path[i] != '.') return Status::errorf("unexpected '{}'", path[i]);
      if (++i == path.size()) return Status::error("trailing '.'");
    }
  }
  if (out.empty()) return Status::error("empty key");
  return out;
}

std::string path_name(const std::vector<PathSegment>& segs) {
  std::string s;
  for (const PathSegment& p : segs) {
    if (!s.empty()) s += '.';
    s += key_text(p.key);
    if (p.index >= 0) s += fmt::format("[{}]", p.index);
  }
  return s;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

// Applies one "path=value" to the document; returns the key's full name.
Result<std::string> apply_override(toml::table& doc, const std::string& raw, const std::string& at) {
  const size_t eq = raw.find('=');
  if (eq == std::string::npos) return Status::errorf("{}: expected key=value (e.g. train.lr=3e-4)", at);
  auto segs = split_path(trim(std::string_view(raw).substr(0, eq)));
  if (!segs) return Status::errorf("{}: bad key: {}", at, segs.status().message());
  const std::string value = trim(std::string_view(raw).substr(eq + 1));
  toml::table* t = &doc;
  const std::vector<PathSegment>& s = segs.value();
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    toml::node* n = t->get(s[i].key);
    if (!n) {
      if (s[i].index >= 0) return Status::errorf("{}: there is no [[{}]] table {}", at, s[i].key, s[i].index);
      t->insert(s[i].key, toml::table{});
      n = t->get(s[i].key);
    }
    if (s[i].index >= 0) {
      if (!n->is_array_of_tables() || int64_t(n->as_array()->size()) <= s[i].index)
        return Status::errorf("{}: there is no [[{}]] table {}", at, s[i].key, s[i].index);
      t = (*n->as_array())[size_t(s[i].index)].as_table();
    } else {
      if (!n->is_table()) return Status::errorf("{}: '{}' is not a table", at, s[i].key);
      t = n->as_table();
    }
  }
  if (s.back().index >= 0) return Status::errorf("{}: cannot set a whole [[{}]] table", at, s.back().key);
  // The value in TOML syntax if it is one ("3e-4", "true", "[\".py\"]"),
  // otherwise the bare text as a string ("bf16", "/data/x").
  toml::table holder;
  try {
    holder = toml::parse("v = " + value, std::string_view("--set"));
  } catch (const toml::parse_error&) {
  }
  if (const toml::node* n = holder.size() == 1 ? holder.get("v") : nullptr)
    n->visit([&](auto&& v) { t->insert_or_assign(s.back().key, v); });
  else
    t->insert_or_assign(s.back().key, value);
  return path_name(s);
}

}  // namespace

// ---- ConfigKey ------------------------------------------------------------------

ConfigKey& ConfigKey::min(double lo) { has_lo_ = true, lo_open_ = false, lo_ = lo; return *this; }
ConfigKey& ConfigKey::above(double lo) { has_lo_ = true, lo_open_ = true, lo_ = lo; return *this; }
ConfigKey& ConfigKey::max(double hi) { has_hi_ = true, hi_open_ = false, hi_ = hi; return *this; }
ConfigKey& ConfigKey::below(double hi) { has_hi_ = true, hi_open_ = true, hi_ = hi; return *this; }
ConfigKey& ConfigKey::unit(std::string u) { unit_ = std::move(u); return *this; }
ConfigKey& ConfigKey::required() { required_ = true; return *this; }
ConfigKey& ConfigKey::or_one_string() {
  one_string_ok_ = true;
  type_ = "string or array of strings";
  return *this;
}
ConfigKey& ConfigKey::note(std::string n) { note_ = std::move(n); return *this; }

std::string ConfigKey::range_text() const {
  std::string r;
  if (has_lo_ && has_hi_)
    r = fmt::format("in {}{}, {}{}", lo_open_ ? "(" : "[", number_text(lo_), number_text(hi_), hi_open_ ? ")" : "]");
  else if (has_lo_) r = fmt::format("{} {}", lo_open_ ? ">" : ">=", number_text(lo_));
  else if (has_hi_) r = fmt::format("{} {}", hi_open_ ? "<" : "<=", number_text(hi_));
  if (!note_.empty()) r += (r.empty() ? "" : "; ") + note_;
  return r;
}

// ---- ConfigSchema: declarations ----------------------------------------------------

ConfigSchema::ConfigSchema(std::string kind, std::string prefix) : kind_(std::move(kind)), prefix_(std::move(prefix)) {}
ConfigSchema::~ConfigSchema() = default;

ConfigKey& ConfigSchema::declare(const std::string& name, ConfigKey::Kind kind, void* field, std::string type,
                                 std::string doc) {
  auto k = std::make_unique<ConfigKey>();
  k->name_ = prefix_ + name;
  k->kind_ = kind;
  k->field_ = field;
  k->type_ = std::move(type);
  k->doc_ = std::move(doc);
  keys_.push_back(std::move(k));
  ConfigKey& key = *keys_.back();
  if (kind != ConfigKey::Kind::kTableArray && kind != ConfigKey::Kind::kMap && kind != ConfigKey::Kind::kCustom)
    key.default_ = write_value(key);
  return key;
}

ConfigKey& ConfigSchema::add(const std::string& name, int64_t* f, std::string doc) {
  return declare(name, ConfigKey::Kind::kInt, f, "integer", std::move(doc));
}
ConfigKey& ConfigSchema::add(const std::string& name, uint64_t* f, std::string doc) {
  return declare(name, ConfigKey::Kind::kUint, f, "integer", std::move(doc)).min(0);
}
ConfigKey& ConfigSchema::add(const std::string& name, double* f, std::string doc) {
  return declare(name, ConfigKey::Kind::kFloat, f, "float", std::move(doc));
}
ConfigKey& ConfigSchema::add(const std::string& name, bool* f, std::string doc) {
  return declare(name, ConfigKey::Kind::kBool, f, "boolean", std::move(doc));
}
ConfigKey& ConfigSchema::add(const std::string& name, std::string* f, std::string doc) {
  return declare(name, ConfigKey::Kind::kString, f, "string", std::move(doc));
}
ConfigKey& ConfigSchema::add(const std::string& name, std::vector<std::string>* f, std::string doc) {
  return declare(name, ConfigKey::Kind::kStringList, f, "array of strings", std::move(doc));
}
ConfigKey& ConfigSchema::add(const std::string& name, std::vector<double>* f, std::string doc) {
  return declare(name, ConfigKey::Kind::kFloatList, f, "array of numbers", std::move(doc));
}

namespace {
std::string choice_list(const std::vector<std::string>& c) {
  std::string s;
  for (const std::string& x : c) s += (s.empty() ? "" : ", ") + toml_quote(x);
  return s;
}
}  // namespace

ConfigKey& ConfigSchema::add_choice(const std::string& name, std::string* f, std::vector<std::string> choices,
                                    std::string doc) {
  ConfigKey& k = declare(name, ConfigKey::Kind::kString, f, "one of " + choice_list(choices), std::move(doc));
  k.choices_ = std::move(choices);
  return k;
}

ConfigKey& ConfigSchema::add_enum_index(const std::string& name, int* f, std::vector<std::string> names,
                                        std::string doc) {
  auto k = std::make_unique<ConfigKey>();
  const std::string type = "one of " + choice_list(names);
  k->choices_ = std::move(names);
  keys_.push_back(nullptr);
  ConfigKey* raw = k.get();
  keys_.back() = std::move(k);
  raw->name_ = prefix_ + name;
  raw->kind_ = ConfigKey::Kind::kEnum;
  raw->field_ = f;
  raw->type_ = type;
  raw->doc_ = std::move(doc);
  raw->default_ = write_value(*raw);
  return *raw;
}

ConfigKey& ConfigSchema::add_map(const std::string& name, std::vector<std::pair<std::string, double>>* f,
                                 std::string doc) {
  ConfigKey& k = declare(name, ConfigKey::Kind::kMap, f, "table of \"key\" = number", std::move(doc));
  k.default_ = f->empty() ? "{}" : "";
  return k;
}

ConfigKey& ConfigSchema::add_custom(const std::string& name, std::string type,
                                    std::function<Status(const ConfigValue&, const std::string& at)> read,
                                    std::function<std::string()> write, std::string doc) {
  ConfigKey& k = declare(name, ConfigKey::Kind::kCustom, nullptr, std::move(type), std::move(doc));
  k.custom_read_ = std::move(read);
  k.custom_write_ = std::move(write);
  k.default_ = k.custom_write_();
  return k;
}

ConfigKey& ConfigSchema::add_table_array_impl(const std::string& name, std::string doc) {
  return declare(name, ConfigKey::Kind::kTableArray, nullptr, "array of tables", std::move(doc));
}

const ConfigKey* ConfigSchema::find(std::string_view name) const {
  for (const auto& k : keys_)
    if (k->name_ == name) return k.get();
  return nullptr;
}

bool ConfigSchema::has_prefix(std::string_view prefix) const {
  for (const auto& k : keys_)
    if (k->name_.size() > prefix.size() && k->name_.compare(0, prefix.size(), prefix) == 0 &&
        k->name_[prefix.size()] == '.')
      return true;
  return false;
}

std::string ConfigSchema::suggest(std::string_view name) const {
  const ConfigKey* best = nullptr;
  size_t best_d = 3;  // within two edits of the whole name, or of the last part
  const size_t dot = name.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  for (const auto& k : keys_) {
    const size_t kd = k->name_.rfind('.');
    const std::string_view klast = kd == std::string::npos ? std::string_view(k->name_)
                                                           : std::string_view(k->name_).substr(kd + 1);
    const size_t d = std::min(edit_distance(name, k->name_), edit_distance(last, klast) + (dot == std::string_view::npos ? 0 : 1));
    if (d < best_d) best_d = d, best = k.get();
  }
  return best ? fmt::format(" (did you mean '{}'?)", best->name_) : std::string();
}

// ---- values --------------------------------------------------------------------------

std::string ConfigSchema::write_value(const ConfigKey& k) const {
  using K = ConfigKey::Kind;
  switch (k.kind_) {
    case K::kInt: return fmt::format("{}", *static_cast<int64_t*>(k.field_));
    case K::kUint: return fmt::format("{}", *static_cast<uint64_t*>(k.field_));
    case K::kFloat: return toml_double(*static_cast<double*>(k.field_));
    case K::kBool: return *static_cast<bool*>(k.field_) ? "true" : "false";
    case K::kString: return toml_quote(*static_cast<std::string*>(k.field_));
    case K::kStringList: {
      const auto& v = *static_cast<std::vector<std::string>*>(k.field_);
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_quote(v[i]);
      return out + "]";
    }
    case K::kFloatList: {
      const auto& v = *static_cast<std::vector<double>*>(k.field_);
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + toml_double(v[i]);
      return out + "]";
    }
    case K::kEnum: {
      const int i = *static_cast<int*>(k.field_);
      return i >= 0 && size_t(i) < k.choices_.size() ? toml_quote(k.choices_[size_t(i)]) : "\"?\"";
    }
    case K::kCustom: return k.custom_write_();
    default: return "";
  }
}

namespace {

Status type_error(const std::string& at, const ConfigKey& k, const toml::node& n) {
  const std::string range = k.range_text();
  return Status::errorf("{}: {}: expected {}{}, got {}", at, k.name(), k.type(), range.empty() ? "" : " " + range,
                        describe(n));
}

// Range check shared by integers, floats and map values.
bool in_range(const ConfigKey& k, double v, bool has_lo, bool lo_open, double lo, bool has_hi, bool hi_open,
              double hi) {
  if (has_lo && (lo_open ? !(v > lo) : !(v >= lo))) return false;
  if (has_hi && (hi_open ? !(v < hi) : !(v <= hi))) return false;
  return true;
}

}  // namespace

// Converts one node into the key's field (and, the schema's friend, writes canonical TOML back).
struct ConfigReader {
  static std::string to_toml(const ConfigSchema& schema, const std::string& table_prefix);

  static Status read(const ConfigKey& k, const toml::node& n, const std::string& at) {
    using K = ConfigKey::Kind;
    auto check = [&](double v) {
      return in_range(k, v, k.has_lo_, k.lo_open_, k.lo_, k.has_hi_, k.hi_open_, k.hi_) ? Status::ok()
                                                                                          : type_error(at, k, n);
    };
    switch (k.kind_) {
      case K::kInt:
      case K::kUint: {
        if (!n.is_integer()) return type_error(at, k, n);
        const int64_t v = n.as_integer()->get();
        MT_RETURN_IF_ERROR(check(double(v)));
        if (k.kind_ == K::kInt) *static_cast<int64_t*>(k.field_) = v;
        else *static_cast<uint64_t*>(k.field_) = uint64_t(v);
        return Status::ok();
      }
      case K::kFloat: {
        if (!n.is_integer() && !n.is_floating_point()) return type_error(at, k, n);
        const double v = TomlValue(n).as_double();
        if (!std::isfinite(v)) return type_error(at, k, n);
        MT_RETURN_IF_ERROR(check(v));
        *static_cast<double*>(k.field_) = v;
        return Status::ok();
      }
      case K::kBool:
        if (!n.is_boolean()) return type_error(at, k, n);
        *static_cast<bool*>(k.field_) = n.as_boolean()->get();
        return Status::ok();
      case K::kString: {
        if (!n.is_string()) return type_error(at, k, n);
        const std::string v(n.as_string()->get());
        if (!k.choices_.empty() && std::find(k.choices_.begin(), k.choices_.end(), v) == k.choices_.end())
          return type_error(at, k, n);
        *static_cast<std::string*>(k.field_) = v;
        return Status::ok();
      }
      case K::kStringList: {
        if (k.one_string_ok_ && n.is_string()) {
          *static_cast<std::vector<std::string>*>(k.field_) = {std::string(n.as_string()->get())};
          return Status::ok();
        }
        if (!n.is_array()) return type_error(at, k, n);
        std::vector<std::string> v;
        for (const toml::node& e : *n.as_array()) {
          if (!e.is_string()) return type_error(at, k, n);
          v.emplace_back(e.as_string()->get());
        }
        *static_cast<std::vector<std::string>*>(k.field_) = std::move(v);
        return Status::ok();
      }
      case K::kFloatList: {
        if (!n.is_array()) return type_error(at, k, n);
        std::vector<double> v;
        for (const toml::node& e : *n.as_array()) {
          if (!e.is_integer() && !e.is_floating_point()) return type_error(at, k, n);
          const double x = TomlValue(e).as_double();
          if (!std::isfinite(x) || !check(x)) return type_error(at, k, n);
          v.push_back(x);
        }
        *static_cast<std::vector<double>*>(k.field_) = std::move(v);
        return Status::ok();
      }
      case K::kEnum: {
        if (!n.is_string()) return type_error(at, k, n);
        const std::string v(n.as_string()->get());
        auto it = std::find(k.choices_.begin(), k.choices_.end(), v);
        if (it == k.choices_.end()) return type_error(at, k, n);
        *static_cast<int*>(k.field_) = int(it - k.choices_.begin());
        return Status::ok();
      }
      case K::kCustom: return k.custom_read_(TomlValue(n), at);
      default: return Status::errorf("{}: {}: cannot be read here", at, k.name());
    }
  }

  // One map entry: name."key" = number.
  static Status read_map_entry(const ConfigKey& k, const std::string& key, const toml::node& n, const std::string& at) {
    const std::string full = k.name() + "." + key_text(key);
    const double v = TomlValue(n).as_double();
    if ((!n.is_integer() && !n.is_floating_point()) || !std::isfinite(v) ||
        !in_range(k, v, k.has_lo_, k.lo_open_, k.lo_, k.has_hi_, k.hi_open_, k.hi_)) {
      const std::string range = k.range_text();
      return Status::errorf("{}: {}: expected number{}, got {}", at, full, range.empty() ? "" : " " + range,
                            describe(n));
    }
    auto& vec = *static_cast<std::vector<std::pair<std::string, double>>*>(k.field_);
    vec.emplace_back(key, v);
    return Status::ok();
  }
};

// ---- loading ---------------------------------------------------------------------------

namespace {

struct Entry {
  uint64_t order;  // line (file), or past every line (overrides, in order)
  std::string name;
  const ConfigKey* key;
  const toml::node* node;
  std::string map_key;  // set for map entries
};

}  // namespace

struct ConfigSchema::Impl {
  const std::string& source;
  const std::map<std::string, std::pair<uint64_t, std::string>>& overridden;  // name -> (order, "--set ...")
  std::vector<Entry> entries;
  std::vector<std::unique_ptr<ConfigSchema>> subs;  // element schemas of table arrays

  uint64_t order_of(const std::string& name, const toml::node& n, const toml::key* k) const {
    auto it = overridden.find(name);
    if (it != overridden.end()) return it->second.first;
    uint32_t line = k && k->source().begin.line > 0 ? k->source().begin.line : n.source().begin.line;
    return line;
  }
  std::string at(const std::string& name, uint64_t order) const {
    auto it = overridden.find(name);
    if (it != overridden.end()) return it->second.second;
    if (order > 0) return fmt::format("{}:{}", source, order);
    // A table an override created: name the override.
    for (const auto& [key, o] : overridden)
      if (key.size() > name.size() && key.compare(0, name.size(), name) == 0 &&
          (key[name.size()] == '.' || key[name.size()] == '['))
        return o.second;
    return source;
  }

  Status collect(const toml::table& t, const std::string& prefix, ConfigSchema& schema) {
    for (auto&& [k, v] : t) {
      const std::string name = prefix + key_text(k.str());
      const uint64_t order = order_of(name, v, &k);
      const ConfigKey* key = schema.find(name);
      if (key && key->kind_ == ConfigKey::Kind::kTableArray) {
        if (!v.is_array_of_tables()) return type_error(at(name, order), *key, v);
        const toml::array& arr = *v.as_array();
        key->array_clear_();
        for (size_t i = 0; i < arr.size(); ++i) key->array_push_();
        for (size_t i = 0; i < arr.size(); ++i) {
          subs.push_back(std::make_unique<ConfigSchema>(schema.kind_, fmt::format("{}[{}].", name, i)));
          key->array_declare_(*subs.back(), i);
          MT_RETURN_IF_ERROR(collect(*arr[i].as_table(), fmt::format("{}[{}].", name, i), *subs.back()));
        }
      } else if (key && key->kind_ == ConfigKey::Kind::kMap) {
        if (!v.is_table()) return type_error(at(name, order), *key, v);
        static_cast<std::vector<std::pair<std::string, double>>*>(key->field_)->clear();
        for (auto&& [k2, v2] : *v.as_table()) {
          const std::string full = name + "." + key_text(k2.str());
          entries.push_back({order_of(full, v2, &k2), full, key, &v2, std::string(k2.str())});
        }
      } else if (key) {
        entries.push_back({order, name, key, &v, ""});
      } else if (schema.has_prefix(name)) {
        if (!v.is_table())
          return Status::errorf("{}: {}: expected a table, got {}", at(name, order), name, describe(v));
        MT_RETURN_IF_ERROR(collect(*v.as_table(), name + ".", schema));
      } else {
        return Status::errorf("{}: {}: unknown {}{}", at(name, order), name, v.is_table() ? "table" : "key",
                              schema.suggest(name));
      }
    }
    return Status::ok();
  }
};

Status ConfigSchema::load(const std::string& text, const std::string& source, const std::vector<std::string>& overrides,
                          ConfigOrigins& origins) {
  origins = ConfigOrigins(source);
  auto parsed = parse_toml_document(text, source);
  if (!parsed) return parsed.status();
  toml::table doc = std::move(parsed.value());

  std::map<std::string, std::pair<uint64_t, std::string>> overridden;
  uint64_t order = uint64_t(1) << 40;  // after every line of the file
  for (const std::string& raw : overrides) {
    const std::string at = fmt::format("{}: --set {}", source, raw);
    auto name = apply_override(doc, raw, at);
    if (!name) return name.status();
    overridden[name.value()] = {order++, at};
  }

  Impl impl{source, overridden, {}, {}};
  MT_RETURN_IF_ERROR(impl.collect(doc, prefix_, *this));
  std::stable_sort(impl.entries.begin(), impl.entries.end(),
                   [](const Entry& a, const Entry& b) { return a.order < b.order; });
  for (const Entry& e : impl.entries) {
    const std::string at = impl.at(e.name, e.order);
    if (e.key->kind_ == ConfigKey::Kind::kMap) MT_RETURN_IF_ERROR(ConfigReader::read_map_entry(*e.key, e.map_key, *e.node, at));
    else MT_RETURN_IF_ERROR(ConfigReader::read(*e.key, *e.node, at));
    origins.set(e.name, at);
  }
  // Table arrays and maps count as set when present.
  for (const auto& k : keys_)
    if ((k->kind_ == ConfigKey::Kind::kTableArray || k->kind_ == ConfigKey::Kind::kMap) && doc.contains(k->name_))
      origins.set(k->name_, source);
  auto missing = [&](const ConfigSchema& s) -> Status {
    for (const auto& k : s.keys_)
      if (k->required_ && !origins.was_set(k->name_))
        return Status::errorf("{}: {}: required key missing ({})", source, k->name_, k->doc_);
    return Status::ok();
  };
  MT_RETURN_IF_ERROR(missing(*this));
  for (const auto& s : impl.subs) MT_RETURN_IF_ERROR(missing(*s));
  // Element schemas must be redeclared to write the file back: to_toml() does that.
  return Status::ok();
}

Status ConfigSchema::load_file(const std::string& path, const std::vector<std::string>& overrides,
                               ConfigOrigins& origins) {
  auto text = read_file(path, kind_);
  if (!text) return text.status();
  return load(text.value(), path, overrides, origins);
}

Result<std::optional<std::string>> ConfigSchema::peek_string(const std::string& text, const std::string& source,
                                                             const std::vector<std::string>& overrides,
                                                             const std::string& name) {
  auto parsed = parse_toml_document(text, source);
  if (!parsed) return parsed.status();
  toml::table doc = std::move(parsed.value());
  for (const std::string& raw : overrides) {
    auto r = apply_override(doc, raw, fmt::format("{}: --set {}", source, raw));
    if (!r) return r.status();
  }
  const toml::node* n = doc.at_path(name).node();
  if (!n || !n->is_string()) return std::optional<std::string>();
  return std::optional<std::string>(std::string(n->as_string()->get()));
}

// ---- writing ----------------------------------------------------------------------------

std::string ConfigSchema::to_toml() const { return ConfigReader::to_toml(*this, ""); }

// Table headers go under `table_prefix`: inside a [[phase]] element, its own tables are [phase.batch].
std::string ConfigReader::to_toml(const ConfigSchema& schema, const std::string& table_prefix) {
  using K = ConfigKey::Kind;
  const std::string& kind_ = schema.kind_;
  const std::string& prefix_ = schema.prefix_;
  const auto& keys_ = schema.keys_;
  auto write_value = [&schema](const ConfigKey& k) { return schema.write_value(k); };
  // Keys grouped by their table ("" = top level), tables in declaration order.
  std::vector<std::string> tables = {""};
  auto table_of = [&](const ConfigKey& k) {
    const std::string rel = k.name_.substr(prefix_.size());
    const size_t dot = rel.rfind('.');
    return dot == std::string::npos ? std::string() : rel.substr(0, dot);
  };
  for (const auto& k : keys_) {
    if (k->kind_ == K::kMap || k->kind_ == K::kTableArray) continue;
    const std::string t = table_of(*k);
    if (std::find(tables.begin(), tables.end(), t) == tables.end()) tables.push_back(t);
  }
  std::string out;
  for (const std::string& t : tables) {
    std::string body;
    for (const auto& k : keys_) {
      if (k->kind_ == K::kMap || k->kind_ == K::kTableArray || table_of(*k) != t) continue;
      const std::string rel = k->name_.substr(prefix_.size());
      body += fmt::format("{} = {}\n", t.empty() ? rel : rel.substr(t.size() + 1), write_value(*k));
    }
    if (body.empty()) continue;
    if (!t.empty()) out += fmt::format("\n[{}{}]\n", table_prefix, t);
    out += body;
  }
  for (const auto& k : keys_) {
    if (k->kind_ == K::kMap) {
      const auto& v = *static_cast<std::vector<std::pair<std::string, double>>*>(k->field_);
      if (v.empty()) continue;
      out += fmt::format("\n[{}{}]\n", table_prefix, k->name_.substr(prefix_.size()));
      for (const auto& [key, w] : v) out += fmt::format("{} = {}\n", toml_quote(key), toml_double(w));
    } else if (k->kind_ == K::kTableArray) {
      for (size_t i = 0; i < k->array_size_(); ++i) {
        ConfigSchema sub(kind_);
        k->array_declare_(sub, i);
        // An element's own tables are written under its array's name ([[phase]] then [phase.batch]).
        const std::string rel = table_prefix + k->name_.substr(prefix_.size());
        out += fmt::format("\n[[{}]]\n{}", rel, to_toml(sub, rel + "."));
      }
    }
  }
  return out;
}

std::string ConfigSchema::reference_markdown() const {
  auto cell = [](std::string s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string out;
  for (const auto& k : keys_) {
    if (k->kind_ == ConfigKey::Kind::kTableArray) {
      ConfigSchema sub(kind_, k->name_ + "[]." );
      out += fmt::format("| `{}` | {} | | | | {} |\n", k->name_ + "[]", k->type_, cell(k->doc_));
      out += k->array_reference_(sub);
      continue;
    }
    const std::string def = k->required_ ? "required" : (k->default_.empty() ? "" : "`" + cell(k->default_) + "`");
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", k->name_, cell(k->type_), def, cell(k->range_text()),
                       k->unit_, cell(k->doc_));
  }
  return out;
}

}  // namespace mt
