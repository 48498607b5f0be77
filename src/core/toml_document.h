// toml_document.h — parses a whole TOML document (toml++) into a table, or a
// Status naming "file:line:col" of the syntax error. Every strict loader
// (run config, planner schemas, data build config, mixture) starts here.
// Header-only: users link toml++ themselves; core does not depend on it.
#pragma once
#include <string>

#include <toml++/toml.h>

#include "core/status.h"

namespace mt {

inline Result<toml::table> parse_toml_document(const std::string& text, const std::string& source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status::errorf("{}:{}:{}: TOML syntax error: {}", source, e.source().begin.line,
                          e.source().begin.column, e.description());
  }
}

}  // namespace mt
