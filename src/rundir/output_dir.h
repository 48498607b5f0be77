// output_dir.h — an output directory holds the results of one
// configuration of one command (ladder runs, mixture searches, exports,
// imports; run directories follow the same rule through run_dir.h). The
// first invocation stamps it (moetrain-owner.json: the command and the
// resolved configuration as flat "key = value" pairs); a later invocation of
// the same command and configuration continues from what is there; any
// other is refused before it writes anything, naming what differs, unless
// the old directory is moved aside (renamed to DIR.prev-N, never deleted).
#pragma once
#include <map>
#include <string>

#include "core/status.h"

namespace mt {

// Canonical TOML (as to_toml writes it) as flat pairs "section.key" ->
// "value"; arrays of tables are numbered ("rung.0.name"), and every key gets
// `prefix` in front ("r1." for a rung's run config).
std::map<std::string, std::string> flatten_toml(const std::string& text, const std::string& prefix = "");

// "  KEY = OLD -> NEW" lines for every key that differs ("(absent)" where one
// side lacks it); "" when equal.
std::string describe_differences(const std::map<std::string, std::string>& was,
                                 const std::map<std::string, std::string>& now);

struct OutputOwner {
  std::string command;                        // "ladder run", "mix search", "export", ...
  std::map<std::string, std::string> config;  // what decides every result: compared in full
  // The results of separate runs (a ladder's rungs, a search's proxies), each
  // compared only where both invocations have it: parts may be added (a new
  // rung) or dropped, and the stamp keeps every part the directory holds.
  std::map<std::string, std::map<std::string, std::string>> parts;
};

enum class OutputDirMode {
  kContinue,   // absent or empty: claim it; the same owner: continue; another: refused
  kMoveAside,  // another owner's (or an unstamped, non-empty) directory is renamed to DIR.prev-N first
};

// The stamp's path in `dir`.
std::string owner_stamp_path(const std::string& dir);

// Claims `dir` for `owner` (creating it and writing the stamp) or refuses.
// Returns where a previous directory went under kMoveAside ("" if nothing
// moved). A refusal is an error whose message names the directory, the
// command or the keys that differ, and the flags that resolve it.
Result<std::string> claim_output_dir(const std::string& dir, const OutputOwner& owner, OutputDirMode mode);

// Renames `dir` to the first free DIR.prev-N; returns the new name.
Result<std::string> move_aside(const std::string& dir);

}  // namespace mt
