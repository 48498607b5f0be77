// events.h — RUN_DIR/events.jsonl: what happened to a run besides its
// steps (spikes and rollbacks, supervisor launches, failures, quarantines),
// one JSON object a line with a wall-clock timestamp. Appended, never
// rewritten: it is a log, so a resumed run may repeat an event it had
// already written before it was killed.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace mt {

// Adds "time" (seconds since the epoch) and "utc" to `event` and appends it;
// failures to write are reported on stderr and otherwise ignored (an event
// log must never stop training).
void append_event(const std::string& run_dir, nlohmann::json event);

}  // namespace mt
