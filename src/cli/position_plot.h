// position_plot.h — `moetrain eval --positions --plot FILE.svg`: the held-out
// loss against the tokens of context before each token, one line for every
// evaluated bucket together and one per bucket (the eight with the most
// tokens), on a log axis of position, and the same tokens scored with
// halving context (eval's context_loss, over every bucket). A model that uses
// its context has lines that keep falling to the right; the trained length
// is marked.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace mt {

// held_out: eval's "held_out" JSON (its position_loss and bucket_position_loss bins, and context_loss).
std::string position_loss_svg(const nlohmann::json& held_out, int64_t trained_seq_len, const std::string& title);

}  // namespace mt
