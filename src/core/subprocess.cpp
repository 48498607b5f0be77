// subprocess.cpp — fork/exec with everything the child needs (argv, envp,
// the log descriptor) prepared before fork, so the child only makes
// async-signal-safe calls before exec.
#include "core/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>

extern char** environ;

namespace mt {

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    kill();
    pid_ = o.pid_;
    group_ = o.group_;
    o.pid_ = -1;
  }
  return *this;
}

Child::~Child() { kill(); }

namespace {

// A program named without a slash is looked up on PATH here, before fork: the forked child of a threaded
// parent may only make async-signal-safe calls, so it execs a full path.
std::string on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > at ? dirs.substr(at, end - at) : ".";
    const std::string full = dir + "/" + program;
    if (::access(full.c_str(), X_OK) == 0) return full;
    at = end + 1;
  }
  return program;  // execve fails and the child says so
}

}  // namespace

Result<Child> Child::spawn(const ChildSpec& spec) {
  if (spec.argv.empty()) return Status::error("spawn: empty command");
  const int log = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return Status::errorf("{}: cannot open log: {}", spec.log_path, std::strerror(errno));
  int out = log;
  if (!spec.stdout_path.empty()) {
    out = ::open(spec.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
      const int err = errno;
      ::close(log);
      return Status::errorf("{}: cannot open: {}", spec.stdout_path, std::strerror(err));
    }
  }

  std::vector<std::string> env_text;
  {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq) env[std::string(*e, size_t(eq - *e))] = eq + 1;
    }
    for (const auto& [k, v] : spec.env) env[k] = v;
    for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  }
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env_text) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const std::string program = spec.exec_path.empty() ? on_path(spec.argv[0]) : spec.exec_path;
  // Written by the child when exec fails (only async-signal-safe calls after fork).
  const std::string exec_failed = "exec " + program + " failed: errno ";

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(log);
    if (out != log) ::close(out);
    return Status::errorf("{}: fork failed: {}", spec.argv[0], std::strerror(err));
  }
  if (pid == 0) {
    // Die with the parent; if it is already gone, do not start at all.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (spec.own_group) ::setpgid(0, 0);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execve(program.c_str(), argv.data(), envp.data());
    const int err = errno;
    char digits[16];
    int n = 0;
    for (int e = err; n == 0 || e > 0; e /= 10) digits[n++] = char('0' + e % 10);
    (void)!::write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    while (n > 0) (void)!::write(STDERR_FILENO, &digits[--n], 1);
    (void)!::write(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  ::close(log);
  if (out != log) ::close(out);
  if (spec.own_group) ::setpgid(pid, pid);  // also here: no race with the first kill()
  Child c;
  c.pid_ = pid;
  c.group_ = spec.own_group;
  return c;
}

bool Child::poll(int* exit_code) {
  if (pid_ < 0) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return false;
  if (r < 0) {
    *exit_code = 127;
  } else {
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_ = -1;
  return true;
}

void Child::terminate(double grace) {
  if (pid_ < 0) return;
  ::kill(group_ ? -pid_ : pid_, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
  int code = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (poll(&code)) return;
    ::usleep(20000);
  }
  kill();
}

void Child::kill() {
  if (pid_ < 0) return;
  ::kill(group_ ? -pid_ : pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

Result<std::string> self_executable() {
  std::string buf(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return Status::errorf("/proc/self/exe: {}", std::strerror(errno));
  buf.resize(size_t(n));
  return buf;
}

std::string file_tail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > std::streamoff(max_bytes) ? size - std::streamoff(max_bytes) : 0;
  in.seekg(from);
  std::string out(size_t(size - from), '\0');
  in.read(out.data(), std::streamsize(out.size()));
  return out;
}

}  // namespace mt
