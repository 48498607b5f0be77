// text_set.cpp — see text_set.h.
#include "train/text_set.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "data/ingest.h"
#include "train/inference_model.h"

namespace mt {

std::string text_set_name(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  return file.substr(0, file.find('.'));
}

Result<TextSet> read_text_set(const std::string& path, const TextCodec& codec, int64_t seq_len) {
  if (!std::filesystem::is_regular_file(path))
    return Status::errorf("{}: no such text set (a JSONL file of {{\"text\": ...}} records, or a text file)", path);
  InputSpec in;
  in.path = path;  // auto: *.jsonl[.gz|.zst] is JSONL, anything else one text document
  std::vector<Document> docs;
  IngestStats stats;
  MT_RETURN_IF_ERROR(ingest({in}, CodeOptions{}, docs, stats));
  TextSet s;
  s.name = text_set_name(path);
  s.path = path;
  s.documents = int64_t(docs.size());
  const int32_t eod = codec.end_of_document();
  for (const Document& d : docs) {
    const std::vector<int32_t> ids = codec.encode(d.text);
    s.tokens.insert(s.tokens.end(), ids.begin(), ids.end());
    s.tokens.push_back(eod);
  }
  if (int64_t(s.tokens.size()) < seq_len + 1)
    return Status::errorf("{}: {} tokens in {} documents, fewer than one window of seq_len + 1 = {}", path,
                          s.tokens.size(), s.documents, seq_len + 1);
  return s;
}

std::vector<SetWindow> set_windows(int64_t n_tokens, int64_t seq_len) {
  std::vector<SetWindow> w;
  if (n_tokens < seq_len + 1) return w;
  int64_t start = 0;
  for (; start + seq_len + 1 <= n_tokens; start += seq_len) w.push_back({start, 0});
  // Predicted so far: tokens[1, start]; the rest, tokens[start + 1, end), by a
  // window ending at the end of the tokens.
  const int64_t predicted_to = start;  // the last predicted index
  if (predicted_to < n_tokens - 1) {
    const int64_t last = n_tokens - seq_len - 1;
    w.push_back({last, predicted_to - last});
  }
  return w;
}

double SetScore::bits_per_byte() const {
  return bytes > 0 ? loss * double(tokens) / (double(bytes) * std::log(2.0)) : NAN;
}

SetScore score_text_set(const TextSet& set, int64_t batch, int64_t seq_len, const TextCodec& codec,
                        const std::function<const std::vector<float>&(const int32_t* tokens)>& token_losses,
                        const std::function<void(int64_t, int64_t)>& progress) {
  const std::vector<SetWindow> windows = set_windows(int64_t(set.tokens.size()), seq_len);
  const int64_t row = seq_len + 1;
  std::vector<int32_t> rows(size_t(batch * row));
  SetScore s;
  s.windows = int64_t(windows.size());
  double sum = 0;
  for (size_t first = 0; first < windows.size(); first += size_t(batch)) {
    const int64_t n = std::min<int64_t>(batch, int64_t(windows.size() - first));
    for (int64_t b = 0; b < batch; ++b) {  // rows past n: copies of window 0, not counted
      const SetWindow& w = windows[b < n ? first + size_t(b) : 0];
      std::copy_n(set.tokens.begin() + w.start, row, rows.begin() + b * row);
    }
    const std::vector<float>& losses = token_losses(rows.data());
    for (int64_t b = 0; b < n; ++b) {
      const SetWindow& w = windows[first + size_t(b)];
      for (int64_t t = w.first_counted; t < seq_len; ++t) sum += double(losses[size_t(b * seq_len + t)]);
      const int64_t counted = seq_len - w.first_counted;
      s.tokens += counted;
      s.bytes += int64_t(codec.decode(set.tokens.data() + w.start + 1 + w.first_counted, counted).size());
    }
    if (progress) progress(int64_t(first) + n, int64_t(windows.size()));
  }
  s.loss = s.tokens > 0 ? sum / double(s.tokens) : NAN;
  return s;
}

}  // namespace mt
