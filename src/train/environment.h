// environment.h — agentic episodes' environments: what answers a model's
// tool calls while it generates, and whether an episode reached its goal.
//
// Tool-call syntax, text the pipeline's tokenizers keep whole (each is a
// user-defined piece of every tokenizer `moetrain tokenizer train` / `data
// build` trains, as "\n" is; the byte tokenizer spells them in bytes):
//   <tool>REQUEST</tool>     the model asks (it writes these tokens)
//   <result>ANSWER</result>  the environment answers (appended to the
//                            context; no loss on them: core/token_flags.h)
// An episode is a completion with any number of calls; its final answer is
// the text after the last "</result>" (train/verifier.h judges it), and the
// environment may add a goal of its own (a state reached).
//
// Environments (an item's "env" field; a family's default):
//   calculator  REQUEST is an integer expression (+ - * / with parentheses,
//               / truncating); ANSWER its value, or "error"
//   kv          a key-value store the item's "state" fills ("k1=5 k2=9"):
//               "get KEY" -> the value or "missing", "set KEY VALUE" -> "ok";
//               the goal: the item's "goal" ("k3=19") holds at the end
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace mt {

inline constexpr std::string_view kToolOpen = "<tool>", kToolClose = "</tool>";
inline constexpr std::string_view kResultOpen = "<result>", kResultClose = "</result>";

class Environment {
 public:
  virtual ~Environment() = default;
  // The answer to one request (the text between <tool> and </tool>).
  virtual std::string call(std::string_view request) = 0;
  // Whether the episode's state meets the environment's goal (true when it has none).
  virtual bool goal_met() const { return true; }
};

// The environment named `env` for one episode, with the item's state and
// goal; errors name what is wrong ("env", "state", "goal").
Result<std::unique_ptr<Environment>> make_environment(const std::string& env, const std::string& state,
                                                      const std::string& goal);
// Whether `env` names an environment ("" = none: a single-turn item).
bool known_environment(const std::string& env);

// The integer value of an expression of + - * / and parentheses, or nothing
// (malformed, division by zero, overflow of int64).
std::optional<int64_t> evaluate_expression(std::string_view expr);

// The request of a call the text ends with ("... <tool>REQUEST</tool>"), or
// nothing when the text does not end with a complete call.
std::optional<std::string> pending_call(std::string_view text);
// The episode's final answer: the text after the last "</result>" (all of it without one).
std::string_view final_answer(std::string_view completion);
// Calls the text makes (occurrences of "<tool>").
int64_t count_calls(std::string_view text);

}  // namespace mt
