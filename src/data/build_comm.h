// build_comm.h — the one collective `data build` needs across ranks: every
// rank's bytes, in rank order, on every rank. The data layer stays free of
// MPI; the CLI adapts its MPI world (src/cli/cmd_data.cpp), and a single
// process is a world of one.
#pragma once
#include <string>
#include <vector>

namespace mt {

class BuildComm {
 public:
  virtual ~BuildComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `mine`, indexed by rank (collective; `what` names the stage
  // in a timeout message).
  virtual std::vector<std::string> allgather(const std::string& mine, const char* what) = 0;
};

class LocalBuildComm final : public BuildComm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> allgather(const std::string& mine, const char*) override { return {mine}; }
};

}  // namespace mt
