// events_log.h — RUN_DIR/events.jsonl: what happened to a run besides its
// steps (starts, spikes and rollbacks, checkpoint commits, supervisor
// launches, failures, quarantines), one JSON object a line with a wall-clock
// timestamp. Appended, never rewritten: it is a log, so a resumed run may
// repeat an event it had already written before it was killed.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file_system.h"

namespace mt {

std::string events_path(const std::string& run_dir);  // RUN_DIR/events.jsonl

// Adds "time" (seconds since the epoch) and "utc" to `event` and appends it
// as one line; failures to write are reported on stderr and otherwise
// ignored (an event log must never stop training). run_dir "" = none.
void append_event(const std::string& run_dir, nlohmann::json event, FileSystem& fs = default_file_system());

// Every event of RUN_DIR/events.jsonl (objects with an "event" and a
// "time"), in file order; `kind` non-empty keeps only that kind. Lines that
// do not parse (a torn last line after a crash) are left out.
std::vector<nlohmann::json> read_events(const std::string& run_dir, const std::string& kind = "");

}  // namespace mt
