// slurm_cluster.h — a real one-node Slurm cluster for the tests (tests/slurm):
// munged, slurmctld and slurmd from Debian's packages, started by the test
// itself (no systemd: CI runs in a container) with every file under a
// temporary directory, free ports, a node shaped like this machine (what
// `slurmd -C` finds: CPUs, sockets, cores; RealMemory half of it) and a
// configuration that needs no cgroups (proctrack/linuxproc, task/none,
// jobacct_gather/none). The daemons run in the foreground as children of
// the test and die with it (PR_SET_PDEATHSIG) even if it crashes (a job
// step's slurmstepd is not their child and survives a test killed outright);
// the destructor cancels every job, stops the daemons and removes the
// directory unless the test failed (kept, its path printed, for the logs).
// Clients (sbatch, squeue, scontrol, srun) find the cluster through
// SLURM_CONF, which env() gives and run() sets. Header-only; POSIX.
#pragma once
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include "support/e2e.h"

namespace mt::e2e {

// A started background daemon: own process group, dies with the test.
class Daemon {
 public:
  Daemon() = default;
  Daemon(const std::vector<std::string>& argv, const std::string& log, const std::vector<std::string>& env) {
    detail::Argv a(argv);
    detail::Argv e = detail::make_env(env);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      setpgid(0, 0);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
      const int null = open("/dev/null", O_RDONLY);
      if (null >= 0) dup2(null, 0);
      execve(a.ptrs[0], a.ptrs.data(), e.ptrs.data());
      _exit(127);
    }
  }
  Daemon(Daemon&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  Daemon& operator=(Daemon&& o) noexcept {
    std::swap(pid_, o.pid_);
    return *this;
  }
  ~Daemon() { stop(); }
  // An exited daemon is reaped here and forgotten: stop() must never signal a reused pid.
  bool alive() {
    if (pid_ <= 0) return false;
    if (waitpid(pid_, nullptr, WNOHANG) == 0) return true;
    pid_ = -1;
    return false;
  }
  // SIGTERM, then SIGKILL after 5 s; reaped.
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    const double t0 = now_s();
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (now_s() - t0 > 5) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        break;
      }
      sleep_s(0.02);
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// A TCP port nobody listens on now (the kernel's choice for port 0).
inline int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class SlurmCluster {
 public:
  // Starts the daemons and waits (up to timeout_s) until the node is idle;
  // error() says what failed, with the daemons' logs.
  explicit SlurmCluster(double timeout_s = 60) {
    for (const char* tool : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch"})
      if (!fs::exists(tool)) {
        error_ = std::string(tool) +
                 " is missing: install munge, slurmctld, slurmd and slurm-client "
                 "(scripts/install-deps.sh --tests)";
        return;
      }
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    host_ = std::string(host).substr(0, std::string(host).find('.'));
    const std::string m = dir_ / "munge";
    fs::create_directories(m);
    fs::permissions(m, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    fs::create_directories(dir_ / "ctld");
    fs::create_directories(dir_ / "spool");
    {
      std::ifstream rnd("/dev/urandom", std::ios::binary);
      std::string key(1024, '\0');
      rnd.read(key.data(), 1024);
      write_file(m + "/munge.key", key);
      fs::permissions(m + "/munge.key", fs::perms::owner_read);
    }
    munged_ = Daemon(
        {"/usr/sbin/munged", "--foreground", "--force", "--socket=" + m + "/socket", "--key-file=" + m + "/munge.key",
         "--pid-file=" + m + "/pid", "--seed-file=" + m + "/seed", "--log-file=" + m + "/log"},
        dir_ / "munged.out", {});
    conf_ = dir_ / "slurm.conf";
    write_file(conf_, config(m + "/socket"));
    const std::vector<std::string> env = this->env();
    for (double t0 = now_s(); !fs::exists(m + "/socket"); sleep_s(0.05))
      if (now_s() - t0 > 10) {
        fail("munged did not create its socket within 10 s");
        return;
      }
    slurmctld_ = Daemon({"/usr/sbin/slurmctld", "-D", "-i", "-f", conf_}, dir_ / "slurmctld.out", env);
    slurmd_ = Daemon({"/usr/sbin/slurmd", "-D", "-f", conf_}, dir_ / "slurmd.out", env);
    // Up = the controller answers and the node is idle (it registered).
    for (double t0 = now_s();; sleep_s(0.2)) {
      const auto r = run({"/usr/bin/sinfo", "-h", "-N", "-o", "%T"}, 10);
      if (r.exit_code == 0 && trimmed(r.out) == "idle") break;
      if (now_s() - t0 > timeout_s) {
        fail("the node was not idle within " + std::to_string(int(timeout_s)) + " s (sinfo: " + trimmed(r.out + r.err) +
             ")");
        return;
      }
    }
  }
  ~SlurmCluster() {
    if (error_.empty() || slurmctld_.alive()) {
      // Jobs first: their steps outlive slurmd otherwise.
      run({"/usr/bin/scancel", "--full", "--user=root"}, 10);
      for (double t0 = now_s(); now_s() - t0 < 20; sleep_s(0.2)) {
        const auto q = run({"/usr/bin/squeue", "-h", "-o", "%i"}, 10);
        if (q.exit_code != 0 || trimmed(q.out).empty()) break;
      }
    }
    slurmd_.stop();
    slurmctld_.stop();
    munged_.stop();
    if (::testing::Test::HasFailure() || !error_.empty()) std::cerr << "[slurm] daemon logs in " << dir_.path() << "\n";
  }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // "" when the cluster is up; otherwise what failed and the daemons' logs.
  const std::string& error() const { return error_; }
  const std::string& host() const { return host_; }
  std::vector<std::string> env() const { return {"SLURM_CONF=" + conf_}; }
  // A client command (sbatch, squeue, ...) against this cluster.
  ProcessResult run(const std::vector<std::string>& argv, double timeout_s = 60,
                    std::vector<std::string> extra_env = {}) const {
    extra_env.push_back("SLURM_CONF=" + conf_);
    return run_process(argv, timeout_s, extra_env);
  }
  // `sbatch --parsable ARGS...`: the job id, or "" (the failure in *err).
  std::string sbatch(const std::vector<std::string>& args, std::string* err = nullptr,
                     const std::vector<std::string>& extra_env = {}) const {
    std::vector<std::string> argv = {"/usr/bin/sbatch", "--parsable"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run(argv, 30, extra_env);
    if (r.exit_code != 0) {
      if (err) *err = r.err + r.out;
      return "";
    }
    return trimmed(r.out.substr(0, r.out.find(';')));
  }
  // `scontrol show job ID` as KEY -> value ("JobState", "ExitCode", "Restarts", ...).
  std::map<std::string, std::string> job(const std::string& id) const {
    std::map<std::string, std::string> out;
    const auto r = run({"/usr/bin/scontrol", "-o", "show", "job", id}, 10);
    static const std::regex kv(R"((\w+)=(\S*))");
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), kv), end; it != end; ++it)
      out[(*it)[1].str()] = (*it)[2].str();
    return out;
  }
  // Waits until every job of `ids` (an array's tasks included) has left the
  // queue; false on timeout.
  bool wait_gone(const std::string& ids, double timeout_s) const {
    for (double t0 = now_s(); now_s() - t0 < timeout_s; sleep_s(0.25)) {
      const auto q = run({"/usr/bin/squeue", "-h", "-j", ids, "-o", "%i"}, 10);
      if (q.exit_code == 0 && trimmed(q.out).empty()) return true;
    }
    return false;
  }
  std::string logs() const {
    std::string s;
    for (const char* f : {"slurmctld.out", "slurmd.out", "munged.out"})
      s += std::string("--- ") + f + " (tail) ---\n" + file_tail(dir_ / f);
    return s;
  }

 private:
  static std::string file_tail(const std::string& path) {
    const std::string t = read_file(path);
    return t.size() > 3000 ? t.substr(t.size() - 3000) : t;
  }
  void fail(const std::string& what) { error_ = what + "\n" + logs(); }

  // The node as `slurmd -C` sees this machine, with half its memory (so
  // RealMemory never exceeds what is free); requeued jobs may start again
  // after 5 s (cred_expire; the default 120 s would dominate the tests) and
  // the scheduler looks every second.
  std::string config(const std::string& munge_socket) const {
    const auto c = run_process({"/usr/sbin/slurmd", "-C"}, 30);
    std::string node = c.out.substr(0, c.out.find('\n'));
    std::smatch mem;
    if (std::regex_search(node, mem, std::regex(R"(RealMemory=(\d+))")))
      node = std::regex_replace(node, std::regex(R"(RealMemory=\d+)"),
                                "RealMemory=" + std::to_string(std::stoll(mem[1].str()) / 2));
    node = std::regex_replace(node, std::regex(R"(^NodeName=\S+)"), "NodeName=" + host_ + " NodeAddr=127.0.0.1");
    const std::string d = dir_.path();
    return "ClusterName=moetrain-test\n"
           "SlurmctldHost=" +
           host_ + "(127.0.0.1)\n" + "SlurmctldPort=" + std::to_string(free_port()) + "\n" +
           "SlurmdPort=" + std::to_string(free_port()) + "\n" +
           "SlurmUser=root\nSlurmdUser=root\n"
           "AuthType=auth/munge\nCredType=cred/munge\n"
           "AuthInfo=socket=" +
           munge_socket + ",cred_expire=5\n" + "StateSaveLocation=" + d + "/ctld\nSlurmdSpoolDir=" + d + "/spool\n" +
           "SlurmctldPidFile=" + d + "/ctld/slurmctld.pid\nSlurmdPidFile=" + d + "/spool/slurmd.pid\n" +
           "SlurmctldLogFile=" + d + "/slurmctld.log\nSlurmdLogFile=" + d + "/slurmd.log\n" +
           "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
           "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
           "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
           "SchedulerType=sched/backfill\nSchedulerParameters=sched_interval=1,bf_interval=1\n"
           "MpiDefault=none\nReturnToService=2\nJobRequeue=1\nKillWait=30\nMinJobAge=600\n"
           "SlurmdTimeout=300\nInactiveLimit=0\n" +
           node + " State=UNKNOWN\n" + "PartitionName=test Nodes=" + host_ +
           " Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO\n";
  }

  // Short (/tmp/mt-slurm-XXXXXX): slurmstepd's sockets in the spool must fit
  // a Unix socket path (108 bytes), which a test's TempDir name can exceed.
  struct ShortDir {
    std::string path_;
    ShortDir() {
      std::string t = "/tmp/mt-slurm-XXXXXX";
      if (mkdtemp(t.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << t;
      path_ = t;
      fs::permissions(path_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);  // munged's socket
    }
    ~ShortDir() {
      if (::testing::Test::HasFailure()) return;  // kept for inspection (the cluster prints its path)
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }
  };
  ShortDir dir_;
  std::string host_, conf_, error_;
  Daemon munged_, slurmctld_, slurmd_;
};

}  // namespace mt::e2e
