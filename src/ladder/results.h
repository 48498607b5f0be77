// results.h — the RESULTS file of a scaling ladder: one record per finished
// training run (size, tokens, compute, final loss, optional benchmark
// accuracies). Read from JSONL (one object a line, strict keys) or from a CSV
// table with named columns; docs/ladder.md defines both formats. Every error
// names FILE:LINE and the field, and nothing here aborts on bad input.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace mt::ladder {

// One training run, validated: every number is finite and positive.
struct Run {
  std::string name;                        // "name" field, or "line N" when absent
  std::string where;                       // "FILE:LINE", for messages about this run later on
  double active_params = 0;                // N_active: parameters used per token (= params for a dense model)
  double total_params = 0;                 // N_total >= N_active (= params for a dense model)
  double n_experts = 0;                    // routed experts per MoE layer; 0 when not given
  double tokens = 0;                       // D, training tokens
  double flops = 0;                        // C, training compute in FLOP; 6 N_active D when not given
  double loss = 0;                         // final loss L (nats per token)
  std::string budget;                      // isoFLOP group label; "" = group by `flops`
  std::map<std::string, double> accuracy;  // task -> accuracy in [0, 1]
};

// Reads PATH: ".csv" (any case) is read as CSV, everything else as JSONL.
Result<std::vector<Run>> load_results(const std::string& path);

// The two parsers over bytes in memory; `source` names the file in errors.
Result<std::vector<Run>> parse_results_jsonl(const std::string& text, const std::string& source);
Result<std::vector<Run>> parse_results_csv(const std::string& text, const std::string& source);

}  // namespace mt::ladder
