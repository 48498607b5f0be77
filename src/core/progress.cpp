// progress.cpp — terminal detection and formatting.
#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

namespace mt {

ProgressLine::ProgressLine(std::FILE* out, int64_t plain_every)
    : out_(out), tty_(isatty(fileno(out)) != 0), plain_every_(plain_every < 1 ? 1 : plain_every) {}

ProgressLine::~ProgressLine() { finish(); }

std::string ProgressLine::format_eta(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = int64_t(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t % 3600) / 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

void ProgressLine::update(int64_t done, int64_t total, const std::string& text) {
  ++updates_;
  const std::string line = fmt::format("[{}/{}] {}", done, total, text);
  if (tty_) {
    fmt::print(out_, "\r\033[2K{}", line);
    std::fflush(out_);
    open_ = true;
  } else if (updates_ % plain_every_ == 0 || done == total || updates_ == 1) {
    fmt::print(out_, "{}\n", line);
    std::fflush(out_);
  }
}

void ProgressLine::finish() {
  if (tty_ && open_) {
    fmt::print(out_, "\n");
    std::fflush(out_);
  }
  open_ = false;
}

}  // namespace mt
