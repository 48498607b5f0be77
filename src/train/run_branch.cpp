// run_branch.cpp — see run_branch.h.
#include "train/run_branch.h"

#include <filesystem>

#include "ckpt/checkpoint.h"
#include "ckpt/manifest.h"
#include "core/file_io.h"
#include "rundir/metrics_log.h"
#include "rundir/run_dir.h"

namespace mt {

namespace fs = std::filesystem;

Result<RunBranch> branch_run(const std::string& from, const std::string& to_run_dir) {
  auto ckpt = resolve_checkpoint_dir(from);
  if (!ckpt) return ckpt.status();
  MT_RETURN_IF_ERROR(verify_checkpoint(ckpt.value()));
  if (run_dir_in_use(to_run_dir))
    return Status::errorf("{}: already holds a run; a branch starts in a new directory", to_run_dir);
  const std::string manifest_path = ckpt.value() + "/" + kManifestFileName;
  auto text = read_file(manifest_path, "checkpoint manifest");
  if (!text) return text.status();
  auto manifest = decode_manifest(text.value(), manifest_path);
  if (!manifest) return manifest.status();
  const int64_t step = manifest.value().step;

  const std::string tmp = to_run_dir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);  // a branch killed half-way
  const std::string ckpt_copy = run_checkpoints_dir(tmp) + "/" + checkpoint_dir_name(step);
  fs::create_directories(ckpt_copy, ec);
  if (!ec) fs::copy(ckpt.value(), ckpt_copy, fs::copy_options::recursive, ec);
  if (ec) return Status::errorf("{}: cannot copy {}: {}", tmp, ckpt.value(), ec.message());
  // The config the checkpoint was written under: the source run's
  // config.toml may have moved on since (a later legitimate resume).
  MT_RETURN_IF_ERROR(save_run_config(tmp, manifest.value().config_toml));
  // The metrics so far, when the checkpoint sits in a run directory: the
  // branch's curves then start at step 0 as the run's did.
  const fs::path parent = fs::path(ckpt.value()).parent_path();
  if (parent.filename() == "checkpoints") {
    const std::string source_run = parent.parent_path().string();
    if (fs::exists(source_run + "/metrics.jsonl")) MT_RETURN_IF_ERROR(copy_metrics_through(source_run, tmp, step));
  }
  fs::rename(tmp, to_run_dir, ec);  // over an empty directory too (rename(2))
  if (ec) return Status::errorf("{}: cannot rename {} into place: {}", to_run_dir, tmp, ec.message());
  return RunBranch{ckpt.value(), step};
}

}  // namespace mt
