// pending_checkpoint.h — a checkpoint whose shard file is being written in
// the background (trainer_dist.cpp, write_checkpoint_files / finish_checkpoint).
#pragma once
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "train/trainer.h"

namespace mt {

struct Trainer::PendingCheckpoint {
  int64_t step = 0;
  std::string staging;
  nlohmann::json state;
  std::vector<float> copy;        // the snapshot the views point into
  std::vector<TensorView> views;
  std::future<Result<ShardFile>> write;
  double started = 0;
};

}  // namespace mt
