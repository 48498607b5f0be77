// progress.h — the live progress line of long work. On a terminal it redraws
// one line in place (carriage return); otherwise it prints a plain line every
// `plain_every` updates so logs stay readable.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace mt {

class ProgressLine {
 public:
  explicit ProgressLine(std::FILE* out = stderr, int64_t plain_every = 10);
  ~ProgressLine();
  // `done` of `total` units finished; `text` is the rest of the line.
  void update(int64_t done, int64_t total, const std::string& text);
  void finish();  // ends the in-place line

  // "1h02m", "3m05s", "12s"
  static std::string format_eta(double seconds);

 private:
  std::FILE* out_;
  bool tty_;
  int64_t plain_every_, updates_ = 0;
  bool open_ = false;
};

}  // namespace mt
