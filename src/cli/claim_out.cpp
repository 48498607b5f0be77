// claim_out.cpp — see claim_out.h.
#include "cli/claim_out.h"

#include <fmt/format.h>

namespace mt {

std::optional<ExitCode> claim_out(const std::string& cmd, const std::string& dir, const OutputOwner& owner,
                                  bool move_aside) {
  auto moved = claim_output_dir(dir, owner, move_aside ? OutputDirMode::kMoveAside : OutputDirMode::kContinue);
  if (!moved) return fail(cmd, moved.status(), ExitCode::kUsage);
  if (!moved.value().empty()) fmt::print(stderr, "# moved the previous {} aside to {}\n", dir, moved.value());
  return std::nullopt;
}

}  // namespace mt
