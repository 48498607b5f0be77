// toml_schema.h — strict TOML loading for the planner's own files (cluster,
// layout, scaling law): every key is declared with its type and range and
// bound to a struct field; unknown tables or keys, wrong types, out-of-range
// and missing required values are errors naming the file, line and key.
// Overrides "section.key=value" (from --set) go through the same checks.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt::plan {

enum class Required { kNo, kYes };
enum class Lower { kInclusive, kExclusive };  // is the lower bound of a float range allowed?

class TomlSchema {
 public:
  // Integer in [lo, hi].
  void add_int(const std::string& section, const std::string& key, int64_t* dst, int64_t lo, int64_t hi,
               Required req = Required::kNo);
  // Float in [lo, hi] (or (lo, hi] with Lower::kExclusive); integers are accepted.
  void add_float(const std::string& section, const std::string& key, double* dst, double lo, double hi,
                 Lower lower = Lower::kInclusive, Required req = Required::kNo);
  // String; when `choices` is non-empty the value must be one of them.
  void add_string(const std::string& section, const std::string& key, std::string* dst,
                  std::vector<std::string> choices = {}, Required req = Required::kNo);
  void add_bool(const std::string& section, const std::string& key, bool* dst, Required req = Required::kNo);

  // Parses `text` (named `source` in messages) and stores every value.
  Status parse(const std::string& text, const std::string& source);
  // Applies "section.key=value" (TOML value syntax, or a bare string).
  Status apply_override(const std::string& assignment, const std::string& source);
  // Whether the file or an override gave `section.key`.
  bool was_set(const std::string& section, const std::string& key) const;
  // "file:line" where section.key was set, else the file name.
  std::string origin(const std::string& section, const std::string& key) const;
  // Checks that every Required::kYes key was given.
  Status check_required(const std::string& source) const;

  // Reads only section.key as a string, before the full parse (e.g. the GPU
  // type whose preset supplies the defaults). Empty when absent.
  static Result<std::string> peek_string(const std::string& text, const std::string& source,
                                         const std::string& section, const std::string& key);

 private:
  struct Key {
    std::string section, key;
    std::function<Status(const void* node, const std::string& at, const std::string& name)> read;
    Required req = Required::kNo;
  };
  const Key* find(const std::string& section, const std::string& key) const;
  std::string suggest(const std::string& section, const std::string& key) const;
  std::vector<Key> keys_;
  std::map<std::string, std::string> origins_;  // "section.key" -> "file:line"
};

// Reads a whole file; the error names it.
Result<std::string> read_text_file(const std::string& path);

}  // namespace mt::plan
