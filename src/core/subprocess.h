// subprocess.h — child processes for orchestration (ladder rungs, mixture
// proxies): each is an ordinary `moetrain` command run with its output in a
// log file. A child dies with its parent (PR_SET_PDEATHSIG), so a killed
// ladder or search leaves no orphan training behind to race its restart.
#pragma once
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace mt {

struct ChildSpec {
  std::vector<std::string> argv;                            // argv[0] is the program path
  std::vector<std::pair<std::string, std::string>> env;     // set (or replaced) in the child's environment
  std::string log_path;                                     // stdout and stderr appended here
  std::string stdout_path;  // "" = stdout to the log too; else stdout alone written here (truncated), e.g. a --json
  bool own_group = false;   // a process group of its own (kill() then ends everything it started)
  // What is executed ("" = argv[0]). kSameBinary runs the very image the
  // parent runs, even after its file was rebuilt or deleted: a search's or
  // ladder's children never mix two builds, and a rebuild mid-run costs
  // nothing (argv[0] still names the path, for ps and the logs).
  std::string exec_path;
  static constexpr const char* kSameBinary = "/proc/self/exe";  // read in the forked child: the parent's image
};

class Child {
 public:
  Child() = default;
  Child(Child&& o) noexcept : pid_(o.pid_), group_(o.group_) { o.pid_ = -1; }
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();  // kills and reaps a child still running

  // Starts the child; errors (log file, fork) name what failed.
  static Result<Child> spawn(const ChildSpec& spec);

  // True once the child has exited; `exit_code` is its status, or 128 + the
  // signal that ended it. Never blocks.
  bool poll(int* exit_code);
  // SIGKILL (the whole group with own_group) and reap.
  void kill();
  // SIGTERM (to the group with own_group), then SIGKILL after `grace` seconds.
  void terminate(double grace);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool group_ = false;
};

// Path of the running executable (/proc/self/exe), for re-invoking moetrain.
Result<std::string> self_executable();

// The last `max_bytes` of a file, for error messages about a failed child.
std::string file_tail(const std::string& path, size_t max_bytes = 2000);

}  // namespace mt
