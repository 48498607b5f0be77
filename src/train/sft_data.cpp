// sft_data.cpp — reading supervised examples (see sft_data.h).
#include "train/sft_data.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "train/task_file.h"

namespace mt {

namespace {

Status string_of(const nlohmann::json& j, const char* key, std::string& out, bool allow_empty = false) {
  if (!j.contains(key) || !j[key].is_string()) return Status::errorf("\"{}\": expected a string", key);
  out = j[key].get<std::string>();
  if (!allow_empty && out.empty()) return Status::errorf("\"{}\": empty", key);
  return Status::ok();
}

Status parse_example(const nlohmann::json& j, const TextCodec& codec, SftExample& ex) {
  const auto span = [&](const std::string& text, bool trained) { ex.spans.push_back({codec.encode(text), trained}); };
  if (j.contains("messages")) {
    if (!j["messages"].is_array() || j["messages"].empty())
      return Status::error("\"messages\": expected a non-empty array of {\"role\", \"content\"}");
    bool trained = false;
    for (size_t m = 0; m < j["messages"].size(); ++m) {
      const nlohmann::json& msg = j["messages"][m];
      if (!msg.is_object()) return Status::errorf("\"messages\"[{}]: expected an object", m);
      std::string role, content;
      if (Status s = string_of(msg, "role", role); !s.is_ok())
        return Status::errorf("\"messages\"[{}].{}", m, s.message());
      if (Status s = string_of(msg, "content", content, true); !s.is_ok())
        return Status::errorf("\"messages\"[{}].{}", m, s.message());
      if (role == "assistant") {
        span("Assistant:", false);
        span(" " + content + "\n", true);
        trained = true;
      } else if (role == "user" || role == "system") {
        span(std::string(role == "user" ? "User: " : "System: ") + content + "\n", false);
      } else {
        return Status::errorf("\"messages\"[{}].\"role\": \"{}\" is not system, user or assistant", m, role);
      }
    }
    if (!trained) return Status::error("\"messages\": no assistant turn to train on");
    return Status::ok();
  }
  if (!j.contains("prompt"))
    return Status::error("expected \"prompt\" with \"completion\" (or \"answer\", a task item), or \"messages\"");
  std::string prompt, completion;
  MT_RETURN_IF_ERROR(string_of(j, "prompt", prompt));
  if (j.contains("completion")) {
    MT_RETURN_IF_ERROR(string_of(j, "completion", completion));
  } else if (j.contains("answer") && j["answer"].is_string()) {
    MT_RETURN_IF_ERROR(string_of(j, "answer", completion));
    completion += "\n";
  } else {
    return Status::error("\"completion\": expected a string (or \"answer\", a task item)");
  }
  span(prompt, false);
  span(completion, true);
  return Status::ok();
}

}  // namespace

Result<std::vector<SftExample>> read_sft_examples(const std::string& path, const TextCodec& codec) {
  auto text = read_file(path, "supervised examples");
  if (!text) return text.status();
  return parse_sft_examples(path, text.value(), codec);
}

Result<std::vector<SftExample>> parse_sft_examples(const std::string& path, const std::string& text,
                                                   const TextCodec& codec) {
  std::vector<SftExample> out;
  MT_RETURN_IF_ERROR(for_each_task_line(path, text, [&](const nlohmann::json& j, int64_t line) {
    SftExample ex;
    if (Status s = parse_example(j, codec, ex); !s.is_ok()) return Status::errorf("{}:{}: {}", path, line, s.message());
    out.push_back(std::move(ex));
    return Status::ok();
  }));
  return out;
}

Result<std::unique_ptr<SftSource>> open_sft_source(const RunConfig& c) {
  auto codec = open_codec(c.data.sft_tokenizer);
  if (!codec) return Status::errorf("data.sft_tokenizer: {}", codec.status().message());
  auto train = read_sft_examples(c.data.sft, *codec.value());
  if (!train) return train.status();
  std::vector<SftExample> held;
  if (!c.data.sft_held_out.empty()) {
    auto h = read_sft_examples(c.data.sft_held_out, *codec.value());
    if (!h) return h.status();
    held = std::move(*h);
  }
  SftSourceOptions so;
  so.seq_len = c.train.seq_len;
  so.epochs = c.data.sft_epochs;
  so.seed = c.train.seed;
  so.separator = codec.value()->end_of_document();
  so.vocab_size = c.model.vocab_size;
  so.name = c.data.sft;
  return SftSource::open(std::move(*train), std::move(held), so);
}

}  // namespace mt
