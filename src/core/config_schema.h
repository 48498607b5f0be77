// config_schema.h — the one strict TOML mechanism behind every file moetrain
// reads (run config, data build config, mixture, planner cluster / layout /
// law files, and every file type to come). A component declares its keys next
// to its own struct: dotted name, pointer to the field, type, range or enum
// names, unit and a one-line doc; the default is the field's value when it
// is declared. The schema then
//   - loads a TOML file plus `--set path=value` overrides (applied to the
//     document before reading, so an override goes through exactly the same
//     checks as the file), rejecting unknown keys, wrong types, out-of-range
//     values and missing required keys with one error shape:
//       FILE:LINE: key: expected T, got V            (and "did you mean")
//   - records where every value came from (ConfigOrigins), so cross-field
//     checks name the line or override the user must change;
//   - writes the resolved configuration back as canonical TOML (defaults
//     included), which parses to the same values;
//   - lists its keys for the generated reference (docs/config.md).
// toml++ stays inside config_schema.cpp; this header does not include it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace mt {

// Where each key got its value: "file:line", "file: --set k=v", or (never
// set) the file name alone. Keys are full dotted names ("train.lr",
// "input[0].path", "weights.\"code/*\"").
class ConfigOrigins {
 public:
  explicit ConfigOrigins(std::string source = "") : source_(std::move(source)) {}
  const std::string& source() const { return source_; }
  std::string at(std::string_view key) const;
  bool was_set(std::string_view key) const;
  // The first key set (in key order) under `prefix` ("cpu."), if any: for a section a setting refuses whole.
  std::optional<std::string> first_set_under(std::string_view prefix) const;
  void set(const std::string& key, std::string where) { where_[key] = std::move(where); }
  // "AT: key: why" — the shape of every cross-field error.
  Status error(std::string_view key, std::string_view why) const;

 private:
  std::string source_;
  std::map<std::string, std::string, std::less<>> where_;
};

// A TOML value handed to a custom reader (toml++ is not exposed).
class ConfigValue {
 public:
  virtual ~ConfigValue() = default;
  virtual bool is_string() const = 0;
  virtual bool is_integer() const = 0;
  virtual bool is_number() const = 0;  // integer or float
  virtual std::string as_string() const = 0;
  virtual int64_t as_integer() const = 0;
  virtual double as_double() const = 0;
  virtual std::string describe() const = 0;  // the value as the user wrote it, for "got V"
};

// One declared key. Returned by ConfigSchema::add so the declaration can go
// on: .min(1).unit("steps").
class ConfigKey {
 public:
  ConfigKey& min(double lo);            // value >= lo
  ConfigKey& above(double lo);          // value > lo
  ConfigKey& max(double hi);            // value <= hi
  ConfigKey& below(double hi);          // value < hi
  ConfigKey& range(double lo, double hi) { return min(lo).max(hi); }
  ConfigKey& unit(std::string u);
  ConfigKey& required();
  // Arrays of strings only: a single string is accepted as a one-element list.
  ConfigKey& or_one_string();
  // Documentation-only note on the range ("0 = off"); shown in the reference.
  ConfigKey& note(std::string n);

  // For the reference and for readers.
  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  const std::string& doc() const { return doc_; }
  const std::string& unit_text() const { return unit_; }
  const std::string& default_toml() const { return default_; }
  std::string range_text() const;  // ">= 1", "in [0, 1)", "" (none)
  bool is_required() const { return required_; }

 private:
  friend class ConfigSchema;
  friend struct ConfigReader;
  enum class Kind { kInt, kUint, kFloat, kBool, kString, kStringList, kFloatList, kEnum, kMap, kCustom, kTableArray };
  Kind kind_ = Kind::kInt;
  std::string name_, type_, doc_, unit_, default_, note_;
  bool required_ = false;
  bool one_string_ok_ = false;
  bool has_lo_ = false, lo_open_ = false, has_hi_ = false, hi_open_ = false;
  double lo_ = 0, hi_ = 0;
  std::vector<std::string> choices_;          // kEnum, and kString with allowed values
  void* field_ = nullptr;
  std::function<Status(const ConfigValue&, const std::string& at)> custom_read_;
  std::function<std::string()> custom_write_;
  // kTableArray: element count, (re)declaration of element i into a schema, growth.
  std::function<size_t()> array_size_;
  std::function<void(class ConfigSchema&, size_t)> array_declare_;
  std::function<void()> array_push_;
  std::function<void()> array_clear_;
  std::function<std::string(class ConfigSchema&)> array_reference_;
};

class ConfigSchema {
 public:
  // `kind` names the file type in messages and the reference ("run config").
  explicit ConfigSchema(std::string kind, std::string prefix = "");
  ConfigSchema(const ConfigSchema&) = delete;
  ConfigSchema& operator=(const ConfigSchema&) = delete;
  ConfigSchema(ConfigSchema&&) = default;
  ~ConfigSchema();

  ConfigKey& add(const std::string& name, int64_t* field, std::string doc);
  ConfigKey& add(const std::string& name, uint64_t* field, std::string doc);
  ConfigKey& add(const std::string& name, double* field, std::string doc);
  ConfigKey& add(const std::string& name, bool* field, std::string doc);
  ConfigKey& add(const std::string& name, std::string* field, std::string doc);
  ConfigKey& add(const std::string& name, std::vector<std::string>* field, std::string doc);
  // An array of numbers; the key's range applies to every element.
  ConfigKey& add(const std::string& name, std::vector<double>* field, std::string doc);
  // A string limited to `choices`.
  ConfigKey& add_choice(const std::string& name, std::string* field, std::vector<std::string> choices,
                        std::string doc);
  // An enum stored as its enumerator index into `names` (enumerators 0, 1, ...).
  template <typename E>
  ConfigKey& add_enum(const std::string& name, E* field, std::vector<std::string> names, std::string doc) {
    static_assert(sizeof(E) == sizeof(int), "enum stored as int");
    return add_enum_index(name, reinterpret_cast<int*>(field), std::move(names), std::move(doc));
  }
  // A table of free keys to non-negative numbers ([weights] "pattern" = 0.3),
  // in file order. The range applies to every value.
  ConfigKey& add_map(const std::string& name, std::vector<std::pair<std::string, double>>* field, std::string doc);
  // Any other value shape: `read` converts (errors name `at` and the key),
  // `write` gives canonical TOML; `type` is the reference's description.
  ConfigKey& add_custom(const std::string& name, std::string type,
                        std::function<Status(const ConfigValue&, const std::string& at)> read,
                        std::function<std::string()> write, std::string doc);
  // [[name]] tables: each element is read by the keys `declare(schema, elem)` adds.
  template <typename T>
  ConfigKey& add_table_array(const std::string& name, std::vector<T>* vec,
                             std::function<void(ConfigSchema&, T&)> declare, std::string doc) {
    ConfigKey& k = add_table_array_impl(name, std::move(doc));
    k.array_size_ = [vec] { return vec->size(); };
    k.array_push_ = [vec] { vec->emplace_back(); };
    k.array_clear_ = [vec] { vec->clear(); };
    k.array_declare_ = [vec, declare](ConfigSchema& s, size_t i) { declare(s, (*vec)[i]); };
    k.array_reference_ = [declare](ConfigSchema& s) {
      T element;  // defaults of one element
      declare(s, element);
      return s.reference_markdown();
    };
    return k;
  }

  // Parses `text` (named `source` in messages), applies `overrides`
  // ("path=value": TOML value syntax, else a bare string; paths like
  // train.lr, input[0].path, weights."code/*"), and stores every value.
  // Origins of everything set go into `origins` (its source is set).
  Status load(const std::string& text, const std::string& source, const std::vector<std::string>& overrides,
              ConfigOrigins& origins);
  // Reads a file, then load().
  Status load_file(const std::string& path, const std::vector<std::string>& overrides, ConfigOrigins& origins);

  // Canonical TOML of the current values (every key, defaults included).
  std::string to_toml() const;
  // The reference section for this file type (Markdown table rows).
  std::string reference_markdown() const;

  // The string at `name` after overrides, before any checks (a key whose
  // value picks the defaults of the others, e.g. the GPU type); nullopt when
  // absent or not a string. Syntax errors are reported.
  static Result<std::optional<std::string>> peek_string(const std::string& text, const std::string& source,
                                                        const std::vector<std::string>& overrides,
                                                        const std::string& name);

  const std::string& kind() const { return kind_; }
  const std::vector<std::unique_ptr<ConfigKey>>& keys() const { return keys_; }

 private:
  struct Impl;
  ConfigKey& declare(const std::string& name, ConfigKey::Kind kind, void* field, std::string type, std::string doc);
  ConfigKey& add_enum_index(const std::string& name, int* field, std::vector<std::string> names, std::string doc);
  ConfigKey& add_table_array_impl(const std::string& name, std::string doc);
  std::string write_value(const ConfigKey& k) const;
  friend struct ConfigReader;
  const ConfigKey* find(std::string_view name) const;
  bool has_prefix(std::string_view prefix) const;  // some key lies under "prefix."
  std::string suggest(std::string_view name) const;
  std::string kind_, prefix_;
  std::vector<std::unique_ptr<ConfigKey>> keys_;
};

// Basic TOML string and float spellings used by canonical writers.
std::string toml_quote(std::string_view s);
std::string toml_double(double v);

}  // namespace mt
